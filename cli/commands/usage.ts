import type { UsageGroup, UsageTotals } from '../../shared/dto/usage.js';
import { call } from '../_api.js';
import { command } from '../_command.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';

function cost(t: UsageTotals): string {
  const known = `$${t.cost_usd_estimate.toFixed(4)}`;
  return t.unpriced ? `${known} (+${t.unpriced} unpriced)` : known;
}

function groupTable(title: string, groups: UsageGroup[]): void {
  if (groups.length === 0) return;
  line('');
  table<UsageGroup>(
    [
      { header: title, value: (g) => g.name, kind: 'id' },
      { header: 'TURNS', value: (g) => String(g.invocations) },
      { header: 'INPUT', value: (g) => String(g.input_tokens) },
      { header: 'OUTPUT', value: (g) => String(g.output_tokens) },
      { header: 'CACHE READ', value: (g) => String(g.cache_read_tokens) },
      { header: 'COST', value: (g) => cost(g) },
    ],
    groups,
  );
}

export const usageCommand = command({
  name: 'usage',
  description:
    'Tokens and cost of the city’s sessions, as their providers reported them: today, by agent, provider and session',
  examples: ['ctl usage', 'ctl usage --totals', 'ctl usage --json'],
  args: {
    totals: { type: 'boolean', description: 'Only the totals (today, last 24 h, the recent hour, all)' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/usage', {
        params: { path: cityPath(city), query: a.totals ? { aggregate_only: true } : {} },
      }),
    );
    if (a.json) return json(data);
    const windows: [string, UsageTotals | undefined][] = [
      ['today', data.today],
      ['last 24 h', data.last_24h],
      [`last ${Math.round(data.recent_window_secs / 60)} min`, data.recent],
      ['all', data.all],
    ];
    table<[string, UsageTotals]>(
      [
        { header: 'WINDOW', value: ([w]) => w },
        { header: 'TURNS', value: ([, t]) => String(t.invocations) },
        { header: 'INPUT', value: ([, t]) => String(t.input_tokens) },
        { header: 'OUTPUT', value: ([, t]) => String(t.output_tokens) },
        { header: 'CACHE READ', value: ([, t]) => String(t.cache_read_tokens) },
        { header: 'COST', value: ([, t]) => cost(t) },
      ],
      windows.filter((w): w is [string, UsageTotals] => w[1] !== undefined),
    );
    groupTable('AGENT', data.by_agent ?? []);
    groupTable('PROVIDER', data.by_provider ?? []);
    groupTable('SESSION', data.by_session ?? []);
    for (const reason of data.partial_reasons ?? []) process.stderr.write(`note: ${reason}\n`);
  },
});
