import type { Logger } from 'pino';
import type { EventLog } from '../shared/events/event-log.js';

/** Rotation threshold when `city.toml` sets none (`[events] rotation_max_bytes`). */
export const DEFAULT_ROTATION_MAX_BYTES = 256 * 1024 * 1024;

/** Rotates the city's log once it reaches `maxBytes`, checked after each batch this controller appends. */
export function rotateWhenLarge(log: EventLog, maxBytes: number, logger: Logger): void {
  let rotating = false;
  log.onAppend(() => {
    if (rotating || log.size() < maxBytes) return;
    rotating = true;
    log
      .rotate()
      .then((result) => logger.info({ archive: result.archive }, 'event log rotated (size threshold)'))
      .catch((err: unknown) => logger.error({ err }, 'event log rotation failed'))
      .finally(() => (rotating = false));
  });
}
