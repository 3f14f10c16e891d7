import { parseDuration } from '../duration.js';
import { ConfigError } from './config-error.js';

/** `[review]` of `city.toml`: what an approved review must pass in the merge queue before it lands. */
export interface ReviewConfig {
  /** `check`: a shell command run in the review's tree (`/bin/sh -c`); none: approved reviews land unchecked. */
  check?: string;
  /** `check_timeout`: past this the check is killed, its whole process group, and the review sent back. */
  checkTimeoutMs: number;
  /**
   * `land`: what landing an approved review does with its branch — `merge` (the default) into its base, or `push`
   * to its rig's remote as `merge = "push"` does.
   */
  land: 'merge' | 'push';
}

export const DEFAULT_CHECK_TIMEOUT_MS = 10 * 60_000;
/** A check that needs longer than this is a build farm's job, not a merge queue's. */
const MAX_CHECK_TIMEOUT_MS = 24 * 3_600_000;

/** Reads `[review]` (a TOML table, already parsed); `where` names a key in errors. */
export function readReviewConfig(table: unknown, where: (key: string) => string): ReviewConfig {
  const config: ReviewConfig = { checkTimeoutMs: DEFAULT_CHECK_TIMEOUT_MS, land: 'merge' };
  if (table === undefined) return config;
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new ConfigError(`${where('review')} must be a table`);
  }
  const t = table as Record<string, unknown>;
  if (t.check !== undefined) {
    if (typeof t.check !== 'string' || t.check.trim() === '') {
      throw new ConfigError(`${where('review.check')} must be a shell command (a non-empty string)`);
    }
    config.check = t.check;
  }
  if (t.check_timeout !== undefined) {
    let ms: number;
    try {
      if (typeof t.check_timeout !== 'string') throw new Error('not a string');
      ms = parseDuration(t.check_timeout);
    } catch {
      throw new ConfigError(
        `${where('review.check_timeout')} must be a duration such as 30s, 5m or 1h30m (got ${JSON.stringify(t.check_timeout)})`,
      );
    }
    if (ms < 100 || ms > MAX_CHECK_TIMEOUT_MS) {
      throw new ConfigError(`${where('review.check_timeout')} must be between 100ms and 24h`);
    }
    config.checkTimeoutMs = ms;
  }
  if (t.land !== undefined) {
    if (t.land !== 'merge' && t.land !== 'push') {
      throw new ConfigError(`${where('review.land')} must be "merge" or "push" (got ${JSON.stringify(t.land)})`);
    }
    config.land = t.land;
  }
  return config;
}
