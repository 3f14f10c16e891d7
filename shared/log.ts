import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';

/**
 * A structured (pino, JSON lines) logger writing to stderr and, when given, to a file. pino because it is
 * the fastest structured logger for Node and its lines are what journald and jq expect.
 */
export function createLogger(options: { name: string; file?: string; stderr?: boolean; level?: string }): Logger {
  const level = (options.level ?? process.env.CTL_LOG_LEVEL ?? 'info') as pino.Level;
  const streams: pino.StreamEntry[] = [];
  if (options.stderr !== false) streams.push({ level, stream: pino.destination({ fd: 2, sync: true }) });
  if (options.file) {
    mkdirSync(dirname(options.file), { recursive: true });
    streams.push({ level, stream: pino.destination({ dest: options.file, append: true, sync: true }) });
  }
  return pino({ name: options.name, level }, pino.multistream(streams));
}
