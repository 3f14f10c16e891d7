import type { SessionPrimeResponse } from '../../shared/dto/sessions.js';
import { call } from '../_api.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { json, line } from '../_output.js';
import { inCity } from '../_scope.js';
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
