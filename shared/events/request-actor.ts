import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The requester of the request being served, for the events it causes. */
export interface RequestActor {
  /** A local user name, or `token:NAME`. */
  actor: string;
  /** A mutation not yet answered: the system's own events (`ctl`) it causes now are its requester's doing. */
  live: boolean;
}

/**
 * Who made the request being served. The HTTP entry of each process runs a request inside it; the event log
 * reads it when an event is appended.
 */
export const requestActor = new AsyncLocalStorage<RequestActor>();

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Runs `next` as the request of `actor`. A mutation is live until its response ends: work it started that
 * outlives it (a crash later, a background pass it woke) carries this context on, but is no longer its doing.
 */
export function runAsRequest(
  actor: string,
  req: IncomingMessage,
  res: ServerResponse | undefined,
  next: () => void,
): void {
  const state: RequestActor = { actor, live: res !== undefined && !SAFE_METHODS.has(req.method ?? 'GET') };
  if (state.live) res!.once('close', () => (state.live = false));
  requestActor.run(state, next);
}

/**
 * The actor to record. `api`, the stand-in actor of every request-driven event, becomes the requester's name; `ctl`,
 * the system's own, does too while a mutation is being served (a session it creates, a city it suspends). Any
 * other actor (an agent, a mail's sender, a client-named one) is better and stays.
 */
export function recordedActor(actor: string): string {
  const state = requestActor.getStore();
  if (!state) return actor;
  if (actor === 'api' || (actor === 'ctl' && state.live)) return state.actor;
  return actor;
}
