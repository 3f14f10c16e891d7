import type { SessionHookEvent, SessionPrimeResponse } from '../../shared/dto/sessions.js';
import { call, connect, CSRF } from '../_api.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { json, line } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';
import type { Api } from '../_types.js';

// What an agent runs in a turn, from inside its session: its city (CTL_CITY) and session (CTL_SESSION_ID) are in
// its environment, so it names neither. docs/agent-commands.md is the page an agent's prompt can include.

/** `ctl hook` and `ctl mail check` exit with this when there is nothing (1 stays every failure's). */
export const NOTHING_EXIT_CODE = 3;

export const sessionFlag = {
  session: {
    type: 'string',
    description: 'Session id or name (default: CTL_SESSION_ID, the session this runs in)',
    valueHint: 'ID',
  },
} as const;

/** The session a command is about: `--session`, else the one it runs in. */
export function sessionInScope(given: string | undefined): string {
  const session = given?.trim() || process.env.CTL_SESSION_ID?.trim();
  if (!session) throw new CliError('no session in scope; pass --session, or run inside a session (CTL_SESSION_ID)');
  return session;
}

async function briefing(args: { session?: string; city?: string; api?: string }): Promise<SessionPrimeResponse> {
  const id = sessionInScope(args.session);
  const { api, city } = await inCity(args);
  return primeOf(api, city.name, id);
}

async function primeOf(api: Api, cityName: string, id: string): Promise<SessionPrimeResponse> {
  const path = { cityName, id };
  const { data } = await call(api, api.client.GET('/v0/city/{cityName}/session/{id}/prime', { params: { path } }));
  return data;
}

export const primeCommand = command({
  name: 'prime',
  description: "A session's role prompt, current work and unread mail, as text for a hook or a first turn",
  examples: ['ctl prime', 'ctl prime --session worker-3 --city alpha'],
  args: { ...sessionFlag, ...inCityFlags },
  async run({ args: a }) {
    const brief = await briefing(a);
    if (a.json) return json(brief);
    process.stdout.write(brief.text);
  },
});

export const hookCommand = command({
  name: 'hook',
  description: `The bead the session should work on now (exit ${NOTHING_EXIT_CODE}, printing nothing, when there is none)`,
  examples: ['ctl hook', 'if bead=$(ctl hook --id); then ctl bead show "$bead"; fi'],
  args: {
    id: { type: 'boolean', description: "Print only the bead's id" },
    ...sessionFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { bead } = await briefing(a);
    if (!bead) {
      process.exitCode = NOTHING_EXIT_CODE;
      return;
    }
    if (a.json) return json(bead);
    if (a.id) return line(bead.id);
    line(`${bead.id}: ${bead.title}`);
    if (bead.description?.trim()) line(bead.description.trim());
  },
});

export const mailCheckCommand = command({
  name: 'check',
  description: `Unread mail to the session's agent or to the session (exit ${NOTHING_EXIT_CODE} when there is none)`,
  examples: ['ctl mail check', 'ctl mail check --session worker-3'],
  args: { ...sessionFlag, ...inCityFlags },
  async run({ args: a }) {
    const { mail, unread } = await briefing(a);
    if (unread === 0) process.exitCode = NOTHING_EXIT_CODE;
    if (a.json) return json({ items: mail, total: unread });
    if (unread === 0) return line('No unread mail.');
    for (const m of mail) line(`${m.id} from ${m.from}: ${m.subject.replace(/\s+/g, ' ')}`);
    if (unread > mail.length) line(`… and ${unread - mail.length} more (ctl mail inbox --agent …)`);
  },
});

/** The hook events `ctl hook-event` reports (the API answers 422 for any other). */
const HOOK_EVENTS: SessionHookEvent[] = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'PermissionRequest',
  'Notification',
  'Stop',
  'StopFailure',
  'SubagentStop',
];
/** A hook's stdin larger than this is not read whole (a tool's input can be a whole file). */
const HOOK_INPUT_MAX = 4 * 1024 * 1024;
/** Longer strings of it are cut before posting: the session needs a tool's name and gist, not a file's content. */
const HOOK_STRING_MAX = 64 * 1024;

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > HOOK_INPUT_MAX) throw new CliError(`the hook's input is over ${HOOK_INPUT_MAX} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function cutStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.length > HOOK_STRING_MAX ? `${value.slice(0, HOOK_STRING_MAX)}…` : value;
  if (Array.isArray(value)) return value.map(cutStrings);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v)]));
  }
  return value;
}

export const hookEventCommand = command({
  name: 'hook-event',
  description:
    "Report a hook of the session's program to its session (run by the hooks ctl sets up; reads the hook's JSON on stdin)",
  examples: [
    'echo \'{"last_assistant_message":"done"}\' | ctl hook-event Stop',
    'ctl hook-event UserPromptSubmit --session worker-3 < hook-input.json',
  ],
  args: {
    event: {
      type: 'positional',
      required: false,
      description: `The hook (${HOOK_EVENTS.join(', ')}); default: the input's hook_event_name`,
      valueHint: 'EVENT',
    },
    ...sessionFlag,
    ...inCityFlags,
  },
  async run({ args: a }) {
    const id = sessionInScope(a.session);
    const raw = (await readStdin()).trim();
    let input: Record<string, unknown> = {};
    if (raw !== '') {
      try {
        input = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        throw new CliError("the hook's input on stdin is not JSON");
      }
      if (!input || typeof input !== 'object' || Array.isArray(input)) {
        throw new CliError("the hook's input on stdin is not a JSON object");
      }
    }
    const event = a.event ?? (input.hook_event_name as string | undefined);
    if (!event) throw new CliError('no hook event: name one, or pipe the hook input that carries hook_event_name');
    // Inside a session CTL_CITY is its city's name: no listing of cities before the post (a hook holds the program).
    const named = a.city === undefined && process.env.CTL_CITY && !process.env.CTL_CITY.includes('/');
    const { api, cityName } = named
      ? { api: connect(a.api), cityName: process.env.CTL_CITY! }
      : await inCity(a).then(({ api, city }) => ({ api, cityName: cityPath(city).cityName }));
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/session/{id}/hook', {
        params: { header: CSRF, path: { cityName, id } },
        body: { event: event as SessionHookEvent, input: cutStrings(input) as Record<string, unknown> },
      }),
    );
    // Nothing on stdout unless asked: a hook's output means something to the program that ran it.
    if (a.json) json(data);
  },
});
