import { decodeSegment, hasDotSegment } from '../../shared/http/path-segment.js';

/** Who a session credential stands for: one session of one city, running on one host. */
export interface SessionGrant {
  city: string;
  /** The host the session runs on: its credential is good only through that host's gateway. */
  host: string;
  sessionId: string;
  sessionName: string;
  /**
   * What the session's requests record as their actor: its agent's name (its own name for a plain session),
   * as `ctl bead close`/`comment` with `session` record it.
   */
  actor: string;
}

/** What must be so of the thing a mutation touches before it may go on: the session holds it, waits on it, got it. */
export type Ownership = { bead: string } | { wait: string } | { mail: string };

/**
 * What a request's JSON body may say. `session`: a `session` member, if any, names this session (an agent's
 * close or comment sends its own, and must not send another's). `sender`: a `from` member names this session or
 * its agent — set to its actor when absent, since mail's default sender is `human`, whom an agent is not.
 */
export type BodyRule = 'session' | 'sender';

/** The scope's answer to one request. */
export type ScopeVerdict =
  | { kind: 'refuse'; detail: string }
  /** Asked of the supervisor before a city call; the gateway answers it itself, for its one session and city. */
  | { kind: 'answer'; what: 'whoami' | 'cities' }
  | { kind: 'forward'; owns?: Ownership; body?: BodyRule; querySession?: string };

const SAFE = new Set(['GET', 'HEAD']);

/** One mutation a session may make: its method, its path's shape after `/v0/city/{city}`, and its conditions. */
interface Allowed {
  method: string;
  /** Segments; `:name` captures one. */
  path: string[];
  /** A `:session` segment must name this session. */
  ownSession?: boolean;
  owns?: 'bead' | 'wait' | 'mail';
  body?: BodyRule;
  /** The `session` query parameter, if any, must name this session. */
  querySession?: boolean;
}

/**
 * What a session's own `ctl` does in a turn (docs/agent-commands.md, cli/commands/agent-side.ts): report its
 * program's hooks, wait on beads, close, comment on and update the beads it holds, and send and read its own
 * mail. Nothing else changes state: not creating or slinging work (the city's routing does that), not another
 * session, not its own session's lifecycle, and not a permission request's answer — that is the person's
 * approval, which an agent answering for itself would void (its program reports the prompt through its hook).
 */
const ALLOWED: Allowed[] = [
  { method: 'POST', path: ['session', ':session', 'hook'], ownSession: true },
  { method: 'POST', path: ['session', ':session', 'wait'], ownSession: true },
  { method: 'POST', path: ['wait', ':wait', 'cancel'], owns: 'wait' },
  { method: 'POST', path: ['wait', ':wait', 'ready'], owns: 'wait' },
  { method: 'POST', path: ['bead', ':bead', 'close'], owns: 'bead', body: 'session' },
  { method: 'POST', path: ['bead', ':bead', 'comments'], owns: 'bead', body: 'session' },
  { method: 'DELETE', path: ['bead', ':bead', 'comments', ':comment'], owns: 'bead', querySession: true },
  { method: 'PATCH', path: ['bead', ':bead'], owns: 'bead' },
  { method: 'POST', path: ['bead', ':bead', 'update'], owns: 'bead' },
  { method: 'POST', path: ['mail'], body: 'sender' },
  { method: 'POST', path: ['mail', ':mail', 'read'], owns: 'mail' },
  { method: 'POST', path: ['mail', ':mail', 'mark-unread'], owns: 'mail' },
  { method: 'POST', path: ['mail', ':mail', 'archive'], owns: 'mail' },
  { method: 'POST', path: ['mail', ':mail', 'reply'], owns: 'mail', body: 'sender' },
  { method: 'DELETE', path: ['mail', ':mail'], owns: 'mail' },
];

/**
 * What a session credential may do with a request (`target`: its path and query as sent). Reads of its own city
 * (every GET and HEAD under `/v0/city/{its city}`, its streams included) go on; the mutations of `ALLOWED` go on
 * once their conditions are checked; whoami and the city list are answered for the session; everything else —
 * every other city, every supervisor operation (cities, tokens, sign-in codes, a city's stop/start/unregister),
 * any other session's work — is refused (403). Pure: the gateway checks what `owns` and `body` ask.
 */
export function sessionScope(grant: SessionGrant, method: string, target: string): ScopeVerdict {
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : target.slice(q + 1));
  const who = `session ${grant.sessionName} (${grant.sessionId})`;
  if (hasDotSegment(path)) return { kind: 'refuse', detail: `forbidden: ${who} may not use a path with . or ..` };
  const safe = SAFE.has(method);
  if (path === '/v0/whoami' && safe) return { kind: 'answer', what: 'whoami' };
  if (path === '/v0/cities' && safe) return { kind: 'answer', what: 'cities' };
  const segments = path.split('/').slice(1);
  if (segments[0] !== 'v0' || segments[1] !== 'city' || segments[2] === undefined || segments[2] === '') {
    return {
      kind: 'refuse',
      detail: `forbidden: ${who} may use only its city ${grant.city}, not ${method} ${path} (a supervisor operation)`,
    };
  }
  const city = decodeSegment(segments[2]);
  if (city !== grant.city) {
    return { kind: 'refuse', detail: `forbidden: ${who} may use only its city ${grant.city}, not city ${city}` };
  }
  const rest = segments.slice(3).map(decodeSegment);
  if (safe) return { kind: 'forward' };
  if (rest.length === 1 && (rest[0] === 'stop' || rest[0] === 'start' || rest[0] === 'unregister')) {
    return { kind: 'refuse', detail: `forbidden: ${who} may not ${rest[0]} its city (a supervisor operation)` };
  }
  const own = (name: string) => name === grant.sessionId || name === grant.sessionName;
  for (const rule of ALLOWED) {
    if (rule.method !== method || rule.path.length !== rest.length) continue;
    const captured = new Map<string, string>();
    if (!rule.path.every((part, i) => (part.startsWith(':') ? captured.set(part, rest[i]!) : part === rest[i]))) {
      continue;
    }
    if (rule.ownSession && !own(captured.get(':session')!)) {
      return {
        kind: 'refuse',
        detail: `forbidden: ${who} may act only as itself, not as session ${captured.get(':session')}`,
      };
    }
    const session = query.get('session');
    if (rule.querySession && session !== null && !own(session)) {
      return { kind: 'refuse', detail: `forbidden: ${who} may act only as itself, not as session ${session}` };
    }
    const verdict: ScopeVerdict = { kind: 'forward' };
    if (rule.owns) verdict.owns = { [rule.owns]: captured.get(`:${rule.owns}`)! } as Ownership;
    if (rule.body) verdict.body = rule.body;
    return verdict;
  }
  return {
    kind: 'refuse',
    detail:
      `forbidden: ${who} may read its city and act on its own work (its beads, mail, waits and hooks), ` +
      `not ${method} ${path}`,
  };
}

/** The names a session answers to as a mail's recipient or sender: its agent, its name, its id. */
export function namesOf(grant: SessionGrant): string[] {
  return [...new Set([grant.actor, grant.sessionName, grant.sessionId])];
}

/**
 * A mutation's JSON body as its rule lets it go on (the text to send instead, when it had to be changed), or the
 * reason it may not. A body that is not a JSON object goes on as it is: the controller answers its 4xx.
 */
export function checkBody(
  grant: SessionGrant,
  rule: BodyRule,
  text: string,
): { ok: true; text: string } | { ok: false; detail: string } {
  let body: unknown;
  try {
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return { ok: true, text };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: true, text };
  const record = body as Record<string, unknown>;
  const who = `session ${grant.sessionName} (${grant.sessionId})`;
  if (rule === 'session') {
    const session = record.session;
    if (session === undefined || session === grant.sessionId || session === grant.sessionName) {
      return { ok: true, text };
    }
    return { ok: false, detail: `forbidden: ${who} may act only as itself, not as session ${JSON.stringify(session)}` };
  }
  const from = record.from;
  if (from === undefined) return { ok: true, text: JSON.stringify({ ...record, from: grant.actor }) };
  if (typeof from === 'string' && namesOf(grant).includes(from)) return { ok: true, text };
  return { ok: false, detail: `forbidden: ${who} may send mail only as ${namesOf(grant).join(' or ')}` };
}
