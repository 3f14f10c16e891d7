import { randomBytes } from 'node:crypto';
import type { PendingInteraction } from '../../../shared/dto/sessions.js';
import type { ResolvedProvider } from '../../providers/provider-spec.js';
import type { RuntimeCapabilities, RuntimeSink } from '../runtime.js';
import type { ProgramIO, Protocol } from './protocol.js';

/**
 * The `text` protocol: a message is a line on stdin, the reply is what the program writes on stdout. A turn
 * ends when the program prints its ready marker (`ready_prompt_prefix`, a line starting with it), or — for a
 * provider without one — once it has been quiet for `quiet_ms`. A line matching `pending_pattern` is a question;
 * the answer goes back as a line.
 */
export class TextProtocol implements Protocol {
  readonly capabilities: RuntimeCapabilities;
  private io: ProgramIO | undefined;
  private isReady = false;
  private inTurn = false;
  private pending: PendingInteraction | undefined;
  private quiet: NodeJS.Timeout | undefined;
  private readyTimer: NodeJS.Timeout | undefined;
  private readonly pendingPattern: RegExp | undefined;

  constructor(
    private readonly provider: ResolvedProvider,
    private readonly sink: RuntimeSink,
  ) {
    this.pendingPattern = provider.pending_pattern === undefined ? undefined : new RegExp(provider.pending_pattern);
    this.capabilities = {
      interrupt: true,
      pending: this.pendingPattern !== undefined,
      liveModeChange: false,
      concurrentTurns: false,
    };
  }

  started(io: ProgramIO): void {
    this.io = io;
    // Without a marker to wait for, the program is ready once it has kept running for its ready delay.
    if (this.provider.ready_prompt_prefix === undefined) {
      this.readyTimer = setTimeout(() => this.becomeReady(), this.provider.ready_delay_ms);
    }
  }

  lines(lines: string[]): void {
    const prefix = this.provider.ready_prompt_prefix;
    let output: string[] = [];
    const flush = () => {
      if (output.length) this.sink.output('assistant', output.join('\n'));
      output = [];
    };
    for (const line of lines) {
      if (prefix !== undefined && line.startsWith(prefix)) {
        flush();
        if (!this.isReady) this.becomeReady();
        else if (this.inTurn) this.endTurn();
        continue;
      }
      const match = this.pendingPattern?.exec(line);
      if (match) {
        flush();
        this.ask(match[1] ?? line);
        continue;
      }
      output.push(line);
    }
    flush();
    if (this.inTurn) this.armQuiet();
  }

  async deliver(message: { id: string; text: string }): Promise<void> {
    this.inTurn = true;
    await this.io!.write(`${message.text}\n`);
    this.armQuiet();
  }

  async interrupt(): Promise<boolean> {
    if (!this.inTurn) return false;
    // What Ctrl-C does in a terminal: the program decides what an interrupt means to it. One that prints a ready
    // marker says when it is done; for one that does not, the turn is over now.
    this.io!.signal('SIGINT');
    if (this.provider.ready_prompt_prefix === undefined) this.endTurn({ interrupted: true });
    return true;
  }

  async respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    if (this.pending?.request_id !== requestId) throw new Error(`no pending interaction ${requestId}`);
    this.pending = undefined;
    await this.io!.write(`${answer.text ?? answer.action}\n`);
    this.sink.pendingCleared(requestId, answer.action);
    if (this.inTurn) this.armQuiet();
  }

  async setPermissionMode(): Promise<boolean> {
    return false;
  }

  ended(): void {
    clearTimeout(this.quiet);
    clearTimeout(this.readyTimer);
    if (this.pending) this.sink.pendingCleared(this.pending.request_id, 'abandoned');
    this.pending = undefined;
    if (this.inTurn) this.endTurn({ ended: true });
  }

  private becomeReady(): void {
    this.isReady = true;
    this.sink.ready();
  }

  private ask(prompt: string): void {
    clearTimeout(this.quiet);
    this.pending = {
      request_id: `ask-${randomBytes(6).toString('hex')}`,
      kind: 'question',
      prompt,
      options: ['answer'],
      created_at: new Date().toISOString(),
    };
    this.sink.pending(this.pending);
  }

  /** Quiet for `quiet_ms` (and nothing asked): the turn is over. Only for providers without a ready marker. */
  private armQuiet(): void {
    if (this.provider.ready_prompt_prefix !== undefined || this.pending) return;
    clearTimeout(this.quiet);
    this.quiet = setTimeout(() => this.endTurn(), this.provider.quiet_ms);
  }

  private endTurn(data?: Record<string, unknown>): void {
    clearTimeout(this.quiet);
    if (!this.inTurn) return;
    this.inTurn = false;
    this.sink.turnEnded(data);
  }
}
