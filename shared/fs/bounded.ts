/** A filesystem operation that did not finish in time (a hung mount, a FIFO, a kernel path that never answers). */
export class FsTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';

  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`${what} did not finish within ${ms} ms`);
  }
}

/** How long one filesystem call on a request path may take before the request gives up on it. */
export const FS_CALL_DEADLINE_MS = 5000;

/**
 * Awaits a promise-based filesystem call for at most `ms`. The call runs in libuv's thread pool, so the event
 * loop never waits on it; a call that never returns costs one pool thread, not every request.
 */
export function bounded<T>(what: string, call: Promise<T>, ms = FS_CALL_DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FsTimeoutError(what, ms)), ms);
    timer.unref();
  });
  // A call that loses the race may still fail later; nobody is waiting for that answer.
  call.catch(() => undefined);
  return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
}
