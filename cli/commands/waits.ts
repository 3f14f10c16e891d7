import type { CityInfo } from '../../shared/dto/cities.js';
import type { WaitStateFilter, WaitView } from '../../shared/dto/formulas.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags } from '../_flags.js';
import { fields, json, line, table } from '../_output.js';
import { sessionFlag, sessionInScope } from './agent-side.js';
import { cityPath, inCity } from '../_scope.js';
import type { Api, Column } from '../_types.js';

// Waits: a session's dependency waits (`ctl wait for`: nudged when beads close) and the gates of runs (a timer, a
// condition, a person; `ctl run waits`, `ctl run open GATE` opens a human gate). `ctl wait list` shows both.

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
  if (w.kind === 'deps') {
    const beads = `${w.dep_mode === 'any' ? 'any of ' : ''}${(w.dep_ids ?? []).join(', ')}`;
    return w.note ? `${beads}: ${w.note}` : beads;
  }
  const what = w.note ?? (w.expires_at ? `until ${w.expires_at}` : w.kind);
  return w.kind === 'human' && w.status !== 'closed' ? `${what} (open it: ctl run open ${w.id})` : what;
}

/** The waits of the city (open ones unless `state`), of one session, or the gates of runs (of one run). */
export async function waitsOf(
  api: Api,
  city: CityInfo,
  options: { state?: string; run?: string; session?: string; gatesOnly?: boolean } = {},
): Promise<WaitView[]> {
  const query = {
    // The API refuses any other state with a 422 naming those it takes, which is the CLI's error line.
    ...(options.state !== undefined ? { state: options.state as WaitStateFilter } : {}),
    ...(options.session !== undefined ? { session: options.session } : {}),
  };
  const { data } = await call(
    api,
    api.client.GET('/v0/city/{cityName}/waits', { params: { path: cityPath(city), query } }),
  );
  const waits = options.gatesOnly ? data.waits.filter((w) => w.kind !== 'deps') : data.waits;
  return options.run === undefined ? waits : waits.filter((w) => w.run_id === options.run);
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
    const waits = await waitsOf(api, city, { state: a.state, run: a.run, gatesOnly: true });
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

const waitFor = command({
  name: 'for',
  description: 'Make a session wait for beads to close: it is sent a message (woken if asleep) once they have',
  examples: [
    'ctl wait for alp-12 alp-13 --note "both reviews are in: merge the branch"',
    'ctl wait for alp-12 alp-13 --any --session worker-2',
  ],
  args: {
    bead: { type: 'positional', description: 'The beads to wait for', required: true, valueHint: 'BEAD…' },
    any: { type: 'boolean', description: 'Nudge when any of them closes (default: when all have)' },
    note: { type: 'string', description: 'What the session is reminded of then', valueHint: 'TEXT' },
    ...sessionFlag,
    ...inCityFlags,
  },
  variadic: true,
  async run({ args: a, rest }) {
    const session = sessionInScope(a.session);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/session/{id}/wait', {
        params: { header: CSRF, path: { ...cityPath(city), id: session } },
        body: { on_beads: [a.bead, ...rest], ...(a.any ? { any: true } : {}), ...(a.note ? { note: a.note } : {}) },
      }),
    );
    if (a.json) return json(data);
    line(
      data.state === 'pending'
        ? `Wait ${data.id}: ${data.session_name ?? session} waits for ${waitsFor(data)}`
        : `Wait ${data.id} is over already (${data.reason ?? data.state}): ${data.session_name ?? session} was told`,
    );
  },
});

const waitList = command({
  name: 'list',
  description: 'Waits: sessions waiting for beads, and the gates of runs (open ones unless --state)',
  examples: ['ctl wait list', 'ctl wait list --session worker-2 --state all', 'ctl wait list --json'],
  args: {
    state: { type: 'string', description: 'pending, ready, closed, canceled, failed or all (default: open ones)' },
    session: { type: 'string', description: 'Only the waits of this session (its id)', valueHint: 'ID' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const waits = await waitsOf(api, city, { state: a.state, session: a.session });
    if (a.json) return json({ waits });
    if (waits.length === 0) return line('No waits.');
    table(
      WAIT_COLUMNS.map((c) => (c.header === 'GATE' ? { ...c, header: 'WAIT' } : c)),
      waits,
    );
  },
});

const waitShow = command({
  name: 'show',
  description: 'One wait: what it waits for, its state, and how it ended',
  examples: ['ctl wait show alp-40'],
  args: { id: { type: 'positional', description: 'The wait’s id', required: true }, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), id: a.id };
    const { data } = await call(api, api.client.GET('/v0/city/{cityName}/wait/{id}', { params: { path } }));
    if (a.json) return json(data);
    fields([
      ['Wait', data.id],
      ['Kind', data.kind],
      ['State', data.state],
      ['Session', data.session_name ?? (data.session_id || '-')],
      ['Waits for', waitsFor(data)],
      ['Ended', data.reason],
      ['Nudge', data.nudge_id],
    ]);
  },
});

function waitAction(action: 'cancel' | 'ready', description: string, done: string) {
  return command({
    name: action,
    description,
    examples: [`ctl wait ${action} alp-40`],
    args: { id: { type: 'positional', description: 'The wait’s id', required: true }, ...inCityFlags },
    async run({ args: a }) {
      const { api, city } = await inCity(a);
      const params = { header: CSRF, path: { ...cityPath(city), id: a.id } };
      const { data } = await call(
        api,
        action === 'cancel'
          ? api.client.POST('/v0/city/{cityName}/wait/{id}/cancel', { params })
          : api.client.POST('/v0/city/{cityName}/wait/{id}/ready', { params }),
      );
      if (a.json) return json(data);
      line(`${done} wait ${data.id}${data.state === 'failed' ? ` (failed: ${data.reason})` : ''}`);
    },
  });
}

export const waitCommand = group({
  name: 'wait',
  description: 'Waits: a session waits for beads to close and is nudged when they have; runs wait at their gates',
  examples: ['ctl wait for alp-12 alp-13 --note "merge when both are in"', 'ctl wait list', 'ctl wait cancel alp-40'],
  commands: {
    for: waitFor,
    list: waitList,
    show: waitShow,
    cancel: waitAction('cancel', 'Cancel a session’s pending wait: it never nudges', 'Canceled'),
    ready: waitAction('ready', 'End a session’s pending wait now: the session is nudged', 'Ended'),
  },
});
