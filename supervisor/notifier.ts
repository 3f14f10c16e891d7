import type { Logger } from 'pino';
import type { NotifyConfig } from '../shared/config/notify-config.js';
import type { NotifyFailedPayload } from '../shared/dto/events.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { EventRecord } from '../shared/events/record.js';
import { SUPERVISOR_SCOPE } from '../shared/paths.js';
import type { EventHub } from './event-hub.js';
import { DeliveryFailure, postWebhook, runCommand } from './notice-delivery.js';
import { noticeOf, type Notice } from './notices.js';

/** Notices waiting for a channel beyond this many are dropped (and said so): a stuck webhook must not grow us. */
const QUEUE_LIMIT = 100;

type Channel = 'webhook' | 'command';

/**
 * `[notify]` at work: follows every city's log through the event hub (what the supervisor stream reads), makes
 * a notice of each event of a kind the person chose, and hands it to each channel in turn — one notice at a
 * time per channel, in order. A notice that cannot be delivered is logged and recorded as `notify.failed` in
 * the supervisor's log. Events written while the supervisor was down are not notified afterwards: a notice is
 * about now.
 */
export class Notifier {
  private readonly stopping = new AbortController();
  private readonly queues = new Map<Channel, Notice[]>();
  private readonly busy = new Set<Channel>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly config: NotifyConfig,
    private readonly options: { hub: EventHub; supervisorLog: EventLog; logger: Logger; base: () => string },
  ) {}

  start(): void {
    this.unsubscribe = this.options.hub.subscribe({
      records: (scope, records) => this.take(scope, records),
      sourceAdded: () => undefined,
    });
  }

  /** Stops taking events and ends what is being delivered (a command's group, a webhook request). */
  close(): void {
    this.unsubscribe?.();
    this.stopping.abort();
    this.queues.clear();
  }

  private take(scope: string, records: EventRecord[]): void {
    if (scope === SUPERVISOR_SCOPE) return;
    for (const record of records) {
      const notice = noticeOf(scope, record, this.options.base());
      if (!notice || !this.config.kinds.includes(notice.kind)) continue;
      if (this.config.webhook) this.enqueue('webhook', notice);
      if (this.config.command) this.enqueue('command', notice);
    }
  }

  private enqueue(channel: Channel, notice: Notice): void {
    const queue = this.queues.get(channel) ?? [];
    this.queues.set(channel, queue);
    if (queue.length >= QUEUE_LIMIT) {
      void this.failed(channel, notice, new DeliveryFailure(`${QUEUE_LIMIT} notices already wait for it`, 0));
      return;
    }
    queue.push(notice);
    void this.drain(channel);
  }

  private async drain(channel: Channel): Promise<void> {
    if (this.busy.has(channel)) return;
    this.busy.add(channel);
    try {
      for (let notice = this.queues.get(channel)?.shift(); notice; notice = this.queues.get(channel)?.shift()) {
        if (this.stopping.signal.aborted) return;
        try {
          const attempts = await this.deliver(channel, notice);
          this.options.logger.info(
            { channel, kind: notice.kind, city: notice.city, seq: notice.event.seq, attempts },
            'notice delivered',
          );
        } catch (err) {
          if (this.stopping.signal.aborted) return;
          await this.failed(channel, notice, err);
        }
      }
    } finally {
      this.busy.delete(channel);
    }
  }

  private deliver(channel: Channel, notice: Notice): Promise<number> {
    const signal = this.stopping.signal;
    return channel === 'webhook'
      ? postWebhook(this.config.webhook!, notice, signal)
      : runCommand(this.config.command!, notice, signal);
  }

  private async failed(channel: Channel, notice: Notice, err: unknown): Promise<void> {
    const error = (err as Error).message;
    const attempts = err instanceof DeliveryFailure ? err.attempts : 1;
    this.options.logger.warn(
      { channel, kind: notice.kind, city: notice.city, seq: notice.event.seq, attempts, error },
      'notice not delivered',
    );
    const payload: NotifyFailedPayload = {
      kind: notice.kind,
      channel,
      city: notice.city,
      event_type: notice.event.type,
      event_seq: notice.event.seq,
      error,
      attempts,
    };
    try {
      await this.options.supervisorLog.append({
        type: 'notify.failed',
        actor: 'ctl',
        subject: notice.city,
        message: `a ${notice.kind} notice did not reach its ${channel}: ${error}`,
        payload,
      });
    } catch (appendErr) {
      this.options.logger.error({ err: appendErr }, 'could not record notify.failed');
    }
  }
}
