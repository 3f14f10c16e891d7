import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { runAsRequest } from '../shared/events/request-actor.js';
import type { PeerAccess } from '../shared/http/peer-access.js';
import { ACTOR_HEADER } from '../shared/http/peer-gate.js';
import { Problem } from '../shared/http/problem.js';
import { WEBHOOK_PEER_HEADER } from '../shared/http/webhook-path.js';
import { answerProblem, refuseUpgradeWithProblem } from '../shared/http/refusal.js';
import { bearerSecret } from '../shared/http/bearer.js';
import { unauthorized, type ApiTokens } from './api-tokens.js';
import { cookieValue, SESSION_COOKIE, type BrowserSessions } from './browser-sessions.js';
import { actorOf, setCaller, type Caller } from './caller.js';

/** The one route served to anyone: a browser spends its one-time code there (the code is the credential). */
export const EXCHANGE_PATH = '/v0/auth/exchange';
/** Minting a sign-in code changes nothing a read-only token may not touch: it hands the browser the same rights. */
const CODES_PATH = '/v0/auth/codes';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Who may use the API, before anything else looks at a request — typed routes, both event streams, `svc/*`,
 * WebSocket upgrades alike: a bearer token (from any account, any address), else a browser session cookie, else
 * the same-user rule of the connection's peer. Refusals are problems: 401 with `WWW-Authenticate: Bearer` for a
 * token that is malformed, unknown, revoked or expired; 403 for an account the rule refuses, a peer it cannot
 * identify, and a mutation with a read-only token. A request let in runs with its caller attached and its actor
 * in the event log's context, and carries the actor to a controller in `X-CTL-Actor`.
 */
export class AccessGate {
  constructor(
    private readonly o: { peers: PeerAccess; tokens: ApiTokens; sessions: BrowserSessions; logger: Logger },
  ) {}

  /** Wraps the server's request listener. */
  requests(
    next: (req: IncomingMessage, res: ServerResponse) => void,
  ): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      const refuse = (err: unknown) => answerProblem(req, res, this.problemOf(err));
      const settle = (caller: Caller | undefined) => this.admit(req, res, caller, () => next(req, res), refuse);
      try {
        const caller = this.callerOf(req);
        if (caller instanceof Promise) caller.then(settle, refuse);
        else settle(caller);
      } catch (err) {
        refuse(err);
      }
    };
  }

  /** Wraps the server's `upgrade` listener (a WebSocket meets the same rule as every request). */
  upgrades(
    next: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  ): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return (req, socket, head) => {
      const refuse = (err: unknown) => refuseUpgradeWithProblem(socket, this.problemOf(err));
      const settle = (caller: Caller | undefined) =>
        this.admit(req, undefined, caller, () => next(req, socket, head), refuse);
      try {
        const caller = this.callerOf(req);
        if (caller instanceof Promise) caller.then(settle, refuse);
        else settle(caller);
      } catch (err) {
        refuse(err);
      }
    };
  }

  /**
   * The caller of a request, at once when its connection's peer is already known (or it shows a credential), or
   * undefined for the code exchange; throws (or rejects with) the problem of a request refused.
   */
  callerOf(req: IncomingMessage): Caller | undefined | Promise<Caller> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if ((q < 0 ? url : url.slice(0, q)) === EXCHANGE_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      return undefined;
    }
    const authorization = req.headers.authorization;
    if (authorization !== undefined) {
      const token = this.o.tokens.check(bearerSecret(authorization));
      return { kind: 'token', name: token.name, readOnly: token.readOnly };
    }
    const session = cookieValue(req.headers.cookie, SESSION_COOKIE);
    const fromSession = session === undefined ? undefined : this.sessionCaller(session);
    if (fromSession) return fromSession;
    const verdict = this.o.peers.verdictOf(req.socket);
    const decide = (v: Awaited<typeof verdict>): Caller => {
      if (v.allowed) return { kind: 'user', name: v.user };
      // A browser whose session ended is told to sign in again, not that its account is refused.
      if (session !== undefined)
        throw unauthorized('unauthorized: the browser session expired or ended; open a new link');
      throw v.problem;
    };
    return verdict instanceof Promise ? verdict.then(decide) : decide(verdict);
  }

  private sessionCaller(session: string): Caller | undefined {
    const caller = this.o.sessions.callerOf(session);
    if (!caller || (caller.kind === 'token' && !this.o.tokens.stillValid(caller.name))) return undefined;
    return { ...caller, viaCookie: true };
  }

  private admit(
    req: IncomingMessage,
    res: ServerResponse | undefined,
    caller: Caller | undefined,
    next: () => void,
    refuse: (problem: Problem) => void,
  ): void {
    delete req.headers[ACTOR_HEADER];
    delete req.headers[WEBHOOK_PEER_HEADER];
    if (caller === undefined) {
      return next();
    }
    if (
      caller.kind === 'token' &&
      caller.readOnly &&
      !SAFE_METHODS.has(req.method ?? 'GET') &&
      req.url !== CODES_PATH
    ) {
      return refuse(
        new Problem('forbidden', `forbidden: token ${caller.name} is read-only; ${req.method} changes state`),
      );
    }
    setCaller(req, caller);
    const actor = actorOf(caller);
    req.headers[ACTOR_HEADER] = actor;
    withoutOurCredentials(req);
    runAsRequest(actor, req, res, next);
  }

  private problemOf(err: unknown): Problem {
    if (err instanceof Problem) return err;
    this.o.logger.error({ err }, 'access check failed');
    return new Problem('forbidden', `forbidden: the caller could not be identified: ${(err as Error).message}`);
  }
}

/**
 * Our credentials are spent here: a token or session cookie must not travel on to a controller, and never to a
 * city's workspace service (`svc/*`), a program that has no business holding them. A bearer header that got this
 * far was ours (any other is a 401); other cookies stay.
 */
function withoutOurCredentials(req: IncomingMessage): void {
  delete req.headers.authorization;
  const cookie = req.headers.cookie;
  if (cookie === undefined || !cookie.includes(SESSION_COOKIE)) return;
  const rest = cookie
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part !== '' && part.split('=')[0]!.trim() !== SESSION_COOKIE);
  if (rest.length) req.headers.cookie = rest.join('; ');
  else delete req.headers.cookie;
}
