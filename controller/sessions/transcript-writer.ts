import type { Logger } from 'pino';
import type { EventRecord } from '../../shared/events/record.js';
import type { NewEntry, Transcript } from './transcript.js';

/** Transcript entries waiting to be written past which the program's output is no longer read until they are. */
const MAX_WRITES_WAITING = 64;

/**
 * Writes a session's transcript entries one after another, in the order they happened, and shows each to the
 * session's stream once written; what else the stream hears (a turn's end, a question) is shown in that same
 * order. A program that outputs faster than the entries are written is held back (`behind`).
 */
export class TranscriptWriter {
  /** Entries being written, in order. */
  private writes: Promise<unknown> = Promise.resolve();
  /** How many entries are waiting to be written. */
  private waiting = 0;

  constructor(
    private readonly transcript: Transcript,
    private readonly o: { sessionId: string; logger: Logger; written: (record: EventRecord) => void },
  ) {}

  /** Appends an entry after those before it; resolves with its record (undefined when it could not be written). */
  write(entry: NewEntry): Promise<EventRecord | undefined> {
    this.waiting++;
    const result = this.writes
      .then(() => this.transcript.append(entry))
      .then(
        (record) => {
          this.o.written(record);
          return record;
        },
        (err: unknown) => {
          this.o.logger.error({ err, session: this.o.sessionId }, 'could not write the transcript');
          return undefined;
        },
      )
      .finally(() => this.waiting--);
    // The chain goes on past an entry its stream could not be shown (the caller hears of it too).
    this.writes = result.catch((err: unknown) => {
      this.o.logger.error({ err, session: this.o.sessionId }, 'a written transcript entry could not be shown');
    });
    return result;
  }

  /**
   * Appends an entry to another transcript of the session (a subagent's), in order with the entries before it;
   * the session's stream and those following its own transcript do not see it.
   */
  writeTo(transcript: Transcript, entry: NewEntry): Promise<EventRecord | undefined> {
    this.waiting++;
    const result = this.writes
      .then(() => transcript.append(entry))
      .catch((err: unknown) => {
        this.o.logger.error({ err, session: this.o.sessionId }, 'could not write a subagent transcript');
        return undefined;
      })
      .finally(() => this.waiting--);
    this.writes = result;
    return result;
  }

  /** Runs `show` after the entries being written now: a stream sees a turn end after the reply it ends. */
  inOrder(show: () => void): void {
    this.writes = this.writes.then(show).catch((err: unknown) => {
      this.o.logger.error({ err, session: this.o.sessionId }, 'a session stream frame could not be shown');
    });
  }

  /** While too many entries wait, a promise of when they are written (the runtime reads no more output until). */
  behind(): Promise<void> | undefined {
    return this.waiting > MAX_WRITES_WAITING ? this.writes.then(() => undefined) : undefined;
  }
}
