import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../../shared/paths.js';
import { CityApi, registerCity, type Envelope, type Reply } from './city-api.js';
import { TestSupervisor } from './supervisor.js';
import { WAIT_MS, waitUntil } from './wait.js';

/** The example agents the project ships (examples/agents/). */
export const ECHO_AGENT = join(packageRoot, 'examples', 'agents', 'echo.sh');
export const STREAM_JSON_AGENT = join(packageRoot, 'examples', 'agents', 'stream-json-agent.mjs');

/**
 * Providers over the shipped agents: `echo` (text, a ready marker, questions), `quiet-echo` (text, turns end
 * after 200 ms of quiet), `pretend-claude` (the claude preset run on the stream-json example agent), `missing`
 * (a command that does not exist), `dies` (exits at once).
 */
export function providersToml(stateDir: string): string {
  return `
[providers.echo]
command = "${ECHO_AGENT}"
ready_prompt_prefix = "ready>"
pending_pattern = '^\\? (.*)$'
env = { ECHO_READY = "ready>" }

[providers.quiet-echo]
command = "${ECHO_AGENT}"
quiet_ms = 200

[providers.pretend-claude]
base = "builtin:claude"
command = "${process.execPath} ${STREAM_JSON_AGENT}"
env = { STREAM_AGENT_STATE = "${stateDir}" }

[providers.slow-echo]
command = "sleep 1 && exec ${ECHO_AGENT}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

[providers.missing]
command = "/nonexistent/agent-program"

[providers.dies]
command = "/bin/false"
`;
}

export interface SessionCity {
  sup: TestSupervisor;
  api: CityApi;
  dir: string;
}

/** A supervisor with one running city whose city.toml has `providersToml` (and `extra`), registered through the API. */
export async function startSessionCity(
  name = 'sessions',
  extra = '',
  env?: NodeJS.ProcessEnv,
  root?: string,
): Promise<SessionCity> {
  const sup = await TestSupervisor.start({ env, root });
  const dir = sup.cityDir(name);
  mkdirSync(dir, { recursive: true });
  // Inside the supervisor's root, so that its cleanup removes it too.
  const state = join(sup.root, 'agent-state');
  mkdirSync(state, { recursive: true });
  writeFileSync(join(dir, 'city.toml'), `[workspace]\nprovider = "echo"\n${providersToml(state)}${extra}`);
  return { sup, api: await registerCity(sup, name), dir };
}

export interface Accepted {
  status: string;
  request_id: string;
  event_cursor: string;
  session_id: string;
}

/** The terminal event of a city-scope request (`request.result.*` or `request.failed`), once recorded. */
export async function terminalOf(api: CityApi, requestId: string, timeoutMs = WAIT_MS): Promise<Envelope> {
  return waitUntil(
    `the terminal event of ${requestId}`,
    async () => {
      const recent = await api.get<{ items: Envelope[] }>('/events?limit=1000');
      return recent.body.items.find(
        (e) =>
          (e.type.startsWith('request.result.') || e.type === 'request.failed') && e.payload.request_id === requestId,
      );
    },
    timeoutMs,
  );
}

/** `POST /sessions`, expecting 202 and then `request.result.session.create`; returns the session id. */
export async function createSession(api: CityApi, body: Record<string, unknown>): Promise<string> {
  const reply = await api.post<Accepted>('/sessions', body);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
  const result = await terminalOf(api, reply.body.request_id);
  expect(result.type, JSON.stringify(result.payload)).to.equal('request.result.session.create');
  expect(result.payload).to.deep.equal({ request_id: reply.body.request_id, session_id: reply.body.session_id });
  return reply.body.session_id;
}

/** `POST …/messages` (or `/submit` with an intent), expecting 202; resolves with the 202 body. */
export async function send(api: CityApi, id: string, message: string, intent?: string): Promise<Accepted> {
  const reply: Reply<Accepted> = intent
    ? await api.post<Accepted>(`/session/${id}/submit`, { message, intent })
    : await api.post<Accepted>(`/session/${id}/messages`, { message });
  expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
  return reply.body;
}

/** Sends and waits until the message is delivered (its `request.result.session.*`). */
export async function deliver(api: CityApi, id: string, message: string, intent?: string): Promise<Envelope> {
  const accepted = await send(api, id, message, intent);
  const result = await terminalOf(api, accepted.request_id);
  expect(result.type, JSON.stringify(result.payload)).to.match(/^request\.result\.session\./);
  return result;
}

export interface Turn {
  seq: number;
  role: string;
  text: string;
  timestamp: string;
  turn?: number;
}

export async function turns(api: CityApi, id: string): Promise<Turn[]> {
  const reply = await api.get<{ turns: Turn[] }>(`/session/${id}/transcript?tail=1000`);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body.turns;
}

/** Waits until the session's conversation has a turn matching `match` (role and text). */
export async function waitForTurn(
  api: CityApi,
  id: string,
  role: string,
  match: string | RegExp,
  timeoutMs = WAIT_MS,
): Promise<Turn> {
  let seen: Turn[] = [];
  try {
    return await waitUntil(
      `a ${role} turn ${String(match)} in ${id}`,
      async () => {
        seen = await turns(api, id);
        return seen.find((t) => t.role === role && (typeof match === 'string' ? t.text === match : match.test(t.text)));
      },
      timeoutMs,
    );
  } catch (err) {
    // Which turns there were says more than the time-out alone (a turn worded otherwise, or none at all).
    const last = seen.slice(-6).map((t) => `${t.role}: ${JSON.stringify(t.text)}`);
    throw new Error(`${(err as Error).message}; its last turns: ${last.length ? last.join(' | ') : 'none'}`, {
      cause: err,
    });
  }
}

export interface SessionView {
  id: string;
  template: string;
  provider: string;
  kind: string;
  attached: boolean;
  state: string;
  running: boolean;
  pid?: number;
  activity?: string;
  alias?: string;
  session_name: string;
  title: string;
  reason?: string;
  queued: number;
  last_output?: string;
  permission_mode?: string;
  provider_session_key?: string;
  attach?: { socket: string; target: string };
  pending?: {
    request_id: string;
    kind: string;
    prompt?: string;
    options?: string[];
    metadata?: Record<string, string>;
  };
  program_status?: { status: string; source: string; hook?: string; at: string };
}

export async function session(api: CityApi, id: string): Promise<SessionView> {
  const reply = await api.get<SessionView>(`/session/${id}`);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body;
}

/** Events of the city's log of `type` about session `id`. */
export async function sessionEvents(api: CityApi, type: string, id: string): Promise<Envelope[]> {
  return (await api.events(type)).filter((e) => e.payload.session_id === id);
}
