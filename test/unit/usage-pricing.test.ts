import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { PricingEntry } from '../../shared/config/city-config-types.js';
import { UsageLog, type UsageFact } from '../../controller/usage/usage-log.js';
import { parseCityConfig } from '../../shared/config/city-config.js';

function fact(provider: string, cost?: number): UsageFact {
  return {
    ts: new Date().toISOString(),
    session_id: `s-${provider}`,
    session: provider,
    provider,
    input_tokens: 1_000_000,
    output_tokens: 200_000,
    cache_read_tokens: 500_000,
    cache_creation_tokens: 0,
    ...(cost !== undefined ? { cost_usd: cost } : {}),
  };
}

describe('usage pricing and recording (unit)', function () {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-usage-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("prices a provider's turns by [[pricing]] (over what it reports); others keep their own cost or are unpriced", function () {
    let pricing: PricingEntry[] = [
      { provider: 'codex', input: 1.25, output: 10, cache_read: 0.125, cache_creation: 0 },
      { provider: 'claude', input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75 },
    ];
    const log = new UsageLog(join(dir, 'usage.jsonl'), { pricing: () => pricing });
    log.record(fact('codex'));
    log.record(fact('claude', 0.5));
    log.record(fact('gemini', 0.25));
    log.record(fact('opencode'));
    const body = log.summary({ aggregateOnly: false });
    const cost = (name: string) => body.by_provider!.find((p) => p.name === name)!;
    // 1M × $1.25 + 0.2M × $10 + 0.5M × $0.125
    expect(cost('codex')).to.include({ cost_usd_estimate: 3.3125, unpriced: 0 });
    // 1M × $3 + 0.2M × $15 + 0.5M × $0.3 (its own report of $0.5 is not used)
    expect(cost('claude')).to.include({ cost_usd_estimate: 6.15, unpriced: 0 });
    expect(cost('gemini')).to.include({ cost_usd_estimate: 0.25, unpriced: 0 });
    expect(cost('opencode')).to.include({ cost_usd_estimate: 0, unpriced: 1 });
    expect(body).to.include({ available: true, recording: true, source: 'local_estimate' });
    // A price changed later applies to the turns after it.
    pricing = [];
    log.record(fact('codex'));
    expect(log.summary({ aggregateOnly: true }).all).to.include({ unpriced: 2 });
  });

  it('says it is not recording while usage.jsonl cannot be written, and recording again once it can', function () {
    const log = new UsageLog(join(dir, 'missing', 'usage.jsonl'));
    log.record(fact('codex'));
    const failing = log.summary({ aggregateOnly: true });
    expect(failing).to.include({ available: true, recording: false, partial: true });
    expect(failing.partial_reasons![0]).to.match(/^usage\.jsonl cannot be written: ENOENT/);
    mkdirSync(join(dir, 'missing'));
    log.record(fact('codex'));
    const working = log.summary({ aggregateOnly: true });
    expect(working).to.include({ recording: true });
    expect(working.all?.invocations).to.equal(1);
  });

  it('reads [[pricing]] from city.toml (absent prices are 0) and refuses a bad one, naming it', function () {
    const city = (pricing: string) => parseCityConfig(`[workspace]\nname = "c"\n${pricing}`, 'city.toml');
    expect(city('[[pricing]]\nprovider = "codex"\ninput = 1.25\noutput = 10\n').pricing).to.deep.equal([
      { provider: 'codex', input: 1.25, output: 10, cache_read: 0, cache_creation: 0 },
    ]);
    expect(() => city('[[pricing]]\nprovider = "codex"\ninput = -1\n')).to.throw(
      /pricing\[0\]\.input must be a price in US dollars per million tokens/,
    );
    expect(() => city('[[pricing]]\ninput = 1\n')).to.throw(/pricing\[0\]\.provider is required/);
    expect(() => city('[[pricing]]\nprovider = "a"\n[[pricing]]\nprovider = "a"\n')).to.throw(/a is priced twice/);
  });
});
