import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who made the request being served (a local user name, or `token:NAME`), for the events it causes. The HTTP
 * entry of each process runs a request inside it; the event log reads it when an event is appended.
 */
export const requestActor = new AsyncLocalStorage<string>();

/**
 * The actor to record: an event that names only the API as its actor (`api`, the placeholder of every
 * request-driven event) is recorded with the requester's name when it happens during a request; any other actor
 * (an agent, `ctl` for the system's own work, a mail's sender) is better and stays.
 */
export function recordedActor(actor: string): string {
  return actor === 'api' ? (requestActor.getStore() ?? actor) : actor;
}
