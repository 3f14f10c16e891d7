import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How long a test waits, unless it says otherwise, for something it set off: a process or session to start or
 * end, a city to run, an event to be recorded, a frame to arrive. It bounds what is waited for, generously — on a
 * quiet machine these take well under a second, on one loaded by other work (the suite's parallel jobs, other
 * people's) many times that — never a guess of this machine's speed: a wait fails only when what it waits for
 * does not come. A wait for something that itself takes time (a retry after a back-off, a timer) adds that time.
 * Mocha's own per-test timeout (.mocharc) is above it, so a wait that fails says what it waited for.
 */
export const WAIT_MS = 30_000;

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = WAIT_MS,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: Error | undefined;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err instanceof Error ? err : new Error(String(err));
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await sleep(intervalMs);
  }
}
