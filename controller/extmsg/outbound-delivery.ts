import type { Logger } from 'pino';
import type { EventLog } from '../../shared/events/event-log.js';
import type { ExtmsgStore, PendingDelivery } from './extmsg-store.js';

/** Attempts per message, and the back-off between them (doubling from the first, capped). */
const MAX_ATTEMPTS = 8;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
/** One POST to an adapter gets this long. */
const ATTEMPT_TIMEOUT_MS = 5000;

/** How the first attempt at a message went. */
export interface FirstAttempt {
  delivered: boolean;
  failure: '' | 'retrying' | 'failed';
  retryAfterMs: number;
}

/**
 * Outbound messages to adapters: each part POSTed as JSON to the adapter's `callback_url` in order; a part the
 * adapter does not take (no answer, not 2xx) is tried again with back-off, up to 8 attempts (about a minute),
 * then given up — every attempt's outcome recorded as `extmsg.outbound` (`delivered`, `retrying`, `failed`),
 * never dropped without a word. Messages still to deliver are kept in the store, so a controller restart goes
 * on with them; a part taken is never sent again.
 */
export class OutboundDelivery {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /**
   * Messages with an attempt under way. An adapter registering (again) resumes every pending message; one whose
   * POST is still out must not be sent a second time beside it — that attempt schedules its own retry.
   */
  private readonly inFlight = new Set<string>();
  private stopped = false;

  constructor(
    private readonly o: {
      store: ExtmsgStore;
      log: EventLog;
      logger?: Logger;
    },
  ) {}

  /** Retries what a previous controller left undelivered. */
  resume(): void {
    for (const pending of this.o.store.pending()) {
      if (this.inFlight.has(pending.message_id)) continue;
      this.schedule(pending, Math.max(0, pending.next_at - Date.now()));
    }
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Starts delivering a message; resolves with how its first attempt went. */
  async deliver(pending: PendingDelivery): Promise<FirstAttempt> {
    this.o.store.addPending(pending);
    return this.attempt(pending);
  }

  private schedule(pending: PendingDelivery, ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timers.get(pending.message_id));
    const timer = setTimeout(() => {
      this.timers.delete(pending.message_id);
      if (!this.inFlight.has(pending.message_id)) void this.attempt(pending);
    }, ms);
    timer.unref();
    this.timers.set(pending.message_id, timer);
  }

  private async attempt(pending: PendingDelivery): Promise<FirstAttempt> {
    this.inFlight.add(pending.message_id);
    try {
      return await this.attemptOnce(pending);
    } finally {
      this.inFlight.delete(pending.message_id);
    }
  }

  private async attemptOnce(pending: PendingDelivery): Promise<FirstAttempt> {
    pending.attempts += 1;
    const adapter = this.o.store.adapter(pending.provider, pending.account_id);
    let error: string | undefined;
    if (!adapter?.callback_url) {
      error = adapter ? 'the adapter has no callback_url' : 'the adapter is not registered';
    } else {
      while (pending.sent < pending.parts.length) {
        error = await post(
          adapter.callback_url,
          {
            provider: pending.provider,
            account_id: pending.account_id,
            message_id: pending.parts.length > 1 ? `${pending.message_id}.${pending.sent + 1}` : pending.message_id,
            conversation: pending.conversation,
            text: pending.parts[pending.sent],
            part: pending.sent + 1,
            parts: pending.parts.length,
            session_id: pending.session_id,
            ...(pending.reply_to_message_id ? { reply_to_message_id: pending.reply_to_message_id } : {}),
            ...(pending.attachments && pending.sent === pending.parts.length - 1
              ? { attachments: pending.attachments }
              : {}),
          },
          this.o.logger,
        );
        if (error) break;
        pending.sent += 1;
      }
    }
    const done = error === undefined;
    // What the adapters list tells a person: an adapter that stopped taking deliveries is not alive.
    if (adapter) this.o.store.noteDelivery(adapter, error);
    const giveUp = !done && pending.attempts >= MAX_ATTEMPTS;
    const retryAfterMs = done || giveUp ? 0 : Math.min(FIRST_RETRY_MS * 2 ** (pending.attempts - 1), MAX_RETRY_MS);
    const status = done ? 'delivered' : giveUp ? 'failed' : 'retrying';
    if (!done && !giveUp) {
      pending.next_at = Date.now() + retryAfterMs;
      this.schedule(pending, retryAfterMs);
    }
    this.o.store.updatePending(pending, done || giveUp);
    if (!done) this.o.logger?.warn({ message: pending.message_id, error, status }, 'outbound delivery failed');
    await this.o.log.append({
      type: 'extmsg.outbound',
      actor: 'ctl',
      subject: pending.conversation.conversation_id,
      ...(error ? { message: `delivery to ${pending.provider}/${pending.account_id}: ${error}` } : {}),
      payload: {
        provider: pending.provider,
        conversation_id: pending.conversation.conversation_id,
        session: pending.session_id,
        message_id: pending.message_id,
        status,
        attempts: pending.attempts,
        parts: pending.parts.length,
        ...(error ? { error } : {}),
      },
    });
    return { delivered: done, failure: done ? '' : giveUp ? 'failed' : 'retrying', retryAfterMs };
  }
}

/** One POST; undefined when the adapter took it (2xx), else why not. */
async function post(url: string, body: unknown, logger: Logger | undefined): Promise<string | undefined> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      redirect: 'error',
    });
    // The answer's body says nothing we use; a body cut short still leaves the status to go by.
    await res.arrayBuffer().catch((err: unknown) => logger?.debug({ err, url }, 'an adapter answer was cut short'));
    return res.ok ? undefined : `the adapter answered ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return `the adapter did not answer: ${cause ?? (err as Error).name}`;
  }
}
