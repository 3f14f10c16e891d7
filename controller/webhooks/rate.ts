import type { RateLimit } from './webhook-config.js';

/**
 * Per-webhook token buckets: `perMinute` sustained, up to `burst` at once. The limit is given with each delivery
 * (a reload of `city.toml` takes effect on the next one). Buckets live in memory: a restart refills them, which
 * lets through at most one more burst.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Takes a token for `name`; when there is none, how many seconds until there is (for `Retry-After`). */
  take(name: string, limit: RateLimit): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    const now = this.now();
    if (limit.perMinute <= 0) return { allowed: false, retryAfterSeconds: 60 };
    const perMs = limit.perMinute / 60_000;
    const bucket = this.buckets.get(name) ?? { tokens: limit.burst, at: now };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
    bucket.at = now;
    this.buckets.set(name, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }

  /** Forgets webhooks no longer configured (their buckets would otherwise stay). */
  keepOnly(names: Set<string>): void {
    for (const name of this.buckets.keys()) if (!names.has(name)) this.buckets.delete(name);
  }
}
