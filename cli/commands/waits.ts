import type { CityInfo } from '../../shared/dto/cities.js';
import type { WaitView } from '../../shared/dto/formulas.js';
import { call, CSRF } from '../_api.js';
import { command } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';
import type { Api, Column } from '../_types.js';

// The waits of runs (their gates: a timer, a condition, a person) as `ctl run waits` lists them, and the one
// thing a person does to one: `ctl run open GATE` opens a human gate.

export const WAIT_COLUMNS: Column<WaitView>[] = [
  { header: 'GATE', value: (w) => w.id, kind: 'id' },
  { header: 'KIND', value: (w) => w.kind },
  { header: 'STATE', value: (w) => w.state, kind: 'status' },
  { header: 'RUN', value: (w) => w.run_id ?? '-', kind: 'id' },
  { header: 'SESSION', value: (w) => w.session_name ?? (w.session_id || '-') },
  { header: 'WAITS FOR', value: (w) => waitsFor(w), kind: 'text' },
];

/** What a wait waits for, and for a person's gate, how to open it. */
export function waitsFor(w: WaitView): string {
  const what = w.note ?? (w.expires_at ? `until ${w.expires_at}` : w.kind);
  return w.kind === 'human' && w.status !== 'closed' ? `${what} (open it: ctl run open ${w.id})` : what;
}

/** The waits of the city (open ones unless `state`), or of one run. */
export async function waitsOf(
  api: Api,
  city: CityInfo,
  options: { state?: string; run?: string } = {},
): Promise<WaitView[]> {
  const { data } = await call(
    api,
    api.client.GET('/v0/city/{cityName}/waits', {
      params: { path: cityPath(city), query: options.state !== undefined ? { state: options.state } : {} },
    }),
  );
  return options.run === undefined ? data.waits : data.waits.filter((w) => w.run_id === options.run);
}

export const runWaits = command({
  name: 'waits',
  description: 'The gates runs wait at (open ones unless --state): a time, a condition or a person',
  examples: ['ctl run waits', 'ctl run waits --run alp-40 --state all', 'ctl run waits --json'],
  args: {
    run: { type: 'string', description: 'Only the waits of this run', valueHint: 'RUN' },
    state: { type: 'string', description: 'pending, ready, closed or all (default: open ones)' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const waits = await waitsOf(api, city, { state: a.state, run: a.run });
    if (a.json) return json({ waits });
    if (waits.length === 0) return line('No waits.');
    table(WAIT_COLUMNS, waits);
  },
});

export const runOpen = command({
  name: 'open',
  description: 'Open a human gate of a run: the steps it holds go on',
  examples: ['ctl run open alp-45', 'ctl run waits   # which gates wait for a person'],
  args: { gate: { type: 'positional', description: 'The gate bead’s id', required: true }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.gate };
    const { data: wait } = await call(api, api.client.GET('/v0/city/{cityName}/wait/{id}', { params: { path } }));
    if (wait.status === 'closed') throw new CliError(`gate ${a.gate} is already open`);
    if (wait.kind !== 'human') {
      throw new CliError(`gate ${a.gate} is a ${wait.kind} gate (${waitsFor(wait)}): it opens by itself, not by hand`);
    }
    await call(api, api.client.POST('/v0/city/{cityName}/bead/{id}/close', { params: { header: CSRF, path } }));
    if (a.json) return json({ gate: a.gate, run_id: wait.run_id ?? null, opened: true });
    line(`Opened gate ${a.gate}${wait.run_id ? ` of run ${wait.run_id}` : ''}`);
  },
});
