import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { runAsRequest } from '../events/request-actor.js';
import type { PeerAccess, PeerVerdict } from './peer-access.js';
import { Problem } from './problem.js';
import { answerProblem, refuseUpgradeWithProblem } from './refusal.js';

/** Set by the supervisor on every request it forwards: who the request is from, in event-actor form. */
export const ACTOR_HEADER = 'x-ctl-actor';

/**
 * A controller's gate. On its Unix socket (0600, in the city's 0700 `.ctl/`) only its own account can connect —
 * the supervisor, or that person by hand — so the request is let in, its actor the one the supervisor named in
 * `X-CTL-Actor` (the supervisor overwrites any a client sent) or else our own user. On a TCP port
 * (`--listen PORT`, for debugging) the same peer rule as the supervisor's applies, and an account other than ours
 * is recorded as itself, whatever header it sent.
 */
export class PeerGate {
  constructor(
    private readonly o: { peers: PeerAccess | undefined; ownUser: string; onError: (err: unknown) => void },
  ) {}

  requests(
    next: (req: IncomingMessage, res: ServerResponse) => void,
  ): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) =>
      this.pass(
        req,
        res,
        () => next(req, res),
        (p) => answerProblem(req, res, p),
      );
  }

  upgrades(
    next: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  ): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return (req, socket, head) =>
      this.pass(
        req,
        undefined,
        () => next(req, socket, head),
        (p) => refuseUpgradeWithProblem(socket, p),
      );
  }

  private pass(
    req: IncomingMessage,
    res: ServerResponse | undefined,
    next: () => void,
    refuse: (problem: Problem) => void,
  ): void {
    const named = req.headers[ACTOR_HEADER];
    const forwarded = typeof named === 'string' && named !== '' ? named : undefined;
    const run = (actor: string) => {
      req.headers[ACTOR_HEADER] = actor;
      runAsRequest(actor, req, res, next);
    };
    if (!this.o.peers) return run(forwarded ?? this.o.ownUser);
    const peers = this.o.peers;
    const decide = (verdict: PeerVerdict) => {
      if (!verdict.allowed) return refuse(verdict.problem);
      run(verdict.uid === peers.ownUid ? (forwarded ?? verdict.user) : verdict.user);
    };
    const verdict = peers.verdictOf(req.socket);
    if (!(verdict instanceof Promise)) return decide(verdict);
    verdict.then(decide, (err: unknown) => {
      this.o.onError(err);
      refuse(new Problem('forbidden', 'forbidden: the caller could not be identified'));
    });
  }
}
