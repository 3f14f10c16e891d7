import type { Logger } from 'pino';
import type { EventLog } from '../shared/events/event-log.js';

/** Rotation threshold when `city.toml` sets none (`[events] rotation_max_bytes`). */
export const DEFAULT_ROTATION_MAX_BYTES = 256 * 1024 * 1024;

/** Archives of the event log kept when `city.toml` sets no `[events] max_archives`; the oldest go first. */
export const DEFAULT_MAX_ARCHIVES = 30;

/**
 * Rotates the city's log once it reaches `maxBytes`, checked after each batch this controller appends, keeping
 * `keepArchives()` archives.
 */
export function rotateWhenLarge(log: EventLog, maxBytes: number, keepArchives: () => number, logger: Logger): void {
  let rotating = false;
  log.onAppend(() => {
    if (rotating || log.size() < maxBytes) return;
    rotating = true;
    log
      .rotate({ keepArchives: keepArchives() })
      .then((result) =>
        logger.info({ archive: result.archive, removed: result.removed }, 'event log rotated (size threshold)'),
      )
      .catch((err: unknown) => logger.error({ err }, 'event log rotation failed'))
      .finally(() => (rotating = false));
  });
}
