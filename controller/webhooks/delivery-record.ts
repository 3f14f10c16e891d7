import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { WebhookRejectedPayload } from '../../shared/dto/webhooks.js';
import type { EventLog } from '../../shared/events/event-log.js';

/** The newest deliveries' bodies kept for the orders they fired (older ones are removed as new ones come). */
const KEPT_PAYLOADS = 200;
/** Rejections recorded per webhook per minute: a sender anyone can reach must not be able to flood the log. */
const REJECTIONS_PER_MINUTE = 20;

/** `webhook.rejected`, at most REJECTIONS_PER_MINUTE a minute per webhook; past that only logged, once. */
export class RejectionLog {
  private readonly counts = new Map<string, { minute: number; count: number }>();

  constructor(
    private readonly log: EventLog,
    private readonly logger?: Logger,
  ) {}

  async record(payload: WebhookRejectedPayload): Promise<void> {
    const minute = Math.floor(Date.now() / 60_000);
    const seen = this.counts.get(payload.webhook);
    const count = seen?.minute === minute ? seen.count + 1 : 1;
    this.counts.set(payload.webhook, { minute, count });
    if (count > REJECTIONS_PER_MINUTE) {
      if (count === REJECTIONS_PER_MINUTE + 1)
        this.logger?.warn({ webhook: payload.webhook }, 'webhook rejections past the per-minute record limit');
      return;
    }
    await this.log.append({
      type: 'webhook.rejected',
      actor: 'webhook',
      subject: payload.webhook,
      message: `webhook ${payload.webhook} refused a delivery: ${payload.reason}`,
      payload,
    });
  }
}

/** Keeps a delivery's body in a file for the order it fires; the oldest beyond KEPT_PAYLOADS go. */
export function keepPayload(dir: string, body: Buffer): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = `${Date.now().toString().padStart(15, '0')}-${process.hrtime.bigint()}.body`;
  const file = join(dir, name);
  writeFileSync(file, body, { mode: 0o600 });
  const kept = readdirSync(dir)
    .filter((f) => f.endsWith('.body'))
    .sort();
  for (const old of kept.slice(0, Math.max(0, kept.length - KEPT_PAYLOADS))) rmSync(join(dir, old), { force: true });
  return file;
}
