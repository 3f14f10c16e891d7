import { readFileSync } from 'node:fs';
import type { FormulaDetailResponse, Run, RunStep } from '../../shared/dto/formulas.js';
import { call, CSRF } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { inCityFlags, keyValues } from '../_flags.js';
import { fields, json, line, table } from '../_output.js';
import { cityPath, inCity } from '../_scope.js';
import type { Column } from '../_types.js';
import { runOpen, runWaits, waitsFor, waitsOf } from './waits.js';

const nameArg = {
  name: {
    type: 'positional',
    description: 'Formula name (formulas/<name>.toml)',
    required: true,
    complete: 'formulas',
  },
} as const;
const runArg = {
  run: { type: 'positional', description: 'Run id (its root bead)', required: true, complete: 'beads' },
} as const;
const varFlag = {
  var: {
    type: 'string',
    description: 'A formula var (repeatable)',
    valueHint: 'NAME=VALUE',
    repeatable: true,
  },
} as const;

/** A file's text, or `-` for stdin; one clear line when it cannot be read. */
function readSource(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function stepTable(detail: FormulaDetailResponse): void {
  table<FormulaDetailResponse['steps'][number]>(
    [
      { header: 'STEP', value: (s) => s.id, kind: 'id' },
      { header: 'KIND', value: (s) => s.kind },
      { header: 'NEEDS', value: (s) => (s.needs?.length ? s.needs.join(',') : '-') },
      { header: 'TITLE', value: (s) => s.title, kind: 'text' },
    ],
    detail.steps,
  );
}

const list = command({
  name: 'list',
  description: 'The city’s formulas, their vars and how often each ran',
  examples: ['ctl formula list', 'ctl formula list --json'],
  args: { ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/formulas', { params: { path: cityPath(city) } }),
    );
    if (a.json) return json(data);
    if (data.items.length === 0) return line('No formulas (write formulas/<name>.toml).');
    table<(typeof data.items)[number]>(
      [
        { header: 'NAME', value: (f) => f.name, kind: 'id' },
        { header: 'RUNS', value: (f) => String(f.run_count) },
        { header: 'VARS', value: (f) => f.var_defs.map((v) => (v.required ? `${v.name}*` : v.name)).join(',') || '-' },
        {
          header: 'DESCRIPTION',
          value: (f) => (f.errors?.length ? `INVALID: ${f.errors[0]}` : f.description),
          kind: 'text',
        },
      ],
      data.items,
    );
  },
});

const show = command({
  name: 'show',
  description: 'A formula: its vars and its steps as compiled with their defaults',
  examples: ['ctl formula show release'],
  args: { ...nameArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/formulas/{name}', { params: { path: { ...cityPath(city), name: a.name } } }),
    );
    if (a.json) return json(data);
    fields([
      ['Formula', data.name],
      ['Description', data.description || undefined],
      ['Source', data.source],
      [
        'Vars',
        data.var_defs
          .map((v) => `${v.name}${v.required ? ' (required)' : v.default !== undefined ? `=${v.default}` : ''}`)
          .join(', ') || undefined,
      ],
    ]);
    stepTable(data);
  },
});

const validate = command({
  name: 'validate',
  description:
    'Check a formula file (or the city’s own): every error, one per line, and exit status 1 when there is any',
  examples: ['ctl formula validate release', 'ctl formula validate release --file ./release.toml'],
  args: {
    ...nameArg,
    file: {
      type: 'string',
      description: 'Check this file (- for stdin) instead of the city’s formulas/<name>.toml',
      valueHint: 'FILE',
    },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const path = { ...cityPath(city), name: a.name };
    let text: string;
    if (a.file !== undefined) text = readSource(a.file);
    else {
      const { data } = await call(
        api,
        api.client.GET('/v0/city/{cityName}/formulas/{name}/source', { params: { path } }),
      );
      text = data.source;
    }
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/formulas/{name}/validate', {
        params: { header: CSRF, path },
        body: text,
        bodySerializer: (body: string) => body,
        headers: { 'Content-Type': 'application/octet-stream' },
      }),
    );
    // The verdict is the command's output (as a linter's is), and exit status 1 says it is not valid.
    if (a.json) json(data);
    else if (data.valid) line(`${a.name} is valid`);
    else for (const error of data.errors ?? []) line(error);
    if (!data.valid) process.exitCode = 1;
  },
});

const preview = command({
  name: 'preview',
  description: 'The steps a run with these vars would create (conditions decided, loops unrolled), creating nothing',
  examples: ['ctl formula preview release --var version=1.2', 'ctl formula preview release --var version=1.2 --json'],
  args: {
    ...nameArg,
    ...varFlag,
    target: { type: 'string', description: 'The agent it would be routed to', valueHint: 'AGENT' },
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/formulas/{name}/preview', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
        body: { ...(a.target ? { target: a.target } : {}), vars: keyValues(all('var'), 'var') ?? {} },
      }),
    );
    if (a.json) return json(data);
    line(`${data.name}: ${data.steps.length} steps${data.description ? ` — ${data.description}` : ''}`);
    stepTable(data);
  },
});

const cook = command({
  name: 'cook',
  description: 'Start a run of a formula: its beads are created, and its steps become ready work in order',
  examples: [
    'ctl formula cook release --var version=1.2',
    'ctl formula cook release --var version=1.2 --target worker',
  ],
  args: {
    ...nameArg,
    ...varFlag,
    target: { type: 'string', description: 'Route its work steps to this agent', valueHint: 'AGENT' },
    title: { type: 'string', description: 'The run’s title' },
    attach: { type: 'string', description: 'The bead the run is for (closed when the run passes)', valueHint: 'ID' },
    ...inCityFlags,
  },
  async run({ args: a, all }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/formulas/{name}/cook', {
        params: { header: CSRF, path: { ...cityPath(city), name: a.name } },
        body: {
          vars: keyValues(all('var'), 'var') ?? {},
          ...(a.target ? { target: a.target } : {}),
          ...(a.title ? { title: a.title } : {}),
          ...(a.attach ? { attached_bead_id: a.attach } : {}),
        },
      }),
    );
    if (a.json) return json(data);
    line(`Root: ${data.root_bead_id}`);
    line(`Created: ${data.created}`);
    for (const [step, id] of Object.entries(data.beads)) line(`  ${step} → ${id}`);
  },
});

export const formulaCommand = group({
  name: 'formula',
  description: 'Formulas: recipes of steps that runs (molecules of beads) are made from',
  examples: [
    'ctl formula list',
    'ctl formula preview release --var version=1.2',
    'ctl formula cook release --var version=1.2',
  ],
  commands: { list, show, validate, preview, cook },
});

function runTable(runs: Run[]): void {
  table<Run>(
    [
      { header: 'RUN', value: (r) => r.run_id, kind: 'id' },
      { header: 'STATUS', value: (r) => r.status, kind: 'status' },
      { header: 'FORMULA', value: (r) => r.formula ?? '-' },
      { header: 'TARGET', value: (r) => r.target ?? '-' },
      { header: 'TITLE', value: (r) => r.title, kind: 'text' },
    ],
    runs,
  );
}

const runList = command({
  name: 'list',
  description: 'Runs (molecules), newest first, and how many there are in each status',
  examples: ['ctl run list', 'ctl run list --formula release', 'ctl run list --json'],
  args: {
    formula: { type: 'string', description: 'Only runs of this formula' },
    limit: { type: 'string', description: 'At most this many (default 50)', valueHint: 'N' },
    ...inCityFlags,
  },
  async run({ args: a }) {
    const limit = a.limit === undefined ? undefined : Number(a.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
      throw new CliError(`invalid --limit ${JSON.stringify(a.limit)}: expected a whole number`);
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/runs', {
        params: {
          path: cityPath(city),
          query: { ...(limit !== undefined ? { limit } : {}), ...(a.formula ? { formula: a.formula } : {}) },
        },
      }),
    );
    if (a.json) return json(data);
    if (data.runs.length === 0) return line('No runs.');
    runTable(data.runs);
    const counts = Object.entries(data.status_counts).filter(([, n]) => n > 0);
    line(counts.map(([status, n]) => `${n} ${status}`).join(', '));
  },
});

const STEP_COLUMNS: Column<RunStep>[] = [
  { header: 'BEAD', value: (s) => s.id, kind: 'id' },
  { header: 'STEP', value: (s) => s.step_ref ?? '-' },
  { header: 'KIND', value: (s) => s.kind ?? 'step' },
  { header: 'STATUS', value: (s) => s.status, kind: 'status' },
  { header: 'TRY', value: (s) => (s.attempt ? String(s.attempt) : '-') },
  { header: 'ASSIGNEE', value: (s) => s.assignee ?? '-' },
  { header: 'TITLE', value: (s) => s.title, kind: 'text' },
];

const runShow = command({
  name: 'show',
  description: 'A run: its formula, target, status (and why it did not pass), its steps and the gates it waits at',
  examples: ['ctl run show alp-40', 'ctl run show alp-40 --json   # the run as the API answers it'],
  args: { ...runArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/runs/{run_id}', { params: { path: { ...cityPath(city), run_id: a.run } } }),
    );
    if (a.json) return json(data);
    fields([
      ['Run', data.run_id],
      ['Title', data.title],
      ['Status', data.status],
      ['Formula', data.formula],
      ['Target', data.target],
      ['Started', data.started_at],
      ['Updated', data.updated_at],
      [
        'Error',
        data.last_error
          ? `${data.last_error.code}${data.last_error.message ? `: ${data.last_error.message}` : ''}`
          : undefined,
      ],
    ]);
    const [{ data: steps }, waits] = await Promise.all([
      call(
        api,
        api.client.GET('/v0/city/{cityName}/runs/{run_id}/steps', {
          params: { path: { ...cityPath(city), run_id: a.run } },
        }),
      ),
      waitsOf(api, city, { run: a.run }),
    ]);
    line('');
    table(STEP_COLUMNS, steps.steps);
    if (waits.length === 0) return;
    line('');
    line('Waiting at:');
    for (const w of waits) line(`  ${w.id}  ${w.kind} gate, ${w.state}: ${waitsFor(w)}`);
  },
});

const runSteps = command({
  name: 'steps',
  description: 'A run’s steps in order, with their status, attempt and who has them',
  examples: ['ctl run steps alp-40'],
  args: { ...runArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/runs/{run_id}/steps', {
        params: { path: { ...cityPath(city), run_id: a.run } },
      }),
    );
    if (a.json) return json(data);
    table(STEP_COLUMNS, data.steps);
  },
});

const runCancel = command({
  name: 'cancel',
  description: 'Cancel a run: what is open of it is closed as canceled',
  examples: ['ctl run cancel alp-40'],
  args: { ...runArg, ...inCityFlags },
  async run({ args: a }) {
    const { api, city } = await inCity(a);
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/runs/{run_id}/cancel', {
        params: { header: CSRF, path: { ...cityPath(city), run_id: a.run } },
      }),
    );
    if (a.json) return json(data);
    line(
      data.closed
        ? `Canceled run ${data.run_id} (${data.closed} beads closed)`
        : `Run ${data.run_id} had already ended (${data.status})`,
    );
  },
});

export const runCommand = group({
  name: 'run',
  description: 'Runs: molecules made from formulas, worked through by agents',
  examples: ['ctl run list', 'ctl run show alp-40', 'ctl run waits', 'ctl run open alp-45', 'ctl run cancel alp-40'],
  commands: { list: runList, show: runShow, steps: runSteps, waits: runWaits, open: runOpen, cancel: runCancel },
});
