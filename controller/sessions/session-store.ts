import { join } from 'node:path';
import type { Bead } from '../../shared/dto/beads.js';
import type { SessionState } from '../../shared/dto/sessions.js';
import type { BeadStore } from '../beads/bead-store.js';
import type { SessionUsage } from '../usage/context-usage.js';
import type { WorktreeFields } from '../worktrees/session-worktrees.js';

/** What a session keeps in its bead (metadata, strings; `compactions` read back as a number), so that it outlives its controller. */
export interface SessionRecord extends WorktreeFields {
  id: string;
  title: string;
  state: SessionState;
  /** The agent or provider it was created from. */
  template: string;
  kind: 'agent' | 'provider';
  provider: string;
  session_name: string;
  alias?: string;
  work_dir: string;
  created_at: string;
  reason?: string;
  permission_mode?: string;
  /** The provider's own conversation id, once the program said it: a wake resumes it. */
  provider_session_key?: string;
  last_active?: string;
  /** How many times its program compacted its conversation (Claude Code's `compact_boundary`). */
  compactions?: number;
  /** The create request still waiting for its result (a controller restart in between finishes it). */
  create_request?: string;
  /** An agent's session: the fingerprint of the agent's configuration it was started from. */
  config_hash?: string;
  /** `tick`: the controller started it for its agent and may stop it (scale-down); otherwise a person did. */
  managed?: string;
  /**
   * `tick`: the tick suspended it with its agent (or city, or rig), and wakes it once they are resumed; unset
   * when a person suspended it. Cleared when it leaves `suspended`.
   */
  suspended_by?: string;
  /** The options it was created with (over its agent's and provider's `option_defaults`). */
  options?: Record<string, string>;
  /** What its turns used and the model they ran on, as its provider reported them. */
  usage?: SessionUsage;
  /** The `[[host]]` its programs run on, placed when it was created; absent: this machine (`local`). */
  host?: string;
  /** Lost: when its program on its host is certainly gone; the beads it holds wait for it (`session.lost`). */
  lost_until?: string;
}

/** The directory its program works in: its place in its own worktree, else its work dir. */
export function programDir(record: SessionRecord): string {
  if (!record.worktree) return record.work_dir;
  return record.worktree_subdir ? join(record.worktree, record.worktree_subdir) : record.worktree;
}

const OPTIONAL: (keyof SessionRecord)[] = [
  'alias',
  'reason',
  'permission_mode',
  'provider_session_key',
  'last_active',
  'create_request',
  'config_hash',
  'managed',
  'suspended_by',
  'lost_until',
  'worktree',
  'branch',
  'base',
  'worktree_repo',
  'worktree_subdir',
  'host',
];

/** Fields kept as JSON in their metadata value. */
const JSON_FIELDS = new Set<string>(['options', 'usage']);

/** Sessions live in the bead store as beads of type `session`; their fields are metadata. */
export class SessionStore {
  constructor(private readonly beads: BeadStore) {}

  /** A new session's record; `more` adds fields that follow from its session name (its worktree). */
  create(
    fields: Omit<SessionRecord, 'id' | 'created_at' | 'session_name'>,
    nameOf: (id: string) => string,
    more?: (sessionName: string) => Partial<SessionRecord>,
  ): SessionRecord {
    const bead = this.beads.create({ title: fields.title, type: 'session', metadata: metadataOf(fields) });
    const record = fromBead(bead);
    record.session_name = nameOf(bead.id);
    const added = more?.(record.session_name) ?? {};
    Object.assign(record, added);
    this.beads.update(bead.id, { metadata: { session_name: record.session_name, ...metadataOf(added) } });
    return record;
  }

  get(id: string): SessionRecord | undefined {
    const bead = this.beads.get(id);
    return bead?.issue_type === 'session' ? fromBead(bead) : undefined;
  }

  /** Saves changed fields (an empty or undefined optional field is removed); closing closes the bead too. */
  save(record: SessionRecord, changed: Partial<SessionRecord>): void {
    const metadata: Record<string, string> = {};
    for (const [key, value] of Object.entries(changed)) {
      if (key === 'id' || key === 'title') continue;
      metadata[key] = value === undefined ? '' : metadataValue(key, value);
    }
    this.beads.update(record.id, {
      ...(changed.title !== undefined ? { title: changed.title } : {}),
      ...(changed.state === 'closed' ? { status: 'closed' } : {}),
      metadata,
    });
  }

  delete(id: string): void {
    this.beads.delete(id);
  }

  /** Every session not closed (what a controller takes charge of when it starts). */
  open(): SessionRecord[] {
    const records: SessionRecord[] = [];
    let before: string | undefined;
    for (;;) {
      const page = this.beads.list({ type: 'session', limit: 1000, before });
      records.push(...page.items.map(fromBead));
      if (!page.more) break;
      before = page.items.at(-1)!.id;
    }
    return records.reverse();
  }

  /** Sessions in pages, newest first: open ones, or closed ones too. */
  page(query: { includeClosed: boolean; limit: number; before?: string; metadata?: Record<string, string> }): {
    items: SessionRecord[];
    total: number;
    more: boolean;
  } {
    const page = this.beads.list({
      type: 'session',
      includeClosed: query.includeClosed,
      limit: query.limit,
      before: query.before,
      metadata: query.metadata,
    });
    return { items: page.items.map(fromBead), total: page.total, more: page.more };
  }

  /** A session (closed or not) by alias or session name. */
  findByName(name: string): SessionRecord | undefined {
    for (const key of ['alias', 'session_name']) {
      const page = this.beads.list({ type: 'session', includeClosed: true, limit: 1, metadata: { [key]: name } });
      if (page.items[0]) return fromBead(page.items[0]);
    }
    return undefined;
  }
}

function metadataOf(fields: Partial<SessionRecord>): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'id' || key === 'title' || value === undefined) continue;
    metadata[key] = metadataValue(key, value);
  }
  return metadata;
}

function metadataValue(key: string, value: unknown): string {
  return JSON_FIELDS.has(key) ? JSON.stringify(value) : String(value);
}

function fromBead(bead: Bead): SessionRecord {
  const m = bead.metadata ?? {};
  const record: SessionRecord = {
    id: bead.id,
    title: bead.title,
    state: (bead.status === 'closed' ? 'closed' : (m.state ?? 'start-pending')) as SessionState,
    template: m.template ?? '',
    kind: m.kind === 'agent' ? 'agent' : 'provider',
    provider: m.provider ?? '',
    session_name: m.session_name ?? bead.id,
    work_dir: m.work_dir ?? '',
    created_at: bead.created_at,
  };
  for (const key of OPTIONAL) {
    if (m[key] !== undefined && m[key] !== '') (record as unknown as Record<string, string>)[key] = m[key];
  }
  for (const key of JSON_FIELDS) {
    if (!m[key]) continue;
    try {
      (record as unknown as Record<string, unknown>)[key] = JSON.parse(m[key]) as unknown;
    } catch {
      // A value a person wrote by hand into the bead: left out rather than failing every read of the session.
    }
  }
  const compactions = Number(m.compactions);
  if (compactions > 0) record.compactions = compactions;
  return record;
}
