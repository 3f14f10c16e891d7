import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { packageRoot } from '../../shared/paths.js';
import type { CityInfo } from '../../shared/dto/cities.js';
import type { CityCreateSucceededPayload, CityUnregisterSucceededPayload } from '../../shared/dto/events.js';
import { call, connect, CSRF, patient } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError } from '../_errors.js';
import { apiFlag, jsonFlag, timeout, timeoutFlag } from '../_flags.js';
import { json, line, progress, table } from '../_output.js';
import { findCityRoot, listCities, withSuspension } from '../_scope.js';
import type { Api } from '../_types.js';
import { CITY_COLUMNS } from '../_views.js';
import { cityRunning, requestOutcome } from '../_wait.js';

/** How long a command waits for the outcome, unless `--timeout` says. */
const WAIT_MS = 60_000;
const waitFlag = timeoutFlag('How long to wait for the outcome (default 60s)');

/**
 * What a city operation may wait for on the server before it answers: the operation before it (they run one at
 * a time), and its own work — a start waits up to 30 s for the controller to run, a create probes the provider.
 */
const CITY_OPERATION_WAIT_MS = 60_000;

/** The API, patient enough for a city operation's request (the waits that follow read a stream). */
function forCityOperation(api: Api): Api {
  return patient(api, CITY_OPERATION_WAIT_MS);
}

/**
 * A start command as given, but a relative path to an existing program (`examples/agents/echo.sh`) made absolute:
 * it is kept in the city's `city.toml`, and must name the same program wherever it is run from.
 */
function absoluteProgram(command: string): string {
  const [program = '', ...rest] = command.trim().split(/\s+/);
  if (!program.includes('/') || isAbsolute(program) || !existsSync(program)) return command;
  return [resolve(program), ...rest].join(' ');
}

/**
 * `--template demo`: a city whose agent `worker` is the shipped demo worker (examples/agents/demo-worker.mjs, no
 * model, no network): a pool of up to two sessions that start when work is slung to it, and a formula for it. Built through the API
 * like any other city: created with the echo agent as its default, then a provider and an agent added.
 */
async function applyDemoTemplate(api: Api, city: string): Promise<void> {
  const examples = join(packageRoot, 'examples', 'agents');
  const path = { cityName: city };
  await call(
    api,
    api.client.POST('/v0/city/{cityName}/providers', {
      params: { header: CSRF, path },
      body: {
        name: 'demo-worker',
        display_name: 'Demo worker',
        command: `${process.execPath} ${join(examples, 'demo-worker.mjs')}`,
        protocol: 'stream-json',
      },
    }),
  );
  await call(
    api,
    api.client.POST('/v0/city/{cityName}/agents', {
      params: { header: CSRF, path },
      body: {
        name: 'worker',
        provider: 'demo-worker',
        description: 'Takes a bead slung to it, does its step, closes it and mails the result to human',
        min_active_sessions: 0,
        max_active_sessions: 2,
        idle_timeout: '2m',
      },
    }),
  );
  await call(
    api,
    api.client.PUT('/v0/city/{cityName}/formulas/{name}', {
      params: { header: CSRF, path: { ...path, name: 'shout-back' } },
      body: DEMO_FORMULA,
      bodySerializer: (body: string) => body,
      headers: { 'Content-Type': 'application/octet-stream' },
    }),
  );
}

/** The demo city's formula: two steps the demo worker knows, the second after the first. */
const DEMO_FORMULA = `# A run of two steps: the worker does the first, then the second (ctl sling worker --formula shout-back --var text=hi).
formula = "shout-back"
description = "Shout {{text}}, then say it backwards"

[vars]
text = { required = true, description = "What to shout" }

[[steps]]
id = "shout"
title = "upper: {{text}}"

[[steps]]
id = "reverse"
title = "reverse: {{text}}"
needs = ["shout"]
`;

export const initCommand = command({
  name: 'init',
  description: 'Create a city and wait until it runs',
  examples: [
    'ctl init ~/cities/demo --template demo                            # a city with a worker agent, offline',
    'ctl init ~/cities/alpha --start-command examples/agents/echo.sh   # a city whose agents run echo.sh',
    'ctl init ~/cities/beta --provider claude --timeout 2m',
    'ctl init ~/cities/gamma --start-command "bash agent.sh" --json  # {"request_id":…,"name":…,"path":…}',
  ],
  args: {
    dir: { type: 'positional', description: 'Directory to create the city in', required: true },
    'start-command': {
      type: 'string',
      description:
        "The program that becomes the city's default agent command (with its arguments; a relative path is made absolute)",
      valueHint: 'CMD',
    },
    provider: { type: 'string', description: 'Instead: a provider preset for its agents (claude, codex, …)' },
    template: {
      type: 'enum',
      description: 'A ready-made city: demo (a worker agent that does slung beads, offline)',
      options: ['demo'],
    },
    'bootstrap-profile': {
      type: 'enum',
      description: "Bootstrap profile (changes only the city's [api] defaults)",
      options: ['k8s-cell', 'kubernetes', 'kubernetes-cell', 'single-host-compat'],
    },
    ...waitFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    let startCommand = a['start-command'];
    if (a.template === 'demo') {
      if (a['start-command'] !== undefined || a.provider !== undefined) {
        throw new CliError('--template demo brings its own agents: pass neither --start-command nor --provider');
      }
      startCommand = join(packageRoot, 'examples', 'agents', 'echo.sh');
    } else if ((a['start-command'] === undefined) === (a.provider === undefined)) {
      throw new CliError('pass exactly one of --start-command and --provider (or --template demo)');
    }
    const wait = timeout(a.timeout, WAIT_MS);
    const api = connect(a.api);
    const dir = resolve(a.dir);
    const body = {
      dir,
      ...(a.provider !== undefined ? { provider: a.provider } : {}),
      ...(startCommand !== undefined ? { start_command: absoluteProgram(startCommand) } : {}),
      ...(a['bootstrap-profile'] !== undefined ? { bootstrap_profile: a['bootstrap-profile'] } : {}),
    };
    const slow = forCityOperation(api);
    const { data } = await call(slow, slow.client.POST('/v0/city', { params: { header: CSRF }, body }));
    const name = dir.split('/').pop()!;
    // Said whatever stderr is (not progress): a missing program would otherwise surface only as a crash loop.
    for (const warning of data.warnings ?? []) process.stderr.write(`ctl init: warning: ${warning}\n`);
    progress(`Creating city ${name} at ${dir} (request ${data.request_id})`);
    const outcome = await requestOutcome(api, {
      requestId: data.request_id,
      eventCursor: data.event_cursor,
      operation: 'city.create',
      city: name,
      timeoutMs: wait,
    });
    const created = outcome.payload as CityCreateSucceededPayload;
    if (a.template === 'demo') await applyDemoTemplate(api, created.name);
    if (a.json) return json(created);
    line(`City ${created.name} is running at ${created.path}`);
    if (a.template === 'demo') {
      line(`Its agent "worker" does beads slung to it. Try:`);
      line(`  cd ${created.path}`);
      line(`  ctl bead create "reverse: hello world"      # prints the bead's id`);
      line(`  ctl sling worker <id>`);
      line(`  ctl agent output worker --follow            # watch it work; ctl mail inbox human shows its results`);
    }
  },
});

export const citiesCommand = command({
  name: 'cities',
  description: 'List registered cities',
  examples: ['ctl cities', 'ctl cities --json | jq -r ".items[].name"'],
  args: { ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = connect(a.api);
    const items = await listCities(api);
    if (a.json) return json({ items, total: items.length });
    if (items.length === 0) return line('No cities registered. Create one with "ctl init DIR --start-command CMD".');
    table(CITY_COLUMNS, await withSuspension(api, items));
  },
});

export const registerCommand = command({
  name: 'register',
  description: 'Attach an existing city directory to the supervisor and wait until it runs',
  examples: [
    'ctl register ~/cities/alpha',
    'ctl register                                       # the city the working directory is in',
    'ctl register ~/cities/alpha --name alpha2 --rename # it was registered as alpha',
  ],
  args: {
    path: { type: 'positional', description: 'City directory (default: the city you are in)', required: false },
    name: { type: 'string', description: 'Register under this name (default: its declared name)' },
    rename: { type: 'boolean', description: 'Rename a city registered under another name to --name' },
    ...waitFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    const wait = timeout(a.timeout, WAIT_MS);
    if (a.rename && a.name === undefined) throw new CliError('--rename needs --name, the new name');
    const root = a.path !== undefined ? resolve(a.path) : findCityRoot(process.cwd());
    if (!root) throw new CliError('not inside a city; pass the city directory');
    const api = connect(a.api);
    const before = (await listCities(api)).find((c) => c.path === root);
    if (before && a.name !== undefined && a.name !== before.name && !a.rename) {
      throw new CliError(
        `${root} is registered as ${before.name}; pass --rename to rename it to ${a.name} (its controller restarts)`,
      );
    }
    // Registered already, and no new name: it keeps the one it has.
    const name = a.name ?? before?.name;
    const slow = forCityOperation(api);
    const { data: registered } = await call(
      slow,
      slow.client.POST('/v0/cities/register', {
        params: { header: CSRF },
        body: { path: root, ...(name !== undefined ? { name } : {}) },
      }),
    );
    const renamed = before !== undefined && before.name !== registered.name;
    progress(
      renamed
        ? `Renamed city ${before.name} to ${registered.name} (${registered.path})`
        : `Registered city ${registered.name} (${registered.path})`,
    );
    const city = await cityRunning(api, registered.name, wait);
    if (a.json) return json(city);
    const state = city.running ? 'it is running' : `it is stopped; "ctl city start ${city.name}" starts it`;
    line(
      renamed
        ? `Renamed city ${before.name} to ${city.name} (${city.path}); ${state}`
        : city.running
          ? `City ${city.name} is running at ${city.path}`
          : `City ${city.name} is registered at ${city.path}; ${state}`,
    );
  },
});

export const unregisterCommand = command({
  name: 'unregister',
  description: 'Detach a city from the supervisor and wait until its controller stops (its directory is left as it is)',
  examples: ['ctl unregister alpha', 'ctl unregister ~/cities/alpha', 'ctl unregister   # the city you are in'],
  args: {
    city: {
      type: 'positional',
      description: 'City directory or registered name (default: the city you are in)',
      required: false,
      complete: 'cities',
    },
    ...waitFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    const wait = timeout(a.timeout, WAIT_MS);
    const api = connect(a.api);
    const cities = await listCities(api);
    let city: CityInfo | undefined;
    if (a.city !== undefined) {
      const asPath = resolve(a.city);
      city = cities.find((c) => c.path === asPath) ?? cities.find((c) => c.name === a.city);
      if (!city) throw new CliError(`no registered city at ${asPath} or named ${a.city}; run "ctl cities"`);
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
    const outcome = await requestOutcome(api, {
      requestId: data.request_id,
      eventCursor: data.event_cursor,
      operation: 'city.unregister',
      city: city.name,
      timeoutMs: wait,
    });
    const gone = outcome.payload as CityUnregisterSucceededPayload;
    if (a.json) return json(gone);
    line(`Unregistered city ${gone.name} (${gone.path}); its directory is unchanged`);
  },
});

const nameArg = { name: { type: 'positional', description: 'City name', required: true, complete: 'cities' } } as const;

const cityStart = command({
  name: 'start',
  description: 'Start a stopped city and wait until it runs',
  examples: ['ctl city start alpha', 'ctl city start alpha --json'],
  args: { ...nameArg, ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = forCityOperation(connect(a.api));
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/start', { params: { header: CSRF, path: { cityName: a.name } } }),
    );
    if (a.json) return json(data);
    line(`City ${data.name} is running (pid ${data.pid ?? '?'})`);
  },
});

const cityStop = command({
  name: 'stop',
  description: "Stop a city's controller; the city stays registered",
  examples: ['ctl city stop alpha', 'ctl city stop alpha --json'],
  args: { ...nameArg, ...jsonFlag, ...apiFlag },
  async run({ args: a }) {
    const api = forCityOperation(connect(a.api));
    const { data } = await call(
      api,
      api.client.POST('/v0/city/{cityName}/stop', { params: { header: CSRF, path: { cityName: a.name } } }),
    );
    if (a.json) return json(data);
    line(`City ${data.name} is stopped`);
  },
});

function suspension(name: 'suspend' | 'resume') {
  const suspended = name === 'suspend';
  return command({
    name,
    description: suspended
      ? "Suspend a city's agents: each session finishes its turn, then stops, and none starts (the controller keeps serving)"
      : "Resume a suspended city's agents",
    examples: [`ctl city ${name} alpha`],
    args: { ...nameArg, ...jsonFlag, ...apiFlag },
    async run({ args: a }) {
      const api = connect(a.api);
      const { data } = await call(
        api,
        api.client.PATCH('/v0/city/{cityName}', {
          params: { header: CSRF, path: { cityName: a.name } },
          body: { suspended },
        }),
      );
      if (a.json) return json(data);
      line(`City ${data.name} is ${data.suspended ? 'suspended' : 'running its agents'}`);
    },
  });
}

export const cityCommand = group({
  name: 'city',
  description: 'Start, stop, suspend and resume cities',
  examples: ['ctl city stop alpha && ctl city start alpha', 'ctl city suspend alpha'],
  commands: { start: cityStart, stop: cityStop, suspend: suspension('suspend'), resume: suspension('resume') },
});
