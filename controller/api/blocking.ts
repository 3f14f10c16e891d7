import { parseDuration } from '../../shared/duration.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';

const DEFAULT_WAIT_MS = 30_000;
const MAX_WAIT_MS = 120_000;

/** A blocking query's `wait`: a positive duration, at most 2 minutes; anything else is a 422. */
export function parseWait(wait: string | undefined): number {
  if (wait === undefined || wait.trim() === '') return DEFAULT_WAIT_MS;
  let ms = Number.NaN;
  try {
    ms = parseDuration(wait);
  } catch {
    // reported below
  }
  if (!(ms > 0)) {
    const message = `must be a positive duration such as 30s, got ${JSON.stringify(wait)}`;
    throw new Problem('validation-failed', `invalid: wait ${message}`, {
      errors: [{ location: 'query.wait', message, value: wait }],
    });
  }
  return Math.min(ms, MAX_WAIT_MS);
}

/**
 * A blocking query: with `index`, waits (up to `wait`) until the city's event head passes it, so a client
 * polling with the `X-CTL-Index` it last saw hears of the next change at once. Returns the head to answer.
 */
export async function blockUntilChanged(
  city: CityRuntime,
  index: number | undefined,
  wait: string | undefined,
): Promise<number> {
  const waitMs = parseWait(wait);
  if (index !== undefined && city.log.head() <= index) await city.tail.waitFor(index + 1, waitMs);
  return city.log.head();
}
