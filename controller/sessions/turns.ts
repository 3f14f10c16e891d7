import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { PendingInteraction, SessionState, SubmitIntent } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import { withTurnUsage } from '../usage/context-usage.js';
import { usageOf, type UsageFact } from '../usage/usage-log.js';
import { MessageQueue, type QueuedMessage } from './queue.js';
import { DeliveryFailed, type DeliveryRetry, type OutputKind, type SessionRuntime } from './runtime.js';
import type { SessionEventLog } from './session-events.js';
import type { SessionRecord } from './session-store.js';
import type { Transcript } from './transcript.js';
import type { TranscriptWriter } from './transcript-writer.js';
import { categoryOf, type TurnFailure } from './turn-failure.js';

/** How much of its latest output a session keeps in memory for `last_output`. */
const LAST_OUTPUT_CHARS = 2000;

/** A turn the provider's service failed, as the tick weighs it (rate limits and refused keys are not crashes). */
export interface TurnFailureNote {
  category: string;
  message: string;
  at: number;
}

/** A message's request, ended by its delivery (or failed with the session). */
export interface MessageRequest {
  id: string;
  operation: 'session.message' | 'session.submit';
}

/** What the turns of a session need from the session around them. */
export interface TurnsHost {
  readonly record: SessionRecord;
  readonly state: SessionState;
  /** The program's runtime once it is ready to take a turn, else undefined. */
  readyRuntime(): SessionRuntime | undefined;
  writer: TranscriptWriter;
  events: SessionEventLog;
  logger: Logger;
  save(changed: Partial<SessionRecord>): void;
  /** Tells the session's stream. */
  showActivity(activity: 'idle' | 'in-turn'): void;
  showPending(interaction: PendingInteraction): void;
  showPendingCleared(requestId: string): void;
  usage?: (fact: UsageFact) => void;
  /** The model chosen for it (its options) and its provider's context windows, where a turn does not say. */
  usageContext(): { model?: string; windows: Record<string, number> };
}

/**
 * A session's turns: its queue of messages (kept on disk), handed to the program one at a time and in order as it
 * can take them; the turns they open and what the program says in them; questions the program asks and their
 * answers; interrupts; the usage each turn reports.
 */
export class Turns {
  private readonly queue: MessageQueue;
  private activityNow: 'idle' | 'in-turn' = 'idle';
  private pendingInteraction: PendingInteraction | undefined;
  /** The number of the last turn opened (one per delivered message). */
  private turn = 0;
  /** Turns delivered and not yet ended, oldest first: output belongs to the first. */
  private openTurns: number[] = [];
  private lastOutputText = '';
  /** The turn `lastOutputText` ends with. */
  private lastOutputTurn = 0;
  private delivering = false;
  private interruptWanted = false;
  /** The message being handed to the program: nothing is queued ahead of it. */
  private inFlight: QueuedMessage | undefined;
  /** When the session last went idle: no turn, nothing queued, nothing asked. */
  private idleAt = Date.now();
  private lastFailure: TurnFailureNote | undefined;

  constructor(
    dir: string,
    transcript: Transcript,
    private readonly host: TurnsHost,
  ) {
    this.queue = new MessageQueue(dir);
    this.restoreFromTranscript(transcript);
  }

  get queued(): number {
    return this.queue.length;
  }

  get activity(): 'idle' | 'in-turn' {
    return this.activityNow;
  }

  get pending(): PendingInteraction | undefined {
    return this.pendingInteraction;
  }

  get lastOutput(): string {
    return this.lastOutputText;
  }

  /** Nothing to do: no turn, nothing queued, nothing asked. */
  get settled(): boolean {
    return (
      this.activityNow === 'idle' &&
      this.openTurns.length === 0 &&
      this.queue.length === 0 &&
      !this.delivering &&
      this.pendingInteraction === undefined
    );
  }

  get inTurn(): boolean {
    return this.activityNow === 'in-turn' || this.openTurns.length > 0;
  }

  get idleSince(): number {
    return this.idleAt;
  }

  get lastTurnFailure(): TurnFailureNote | undefined {
    return this.lastFailure;
  }

  /** Queues a message (delivered when the program can take it); returns its id. */
  enqueue(text: string, intent: SubmitIntent, request?: MessageRequest): string {
    const message: QueuedMessage = {
      message_id: `msg-${randomBytes(8).toString('hex')}`,
      text,
      intent,
      queued:
        !this.host.readyRuntime() ||
        this.delivering ||
        this.queue.length > 0 ||
        this.activityNow === 'in-turn' ||
        this.pendingInteraction !== undefined,
      accepted_at: new Date().toISOString(),
      ...(request ? { request_id: request.id, operation: request.operation } : {}),
    };
    // interrupt_now ends the turn in progress and goes next, ahead of what waits.
    if (intent === 'interrupt_now') this.queue.pushAhead(message, this.inFlight);
    else this.queue.push(message);
    if (intent === 'interrupt_now' && this.activityNow === 'in-turn') this.interruptWanted = true;
    void this.deliverNext();
    return message.message_id;
  }

  /** The first message, for a program started with it on its command line. */
  firstMessage(): QueuedMessage | undefined {
    return this.queue.peek();
  }

  /** The first message went in with the program's start: its turn is open. */
  async deliveredWithStart(first: QueuedMessage): Promise<void> {
    await this.delivered(this.queue.take(first));
  }

  /** Hands queued messages to the program, one at a time, in order, as it becomes able to take them. */
  async deliverNext(): Promise<void> {
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (;;) {
        const next = this.queue.peek();
        const runtime = this.host.readyRuntime();
        if (!next || !runtime || this.pendingInteraction) return;
        // A draining session finishes the turn it has and takes no other.
        if (this.host.state === 'draining') return;
        const busy = this.openTurns.length > 0;
        if (next.intent === 'interrupt_now' && busy) {
          if (this.interruptWanted) {
            this.interruptWanted = false;
            await runtime.interrupt();
          }
          return; // delivered when the turn has ended
        }
        // A program that takes one turn at a time gets the next message when it has answered the last.
        if (busy && (next.intent === 'follow_up' || !runtime.capabilities.concurrentTurns)) return;
        this.inFlight = next;
        try {
          await runtime.deliver({ id: next.message_id, text: next.text });
        } catch (err) {
          if (err instanceof DeliveryFailed && runtime.isRunning()) {
            await this.deliveryFailed(this.queue.take(next), err);
            continue;
          }
          // The program went away: its exit fails what is left.
          this.host.logger.debug({ err, session: this.host.record.id }, 'a message could not be delivered');
          return;
        } finally {
          this.inFlight = undefined;
        }
        await this.delivered(this.queue.take(next));
      }
    } finally {
      this.delivering = false;
    }
  }

  /** An attempt at delivering the first queued message failed, and the runtime tries again. */
  deliveryRetried(retry: DeliveryRetry): void {
    const message = this.queue.peek();
    if (!message) return;
    this.logged(this.host.events.delivery(message, retry), 'session.delivery_retried');
  }

  /** Answers the question the program asks; the request id answered. */
  async respond(
    runtime: SessionRuntime,
    answer: { action: string; request_id?: string; text?: string },
  ): Promise<string> {
    const id = this.host.record.id;
    const pending = this.pendingInteraction;
    if (!pending) throw new Problem('conflict-wrong-state', `conflict: session ${id} has no pending interaction`);
    if (answer.request_id !== undefined && answer.request_id !== pending.request_id) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: session ${id} is waiting on ${pending.request_id}, not ${answer.request_id}`,
      );
    }
    if (pending.kind === 'tool-approval' && answer.action !== 'allow' && answer.action !== 'deny') {
      const message = 'a permission request is answered with allow or deny';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.action', message, value: answer.action }],
      });
    }
    if (pending.kind === 'question' && answer.text === undefined && answer.action !== 'answer') {
      const message = 'a question is answered with action "answer" and the answer in text';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.action', message, value: answer.action }],
      });
    }
    await runtime.respond(pending.request_id, answer);
    return pending.request_id;
  }

  /** Fails every undelivered message's request (the program is gone, or the session closed). */
  async failQueued(code: string, message: string): Promise<void> {
    for (const queued of this.queue.drain()) {
      if (!queued.request_id) continue;
      await this.host.events.requestFailed(queued.request_id, queued.operation!, code, message);
    }
  }

  /** The program became ready: idle from now. */
  ready(): void {
    this.idleAt = Date.now();
  }

  /** The program ended: its turns with it. */
  programEnded(): void {
    this.openTurns = [];
    this.setActivity('idle');
  }

  // ---- what the program says

  output(kind: OutputKind, text: string, data?: Record<string, unknown>): void {
    this.host.record.last_active = new Date().toISOString();
    if (data?.compaction === true) {
      const compactions = (this.host.record.compactions ?? 0) + 1;
      this.host.record.compactions = compactions;
      this.host.save({ compactions });
    }
    if (kind === 'assistant') {
      // A streamed chunk continues the reply of its turn; anything else starts a line.
      const continues = data?.chunk === true && this.lastOutputTurn === this.currentTurn();
      const separator = this.lastOutputText && !continues ? '\n' : '';
      this.lastOutputText = (this.lastOutputText + separator + text).slice(-LAST_OUTPUT_CHARS);
      this.lastOutputTurn = this.currentTurn();
    }
    void this.host.writer.write({
      kind,
      actor: kind === 'error' ? 'ctl' : 'assistant',
      text,
      data: { turn: this.currentTurn(), ...data },
    });
  }

  /** The program began a turn of its own: a turn like any other, opened by a notice instead of a message. */
  begunByProgram(reason: string): void {
    this.turn++;
    this.openTurns.push(this.turn);
    this.host.record.last_active = new Date().toISOString();
    this.setActivity('in-turn');
    void this.host.writer.write({
      kind: 'notice',
      actor: 'assistant',
      text: reason,
      data: { turn: this.turn, program_turn: true },
    });
  }

  turnEnded(data: Record<string, unknown> | undefined, failure: TurnFailure | undefined): void {
    const ended = this.openTurns.shift() ?? this.turn;
    const record = this.host.record;
    if (data) {
      this.recordUsage(data);
      record.usage = withTurnUsage(record.usage, data, this.host.usageContext());
    }
    if (this.openTurns.length === 0) this.setActivity('idle');
    this.host.save({ last_active: record.last_active, ...(record.usage ? { usage: record.usage } : {}) });
    const category = failure ? categoryOf(failure) : undefined;
    if (failure) this.lastFailure = { category: category!, message: failure.message, at: Date.now() };
    void this.host.writer
      .write({
        kind: 'turn_end',
        actor: 'ctl',
        data: { turn: ended, ...data, ...(failure ? { error: failure.message, error_category: category } : {}) },
      })
      .then(() => this.deliverNext());
    if (failure) this.logged(this.host.events.turnFailed(ended, failure, category!), 'session.turn_failed');
  }

  asked(interaction: PendingInteraction): void {
    this.pendingInteraction = interaction;
    this.host.writer.inOrder(() => this.host.showPending(interaction));
    void this.host.writer.write({
      kind: 'pending',
      actor: 'assistant',
      text: interaction.prompt ?? interaction.kind,
      data: {
        turn: this.currentTurn(),
        request_id: interaction.request_id,
        pending_kind: interaction.kind,
        options: interaction.options,
        metadata: interaction.metadata,
      },
    });
    this.logged(this.host.events.pending(interaction), 'session.pending');
  }

  answered(requestId: string, action: string): void {
    if (this.pendingInteraction?.request_id === requestId) this.pendingInteraction = undefined;
    this.host.writer.inOrder(() => this.host.showPendingCleared(requestId));
    void this.host.writer.write({
      kind: 'pending_cleared',
      actor: action === 'abandoned' ? 'ctl' : 'user',
      text: action,
      data: { turn: this.currentTurn(), request_id: requestId, action },
    });
    this.logged(this.host.events.pendingCleared(requestId, action), 'session.pending_cleared');
    void this.deliverNext();
  }

  /** The turn output belongs to now: the oldest one not yet ended, else the last one. */
  private currentTurn(): number {
    return this.openTurns[0] ?? this.turn;
  }

  private async delivered(message: QueuedMessage): Promise<void> {
    this.turn++;
    this.openTurns.push(this.turn);
    this.host.record.last_active = new Date().toISOString();
    this.setActivity('in-turn');
    await this.host.writer.write({
      kind: 'user',
      actor: 'user',
      text: message.text,
      data: { turn: this.turn, message_id: message.message_id, intent: message.intent },
    });
    if (message.request_id) await this.host.events.delivered({ ...message, request_id: message.request_id });
  }

  /**
   * The runtime gave up on a message while its program runs: it is not the program's, so it leaves the queue
   * (the next one gets its own attempts), said in the conversation, on the event log and to its request.
   */
  private async deliveryFailed(message: QueuedMessage, failure: DeliveryFailed): Promise<void> {
    const id = this.host.record.id;
    this.host.logger.warn({ err: failure, session: id, message: message.message_id }, 'a message was not delivered');
    await this.host.writer.write({
      kind: 'error',
      actor: 'ctl',
      text: `message not delivered: ${failure.message}`,
      data: { turn: this.currentTurn(), message_id: message.message_id, text: message.text },
    });
    const attempt = { attempt: failure.attempts, attempts: failure.attempts, error: failure.message };
    this.logged(this.host.events.delivery(message, attempt), 'session.delivery_failed');
    if (message.request_id) {
      const failed = this.host.events.requestFailed(
        message.request_id,
        message.operation!,
        'delivery_failed',
        `session ${id}: ${failure.message}`,
      );
      this.logged(failed, 'request.failed');
    }
  }

  private setActivity(activity: 'idle' | 'in-turn'): void {
    if (this.activityNow === activity) return;
    this.activityNow = activity;
    if (activity === 'idle') this.idleAt = Date.now();
    this.host.writer.inOrder(() => this.host.showActivity(activity));
  }

  /** The turn's usage, when its provider reported any, for `GET /usage`. */
  private recordUsage(data: Record<string, unknown>): void {
    const used = this.host.usage ? usageOf(data) : undefined;
    if (!used) return;
    const r = this.host.record;
    this.host.usage!({
      ts: new Date().toISOString(),
      session_id: r.id,
      session: r.session_name,
      ...(r.kind === 'agent' ? { agent: r.template } : {}),
      provider: r.provider,
      ...used,
      ...(typeof data.duration_ms === 'number' ? { duration_ms: data.duration_ms } : {}),
    });
  }

  private logged(recording: Promise<void>, what: string): void {
    recording.catch((err: unknown) =>
      this.host.logger.error({ err, session: this.host.record.id }, `could not record ${what}`),
    );
  }

  /** The turn count and latest output, from the end of the transcript (a restarted controller goes on from them). */
  private restoreFromTranscript(transcript: Transcript): void {
    const { entries } = transcript.tail(200);
    const output: string[] = [];
    for (const record of entries.reverse()) {
      const payload = (record.payload ?? {}) as { turn?: unknown; text?: unknown };
      if (this.turn === 0 && typeof payload.turn === 'number') this.turn = payload.turn;
      if (
        record.type === 'assistant' &&
        typeof payload.text === 'string' &&
        output.join('\n').length < LAST_OUTPUT_CHARS
      ) {
        output.unshift(payload.text);
      }
      if (record.type === 'user' && output.length) break;
    }
    this.lastOutputText = output.join('\n').slice(-LAST_OUTPUT_CHARS);
  }
}
