import type { Bead } from '../shared/dto/beads.js';
import type { CityInfo } from '../shared/dto/cities.js';
import { fields, paint, table } from './_output.js';
import type { Column } from './_types.js';

// How a resource more than one command shows is shown to people: its table columns, its fields.

/** A city as listed, with what its own controller says when that matters to a person (suspended). */
export type ListedCity = CityInfo & { suspended?: boolean };

export const CITY_COLUMNS: Column<ListedCity>[] = [
  { header: 'NAME', value: (c) => c.name, kind: 'id' },
  {
    header: 'STATUS',
    value: (c) => (c.running ? (c.suspended ? 'suspended' : 'running') : (c.status ?? 'unknown')),
    kind: 'status',
  },
  { header: 'PID', value: (c) => c.pid },
  { header: 'PATH', value: (c) => c.path, kind: 'text' },
  { header: 'ERROR', value: (c) => c.error, kind: 'text' },
];

export const BEAD_COLUMNS: Column<Bead>[] = [
  { header: 'ID', value: (b) => b.id, kind: 'id' },
  { header: 'STATUS', value: (b) => b.status, kind: 'status' },
  { header: 'TYPE', value: (b) => b.issue_type },
  { header: 'PRI', value: (b) => b.priority },
  { header: 'ASSIGNEE', value: (b) => b.assignee, kind: 'id' },
  { header: 'LABELS', value: (b) => b.labels?.join(','), kind: 'text' },
  { header: 'TITLE', value: (b) => b.title, kind: 'text' },
];

export function beadTable(beads: Bead[]): void {
  table(BEAD_COLUMNS, beads);
}

function metaText(metadata: Record<string, string> | undefined): string | undefined {
  const entries = Object.entries(metadata ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(', ') : undefined;
}

/** One bead, every field it has. */
export function beadFields(b: Bead): void {
  fields([
    ['ID', b.id],
    ['Title', b.title],
    ['Status', b.status],
    ['Type', b.issue_type],
    ['Priority', b.priority],
    ['Assignee', b.assignee],
    ['Labels', b.labels?.join(', ')],
    ['Parent', b.parent],
    ['Depends on', (b.dependencies ?? []).map((d) => `${d.depends_on_id} (${d.type})`).join(', ')],
    ['Blocked', b.is_blocked ? 'yes' : undefined],
    ['Metadata', metaText(b.metadata)],
    ['Deferred until', b.defer_until],
    ['Created', b.created_at],
    ['Updated', b.updated_at],
    ['Description', b.description],
  ]);
}

/** One turn of a conversation (a session's, an agent's) for people: its role, coloured, then its text. */
export function turnLine(turn: { role: string; text: string }, stream: NodeJS.WriteStream = process.stdout): string {
  const colours: Record<string, 'cyan' | 'green' | 'yellow' | 'dim'> = {
    user: 'cyan',
    assistant: 'green',
    tool: 'yellow',
    system: 'dim',
  };
  const who = paint(`${turn.role}:`, colours[turn.role], stream);
  return `${who} ${turn.text}`;
}

/** A session's model, options, context and tokens, as `show` lines (absent ones left out by `fields`). */
export function modelFields(s: {
  model?: string;
  options?: Record<string, string>;
  context_pct?: number;
  context_tokens?: number;
  context_window?: number;
  usage?: { turns: number; input_tokens: number; output_tokens: number; cache_read_tokens: number };
}): [string, string | undefined][] {
  const options = Object.entries(s.options ?? {}).map(([k, v]) => `${k}=${v}`);
  let context: string | undefined;
  if (s.context_pct !== undefined) {
    context = `${s.context_pct}% (${s.context_tokens !== undefined ? `${s.context_tokens} of ` : 'of '}${s.context_window} tokens)`;
  } else if (s.context_tokens !== undefined) context = `${s.context_tokens} tokens`;
  const u = s.usage;
  return [
    ['Model', s.model],
    ['Options', options.length ? options.join(' ') : undefined],
    ['Context', context],
    [
      'Tokens',
      u && `${u.input_tokens} in, ${u.output_tokens} out, ${u.cache_read_tokens} cache read (${u.turns} turns)`,
    ],
  ];
}
