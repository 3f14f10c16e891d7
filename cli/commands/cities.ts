import { resolve } from 'node:path';
import { defineCommand } from 'citty';
import type { CityInfo } from '../../shared/dto/cities.js';
import { apiArg, call, connect, CSRF, patient, type Api } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { findCityRoot, listCities } from '../_scope.js';
import { renderTable } from '../_table.js';
import { progress } from '../_progress.js';
import { waitForRequest, waitForRunning } from '../_wait.js';

const waitArg = {
  timeout: { type: 'string', description: 'Seconds to wait for the outcome (default 60)' },
} as const;

function timeoutMs(value: string | undefined): number {
  if (value === undefined) return 60_000;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new CliError(`--timeout ${value}: not a number of seconds`);
  return seconds * 1000;
}

/**
 * What a city operation may wait for on the server before it answers: the operation before it (they run one at
 * a time), and its own work — a start waits up to 30 s for the controller to run, a create probes the provider.
 */
const CITY_OPERATION_WAIT_MS = 60_000;

/** The API, patient enough for a city operation's request (the polls that follow it need no patience). */
function forCityOperation(api: Api): Api {
  return patient(api, CITY_OPERATION_WAIT_MS);
}

function statusOf(city: CityInfo): string {
  return city.running ? 'running' : (city.status ?? 'unknown');
}

export const initCommand = leafCommand('init', {
  meta: { name: 'init', description: 'Create a city and wait until it runs' },
  args: {
    dir: { type: 'positional', description: 'Directory to create the city in', required: true },
    'start-command': { type: 'string', description: 'Start command of the default session template', valueHint: 'CMD' },
    provider: { type: 'string', description: 'Provider of the default session template (claude, codex, …)' },
    'bootstrap-profile': { type: 'string', description: 'k8s-cell or single-host-compat' },
    ...waitArg,
    ...apiArg,
  },
  async run({ args }) {
    if ((args['start-command'] === undefined) === (args.provider === undefined)) {
      throw new CliError('pass exactly one of --start-command and --provider');
    }
    const wait = timeoutMs(args.timeout);
    const api = connect(args.api);
    const dir = resolve(args.dir);
    const body = {
      dir,
      ...(args.provider !== undefined ? { provider: args.provider } : {}),
      ...(args['start-command'] !== undefined ? { start_command: args['start-command'] } : {}),
      ...(args['bootstrap-profile'] !== undefined
        ? { bootstrap_profile: args['bootstrap-profile'] as 'k8s-cell' | 'single-host-compat' }
        : {}),
    };
    const slow = forCityOperation(api);
    const { data } = await call(slow, slow.client.POST('/v0/city', { params: { header: CSRF }, body }));
    const name = dir.split('/').pop()!;
    progress(`Creating city ${name} at ${dir} (request ${data.request_id})`);
    await waitForRequest(api, data.request_id, 'city.create', name, wait);
    process.stdout.write(`City ${name} is running at ${dir}\n`);
  },
});

export const citiesCommand = leafCommand('cities', {
  meta: { name: 'cities', description: 'List registered cities' },
  args: { json: { type: 'boolean', description: 'Print the API response as JSON' }, ...apiArg },
  async run({ args }) {
    const api = connect(args.api);
    const items = await listCities(api);
    const data = { items, total: items.length };
    if (args.json) {
      process.stdout.write(JSON.stringify(data) + '\n');
      return;
    }
    if (data.items.length === 0) {
      process.stdout.write('No cities registered. Create one with "ctl init DIR --start-command CMD".\n');
      return;
    }
    const rows = data.items.map((c) => [c.name, statusOf(c), c.pid ? String(c.pid) : '-', c.path, c.error ?? '']);
    process.stdout.write(renderTable(['NAME', 'STATUS', 'PID', 'PATH', 'ERROR'], rows));
  },
});

export const registerCommand = leafCommand('register', {
  meta: { name: 'register', description: 'Attach an existing city directory to the supervisor and start it' },
  args: {
    path: { type: 'positional', description: 'City directory (default: the city you are in)', required: false },
    name: { type: 'string', description: 'Register under this name (default: its declared name)' },
    ...waitArg,
    ...apiArg,
  },
  async run({ args }) {
    const wait = timeoutMs(args.timeout);
    const root = args.path !== undefined ? resolve(args.path) : findCityRoot(process.cwd());
    if (!root) throw new CliError('not inside a city; pass the city directory');
    const api = connect(args.api);
    const slow = forCityOperation(api);
    const { data: city } = await call(
      slow,
      slow.client.POST('/v0/cities/register', {
        params: { header: CSRF },
        body: { path: root, ...(args.name !== undefined ? { name: args.name } : {}) },
      }),
    );
    progress(`Registered city ${city.name} (${city.path})`);
    await waitForRunning(api, city.name, wait);
    process.stdout.write(`City ${city.name} is running at ${city.path}\n`);
  },
});

export const unregisterCommand = leafCommand('unregister', {
  meta: { name: 'unregister', description: 'Detach a city from the supervisor (its directory is left as it is)' },
  args: {
    city: {
      type: 'positional',
      description: 'City directory or registered name (default: the city you are in)',
      required: false,
    },
    ...waitArg,
    ...apiArg,
  },
  async run({ args }) {
    const wait = timeoutMs(args.timeout);
    const api = connect(args.api);
    const cities = await listCities(api);
    let city: CityInfo | undefined;
    if (args.city !== undefined) {
      const asPath = resolve(args.city);
      city = cities.find((c) => c.path === asPath) ?? cities.find((c) => c.name === args.city);
      if (!city) throw new CliError(`no registered city at ${asPath} or named ${args.city}; run "ctl cities"`);
    } else {
      const root = findCityRoot(process.cwd());
      if (!root) throw new CliError('not inside a city; pass a city directory or name');
      city = cities.find((c) => c.path === root);
      if (!city) throw new CliError(`no registered city at ${root}; run "ctl cities"`);
    }
    const slow = forCityOperation(api);
    const { data } = await call(
      slow,
      slow.client.POST('/v0/city/{cityName}/unregister', { params: { header: CSRF, path: { cityName: city.name } } }),
    );
    await waitForRequest(api, data.request_id, 'city.unregister', city.name, wait);
    process.stdout.write(`Unregistered city ${city.name} (${city.path}); its directory is unchanged\n`);
  },
});

const cityStart = leafCommand('city start', {
  meta: { name: 'start', description: 'Start a stopped city and wait until it runs' },
  args: { name: { type: 'positional', description: 'City name', required: true }, ...apiArg },
  async run({ args }) {
    const api = forCityOperation(connect(args.api));
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/start', { params: { header: CSRF, path: { cityName: args.name } } }),
    );
    process.stdout.write(`City ${data.name} is running (pid ${data.pid ?? '?'})\n`);
  },
});

const cityStop = leafCommand('city stop', {
  meta: { name: 'stop', description: "Stop a city's controller; the city stays registered" },
  args: { name: { type: 'positional', description: 'City name', required: true }, ...apiArg },
  async run({ args }) {
    const api = forCityOperation(connect(args.api));
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/stop', { params: { header: CSRF, path: { cityName: args.name } } }),
    );
    process.stdout.write(`City ${data.name} is stopped\n`);
  },
});

export const cityCommand = defineCommand({
  meta: { name: 'city', description: 'Start and stop cities' },
  subCommands: { start: cityStart, stop: cityStop },
});
