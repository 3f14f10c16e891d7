import type { IncomingMessage } from 'node:http';

/** Who a request comes from, as the access gate established it. */
export type Caller = ({ kind: 'user'; name: string } | { kind: 'token'; name: string; readOnly: boolean }) & {
  /** Came with a browser session cookie (made from a one-time code) rather than its own credential. */
  viaCookie?: boolean;
};

/** What events record as the actor: the local user's name, or `token:NAME`. */
export function actorOf(caller: Caller): string {
  return caller.kind === 'user' ? caller.name : `token:${caller.name}`;
}

const callers = new WeakMap<IncomingMessage, Caller>();

export function setCaller(req: IncomingMessage, caller: Caller): void {
  callers.set(req, caller);
}

/** The caller of a request the gate let in; undefined only for the one route it lets in unidentified. */
export function callerOf(req: IncomingMessage): Caller | undefined {
  return callers.get(req);
}
