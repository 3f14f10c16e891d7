import { appendFileSync, closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Logger } from 'pino';
import type { PricingEntry } from '../../shared/config/city-config-types.js';
import type { UsageBody, UsageGroup, UsageSessionRecent, UsageTotals } from '../../shared/dto/usage.js';

/** What one turn cost, as its provider reported it, with who it was for. */
export interface UsageFact {
  ts: string;
  session_id: string;
  session: string;
  /** The agent, for an agent's session. */
  agent?: string;
  provider: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  /** What the turn cost: by the city's `[[pricing]]` for its provider, else as the provider said; absent: unpriced. */
  cost_usd?: number;
  /** Where `cost_usd` comes from: the city's `[[pricing]]`, or the provider's own report. */
  priced_by?: 'pricing' | 'provider';
  /** How long the turn took, when the provider said. */
  duration_ms?: number;
}

/** The most of the log read per request: the newest facts, enough for weeks of a busy city. */
const READ_MAX_BYTES = 16 * 1024 * 1024;
/** The recent window (`recent`, `recent_by_session`). */
const RECENT_WINDOW_S = 3600;

/**
 * The usage the providers report, one fact per turn, kept in `<city>/.ctl/usage.jsonl` (appended as each turn
 * ends) and summed on request: today (since local midnight), the last 24 hours, the recent hour by session, and
 * everything read by session, agent and provider.
 */
export class UsageLog {
  /** Why the last fact could not be written (the log is not recording until one is). */
  private writeError: string | undefined;

  constructor(
    private readonly path: string,
    private readonly deps: { pricing?: () => readonly PricingEntry[]; logger?: Logger } = {},
  ) {}

  /** Records a turn's usage, priced by the city's `[[pricing]]` for its provider when it has one. */
  record(fact: UsageFact): void {
    const price = this.deps.pricing?.().find((p) => p.provider === fact.provider);
    const priced: UsageFact = price
      ? { ...fact, cost_usd: costOf(fact, price), priced_by: 'pricing' }
      : fact.cost_usd !== undefined
        ? { ...fact, priced_by: 'provider' }
        : fact;
    try {
      appendFileSync(this.path, `${JSON.stringify(priced)}\n`);
      this.writeError = undefined;
    } catch (err) {
      this.writeError = (err as Error).message;
      this.deps.logger?.error({ err, path: this.path }, 'could not record a turn’s usage');
    }
  }

  summary(options: { aggregateOnly: boolean; now?: number }): UsageBody {
    const now = options.now ?? Date.now();
    const { facts, partialReasons, unreadable } = this.read();
    if (this.writeError) partialReasons.push(`usage.jsonl cannot be written: ${this.writeError}`);
    const midnight = new Date(now);
    midnight.setHours(0, 0, 0, 0);
    const since = (ms: number) => facts.filter((f) => Date.parse(f.ts) >= ms);
    const recentFacts = since(now - RECENT_WINDOW_S * 1000);
    const body: UsageBody = {
      available: !unreadable,
      recording: this.writeError === undefined,
      source: unreadable ? 'unavailable' : 'local_estimate',
      today: totals(since(midnight.getTime())),
      last_24h: totals(since(now - 86_400_000)),
      recent: totals(recentFacts),
      recent_window_secs: RECENT_WINDOW_S,
      all: totals(facts),
      updated_at: new Date(now).toISOString(),
      ...(facts.length ? { observed_from: facts[0]!.ts } : {}),
      ...(partialReasons.length ? { partial: true, partial_reasons: partialReasons } : {}),
    };
    if (!options.aggregateOnly) {
      body.recent_by_session = bySession(recentFacts);
      body.by_session = groups(facts, (f) => f.session);
      body.by_agent = groups(
        facts.filter((f) => f.agent),
        (f) => f.agent!,
      );
      body.by_provider = groups(facts, (f) => f.provider);
    }
    return body;
  }

  /** The newest facts (at most READ_MAX_BYTES of the log), oldest first. */
  private read(): { facts: UsageFact[]; partialReasons: string[]; unreadable?: boolean } {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch (err) {
      // None yet: nothing recorded. Anything else: the log is there but cannot be read.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { facts: [], partialReasons: [] };
      this.deps.logger?.error({ err, path: this.path }, 'could not read usage.jsonl');
      return { facts: [], partialReasons: [`usage.jsonl cannot be read: ${(err as Error).message}`], unreadable: true };
    }
    const partialReasons: string[] = [];
    try {
      const size = fstatSync(fd).size;
      const start = Math.max(0, size - READ_MAX_BYTES);
      const buffer = Buffer.alloc(size - start);
      readSync(fd, buffer, 0, buffer.length, start);
      let text = buffer.toString('utf8');
      if (start > 0) {
        text = text.slice(text.indexOf('\n') + 1);
        partialReasons.push(`only the newest ${READ_MAX_BYTES / 1024 / 1024} MiB of usage.jsonl were read`);
      }
      const facts: UsageFact[] = [];
      let malformed = 0;
      for (const line of text.split('\n')) {
        if (!line) continue;
        try {
          facts.push(JSON.parse(line) as UsageFact);
        } catch {
          malformed++;
        }
      }
      if (malformed) partialReasons.push(`${malformed} malformed line(s) of usage.jsonl skipped`);
      return { facts, partialReasons };
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * A turn's usage in the shape its protocol reports it — Anthropic's (`input_tokens`, `output_tokens`,
 * `cache_read_input_tokens`, `cache_creation_input_tokens`, with Claude Code's `total_cost_usd` beside it),
 * Codex's (`input_tokens`, `cached_input_tokens`, `output_tokens`), or ACP's `usage_update` (`used`, `cost`) —
 * as token counts and a cost; undefined when it holds none.
 */
export function usageOf(
  data: Record<string, unknown>,
):
  | Pick<UsageFact, 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_creation_tokens' | 'cost_usd'>
  | undefined {
  const usage = data.usage;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const n = (key: string) => (typeof u[key] === 'number' && Number.isFinite(u[key]) ? u[key] : 0);
  const cost =
    typeof data.total_cost_usd === 'number'
      ? data.total_cost_usd
      : typeof (u.cost as { amount?: unknown } | undefined)?.amount === 'number'
        ? (u.cost as { amount: number }).amount
        : undefined;
  const fact = {
    input_tokens: n('input_tokens') || n('used'),
    output_tokens: n('output_tokens'),
    cache_read_tokens: n('cache_read_input_tokens') || n('cached_input_tokens'),
    cache_creation_tokens: n('cache_creation_input_tokens'),
    ...(cost !== undefined ? { cost_usd: cost } : {}),
  };
  const any = fact.input_tokens + fact.output_tokens + fact.cache_read_tokens + fact.cache_creation_tokens > 0;
  return any || cost !== undefined ? fact : undefined;
}

/** A turn's cost by a `[[pricing]]` entry: its tokens at the entry's prices per million. */
function costOf(fact: UsageFact, price: PricingEntry): number {
  const usd =
    fact.input_tokens * price.input +
    fact.output_tokens * price.output +
    fact.cache_read_tokens * price.cache_read +
    fact.cache_creation_tokens * price.cache_creation;
  return Math.round((usd / 1e6) * 1e9) / 1e9;
}

function totals(facts: UsageFact[]): UsageTotals {
  const sum = (pick: (f: UsageFact) => number) => facts.reduce((acc, f) => acc + pick(f), 0);
  return {
    invocations: facts.length,
    compute_facts: facts.filter((f) => f.duration_ms !== undefined).length,
    input_tokens: sum((f) => f.input_tokens),
    output_tokens: sum((f) => f.output_tokens),
    cache_read_tokens: sum((f) => f.cache_read_tokens),
    cache_creation_tokens: sum((f) => f.cache_creation_tokens),
    wall_seconds: sum((f) => f.duration_ms ?? 0) / 1000,
    cost_usd_estimate: Math.round(sum((f) => f.cost_usd ?? 0) * 1e6) / 1e6,
    unpriced: facts.filter((f) => f.cost_usd === undefined).length,
  };
}

function groups(facts: UsageFact[], key: (f: UsageFact) => string): UsageGroup[] {
  const byKey = new Map<string, UsageFact[]>();
  for (const f of facts) byKey.set(key(f), [...(byKey.get(key(f)) ?? []), f]);
  return [...byKey]
    .map(([name, list]) => ({ name, ...totals(list) }))
    .sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens));
}

function bySession(facts: UsageFact[]): UsageSessionRecent[] {
  const byId = new Map<string, UsageFact[]>();
  for (const f of facts) byId.set(f.session_id, [...(byId.get(f.session_id) ?? []), f]);
  return [...byId.values()]
    .map((list) => {
      const t = totals(list);
      return {
        session: list[0]!.session,
        session_id: list[0]!.session_id,
        input_tokens: t.input_tokens,
        output_tokens: t.output_tokens,
        cache_read_tokens: t.cache_read_tokens,
        cache_creation_tokens: t.cache_creation_tokens,
        cost_usd_estimate: t.cost_usd_estimate,
        unpriced: t.unpriced,
      };
    })
    .sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens));
}
