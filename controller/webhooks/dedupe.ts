import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

/**
 * How long an accepted delivery is remembered: providers retry for up to about three days (Stripe, Svix-based
 * senders) and GitHub offers "Redeliver" on the last three days' deliveries.
 */
export const DEDUPE_WINDOW_MS = 72 * 3_600_000;
/**
 * How many keys a city remembers at most — 10,000 deliveries, each known by its id and its body's hash; past it
 * the webhook that overflowed it forgets its own oldest first.
 */
export const DEDUPE_MAX_KEYS = 20_000;

/** An accepted delivery: when, and the order firing it made. */
export interface SeenDelivery {
  at: number;
  tracking?: string;
}

/** A claimed delivery, to settle with its firing's tracking bead, or release when it did not fire. */
export interface Claim {
  settle(tracking: string): void;
  release(): void;
}

/** The one-way digest of a body: a dedupe key for a delivery that carries no id, and safe to record. */
export function bodyHash(body: Buffer): string {
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}

type Line = { k: [string, string]; at: number; t?: string } | { drop: [string, string] };

/**
 * The deliveries a city's webhooks accepted, by webhook and key (a provider's delivery id, a signed token id, the
 * body's hash): a redelivery of one is a duplicate, answered without firing again. Kept in a file of the city
 * (`.ctl/webhook-deliveries.jsonl`, appended to and rewritten when half of it is stale) so a controller restart
 * forgets none, and bounded: DEDUPE_WINDOW_MS, DEDUPE_MAX_KEYS.
 */
export class DeliveryLedger {
  private readonly entries = new Map<string, SeenDelivery>();
  private lines = 0;
  private dirMade = false;

  constructor(
    private readonly file: string,
    private readonly o: { windowMs?: number; max?: number; now?: () => number; logger?: Logger } = {},
  ) {
    this.load();
  }

  private get windowMs(): number {
    return this.o.windowMs ?? DEDUPE_WINDOW_MS;
  }

  private get max(): number {
    return this.o.max ?? DEDUPE_MAX_KEYS;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** The earlier acceptance of any of `keys` for `hook`, if one is remembered. */
  seen(hook: string, keys: string[]): SeenDelivery | undefined {
    const now = this.now();
    for (const key of keys) {
      const entry = this.entries.get(ledgerKey(hook, key));
      if (entry && now - entry.at < this.windowMs) return entry;
    }
    return undefined;
  }

  /**
   * Records `keys` for `hook` before its order fires, so a redelivery arriving meanwhile is a duplicate too. The
   * caller checked `seen` first; between the two nothing awaits.
   */
  claim(hook: string, keys: string[]): Claim {
    const at = this.now();
    this.put(hook, keys, { at });
    this.trim(hook, keys);
    return {
      settle: (tracking) => this.put(hook, keys, { at, tracking }),
      release: () => {
        for (const key of keys) this.entries.delete(ledgerKey(hook, key));
        this.append(keys.map((key) => ({ drop: [hook, key] })));
      },
    };
  }

  private put(hook: string, keys: string[], entry: SeenDelivery): void {
    for (const key of keys) {
      const k = ledgerKey(hook, key);
      this.entries.delete(k); // re-inserted last: the map stays in order of acceptance
      this.entries.set(k, entry);
    }
    this.append(
      keys.map((key) => ({ k: [hook, key], at: entry.at, ...(entry.tracking ? { t: entry.tracking } : {}) })),
    );
  }

  /** Past the window entries go; past the count, the oldest of the webhook that overflowed it (not its neighbours'). */
  private trim(hook: string, protect: string[]): void {
    const now = this.now();
    // In order of acceptance: the stale ones are first.
    for (const [k, e] of this.entries) {
      if (now - e.at < this.windowMs) break;
      this.entries.delete(k);
    }
    if (this.entries.size > this.max) {
      const kept = new Set(protect.map((key) => ledgerKey(hook, key)));
      for (const k of this.entries.keys()) {
        if (this.entries.size <= this.max) break;
        if (k.startsWith(`${hook}\0`) && !kept.has(k)) this.entries.delete(k);
      }
    }
    if (this.lines > 2 * this.entries.size + 1000) this.compact();
  }

  private append(lines: Line[]): void {
    try {
      if (!this.dirMade) mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      this.dirMade = true;
      appendFileSync(this.file, lines.map((line) => `${JSON.stringify(line)}\n`).join(''), { mode: 0o600 });
      this.lines += lines.length;
    } catch (err) {
      // Memory still dedupes until a restart; the file is what a restart would have lost.
      this.o.logger?.error({ err, file: this.file }, 'webhook delivery ledger not written');
    }
  }

  private compact(): void {
    const text = [...this.entries].map(([k, e]) => {
      const [hook, key] = k.split('\0') as [string, string];
      return `${JSON.stringify({ k: [hook, key], at: e.at, ...(e.tracking ? { t: e.tracking } : {}) })}\n`;
    });
    try {
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, text.join(''), { mode: 0o600 });
      renameSync(tmp, this.file);
      this.lines = text.length;
    } catch (err) {
      this.o.logger?.error({ err, file: this.file }, 'webhook delivery ledger not compacted');
    }
  }

  private load(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.o.logger?.error({ err, file: this.file }, 'webhook delivery ledger not read');
      }
      return;
    }
    const now = this.now();
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      this.lines += 1;
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        continue; // a line cut short by a crash: the ones before it stand
      }
      if ('drop' in line) this.entries.delete(ledgerKey(...line.drop));
      else if (Array.isArray(line.k) && now - line.at < this.windowMs) {
        this.entries.delete(ledgerKey(...line.k));
        this.entries.set(ledgerKey(...line.k), { at: line.at, ...(line.t ? { tracking: line.t } : {}) });
      }
    }
    // A claim never settled was made by a controller that ended before its order fired (or while it did, and
    // that firing was closed as cut off): the sender's redelivery must be able to fire it.
    for (const [k, e] of this.entries) if (e.tracking === undefined) this.entries.delete(k);
    if (this.entries.size > this.max) {
      for (const k of [...this.entries.keys()].slice(0, this.entries.size - this.max)) this.entries.delete(k);
    }
    if (this.lines > 2 * this.entries.size + 1000) this.compact();
  }
}

function ledgerKey(hook: string, key: string): string {
  return `${hook}\0${key}`;
}
