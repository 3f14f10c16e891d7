import type { Logger } from 'pino';
import type { ResolvedProvider } from '../../providers/provider-spec.js';
import type { RuntimeCapabilities, RuntimeSink } from '../runtime.js';

/** What a protocol can do to the program it speaks with. */
export interface ProgramIO {
  /** Writes to the program's stdin; resolves once written. */
  write(text: string): Promise<void>;
  /** Signals the program's process group. */
  signal(signal: NodeJS.Signals): void;
}

/**
 * A wire protocol over a program's stdin and stdout: it turns messages into bytes for the program, and the
 * program's lines into what the session hears (`RuntimeSink`). One instance per running program.
 */
export interface Protocol {
  readonly capabilities: RuntimeCapabilities;
  /** The program runs; `io` reaches it. */
  started(io: ProgramIO): void;
  /** Complete lines the program wrote on stdout. */
  lines(lines: string[]): void;
  /** Hands a message to the program; resolves once written. */
  deliver(message: { id: string; text: string }): Promise<void>;
  interrupt(): Promise<boolean>;
  respond(requestId: string, answer: { action: string; text?: string }): Promise<void>;
  setPermissionMode(mode: string): Promise<boolean>;
  /** The program is gone: drop timers and what waits on it. */
  ended(): void;
}

export type ProtocolFactory = (provider: ResolvedProvider, sink: RuntimeSink, logger: Logger) => Protocol;
