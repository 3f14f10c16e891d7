import type { AnyMessage, Stream } from '@agentclientprotocol/sdk';

interface WriteWaiter {
  matches: (message: AnyMessage) => boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The SDK's connection speaks in JSON-RPC messages over a pair of web streams; our `ChildProgram` hands us its
 * stdout as lines and takes text on its stdin. This joins the two: each line is one message in, each message out
 * is one line. Reading stays with `ChildProgram` (its bounded lines, and the pause while the session is behind on
 * writing), which the SDK's own `ndJsonStream` over raw pipes would bypass.
 */
export class MessageStream {
  readonly stream: Stream;
  private incoming!: ReadableStreamDefaultController<AnyMessage>;
  private closed = false;
  private readonly waiters: WriteWaiter[] = [];

  /**
   * @param write writes text on the program's stdin, resolving once written
   * @param notProtocol hears a line that is not a JSON-RPC message (a program's stray output may explain a failure)
   */
  constructor(
    write: (text: string) => Promise<void>,
    private readonly notProtocol: (line: string) => void,
  ) {
    const readable = new ReadableStream<AnyMessage>({
      start: (controller) => {
        this.incoming = controller;
      },
    });
    const writable = new WritableStream<AnyMessage>({
      write: async (message) => {
        await write(`${JSON.stringify(message)}\n`);
        for (const waiter of this.waiters.filter((w) => w.matches(message))) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      },
    });
    this.stream = { readable, writable };
  }

  /** Lines the program wrote: each JSON object goes to the connection. */
  lines(lines: string[]): void {
    if (this.closed) return;
    for (const line of lines) {
      if (line.trim() === '') continue;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        this.notProtocol(line);
        continue;
      }
      if (message === null || typeof message !== 'object' || Array.isArray(message)) this.notProtocol(line);
      else this.incoming.enqueue(message as AnyMessage);
    }
  }

  /** Resolves once a message matching `matches` has been written to the program; rejects if it ends first. */
  written(matches: (message: AnyMessage) => boolean): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the program is not running'));
    return new Promise((resolve, reject) => this.waiters.push({ matches, resolve, reject }));
  }

  /** The program is gone: the connection sees the end of its input (and fails what waits on an answer). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.incoming.close();
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error('the program is not running'));
  }
}
