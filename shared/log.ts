import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

/**
 * A structured (pino, JSON lines) logger writing to stderr and, when given, to a file. pino because it is
 * the fastest structured logger for Node and its lines are what journald and jq expect. The file always gets
 * JSON lines; stderr too, unless it is a terminal: a person running `ctl supervisor run` reads pino-pretty's
 * lines (time, level, message, fields). The base fields are `pid`, `hostname` and `name`: a call names any other
 * process's pid for what it is (`controllerPid`), never `pid`.
 */
export function createLogger(options: { name: string; file?: string; stderr?: boolean; level?: string }): Logger {
  const level = (options.level ?? process.env.CTL_LOG_LEVEL ?? 'info') as pino.Level;
  const streams: pino.StreamEntry[] = [];
  if (options.stderr !== false) streams.push({ level, stream: stderrStream() });
  if (options.file) {
    mkdirSync(dirname(options.file), { recursive: true });
    streams.push({ level, stream: pino.destination({ dest: options.file, append: true, sync: true }) });
  }
  return pino({ name: options.name, level }, pino.multistream(streams));
}

function stderrStream(): pino.DestinationStream {
  if (!process.stderr.isTTY) return pino.destination({ fd: 2, sync: true });
  // Loaded only for a terminal: processes whose stderr is a file (every supervised controller) never pay for it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: PrettyOptions) => pino.DestinationStream;
  const { NO_COLOR, FORCE_COLOR } = process.env;
  return pretty({
    destination: 2,
    sync: true,
    colorize: NO_COLOR ? false : FORCE_COLOR !== undefined ? FORCE_COLOR !== '0' : true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'hostname',
  });
}
