/**
 * Config benchmark, measuring
 *   1. composing a city's configuration with 10 imported packs of 10 agents each (100 agents, plus a patch and
 *      `[agent_defaults]`): `loadConfig` as the controller runs it at start and on every edit, p50/p99 over 50;
 *   2. the `svc/*` proxy: GETs to a program service straight to its port, and through the supervisor and the
 *      controller (`/v0/city/{city}/svc/web/hello`), one at a time (p50, the ratio) and 16 at once for 3 s
 *      (requests/s);
 *   3. `GET /rigs?git=true` with 20 rigs, each a real git repository: p50/p99 over 30;
 *   4. API writes to `city.toml` in a city of 10 packs × 10 agents and 20 rigs: adding, changing and removing an
 *      agent, adding a provider (each answered once its configuration is in use), p50/p99 over 20 each;
 *   5. an edit on disk in that city (an `agents/<name>/agent.toml` written) until its agent is listed: the config
 *      watcher, its debounce and the reload, p50/p99 over 10 (polled every 5 ms).
 * Prints tables and writes `.bench-out/config.json`. Run with `npm run bench -- config`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../controller/config/config-in-use.js';
import { ProviderRegistry } from '../controller/providers/provider-registry.js';
import { readCityConfig } from '../shared/config/city-config.js';
import { startSessionCity } from '../test/helpers/sessions.js';
import { tempDir } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { closedLoopLoad, keepAliveAgent, sequentialLatencies, type GetTarget } from './http.js';
import { rounded, summarize } from './stats.js';
import { formatTable, ms } from './table.js';

const PACKS = 10;
const AGENTS_PER_PACK = 10;
const LOADS = 50;
const PROXY_GETS = 500;
const LOAD_MS = 3000;
const CONCURRENCY = 16;
const RIGS = 20;
const RIG_GETS = 30;
const CONFIG_WRITES = 20;
const DISK_EDITS = 10;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'config.json');
const SERVICE = join(repoRoot, 'test', 'fixtures', 'web-service.mjs');

/** A city directory importing `PACKS` local packs of `AGENTS_PER_PACK` agents each. */
function packedCity(): string {
  const root = tempDir('ctl-bench-config-');
  const city = join(root, 'city');
  mkdirSync(city);
  let toml = '[workspace]\nprovider = "echo"\n\n[providers.echo]\ncommand = "cat"\nprotocol = "text"\n\n';
  toml += '[agent_defaults]\nidle_timeout = "10m"\n\n';
  for (let p = 0; p < PACKS; p++) {
    const pack = join(root, `pack${p}`);
    mkdirSync(pack);
    writeFileSync(join(pack, 'pack.toml'), `[pack]\nname = "pack${p}"\nversion = "1.0.0"\n`);
    for (let a = 0; a < AGENTS_PER_PACK; a++) {
      const dir = join(pack, 'agents', `a${a}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'agent.toml'), 'min_active_sessions = 0\nmax_active_sessions = 2\n');
      writeFileSync(join(dir, 'prompt.md'), `You are agent ${a} of pack ${p}.\n`);
    }
    toml += `[imports.p${p}]\nsource = ${JSON.stringify(pack)}\n\n`;
  }
  toml += '[[patches.agent]]\nname = "p0.a0"\nsuspended = true\n';
  writeFileSync(join(city, 'city.toml'), toml);
  return city;
}

/** The `[imports.*]` of `packedCity`'s packs, for another city (the packs are shared, not copied). */
function importsOf(city: string): string {
  let toml = '';
  for (let p = 0; p < PACKS; p++)
    toml += `\n[imports.p${p}]\nsource = ${JSON.stringify(join(dirname(city), `pack${p}`))}\n`;
  return toml;
}

/** Times `write` `n` times in a row (each its own HTTP request), refusing any answer that is not a success. */
async function timedWrites(
  n: number,
  write: (i: number) => Promise<{ status: number; body: unknown }>,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n + 2; i++) {
    const started = performance.now();
    const res = await write(i);
    const took = performance.now() - started;
    if (res.status >= 300) throw new Error(`config write: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    if (i >= 2) times.push(took); // the first two load the editors
  }
  return times;
}

export async function runConfig(): Promise<void> {
  // 1. Composition, in process: what the controller does at start and on each edit.
  const city = packedCity();
  const configPath = join(city, 'city.toml');
  const registry = new ProviderRegistry(readCityConfig(configPath), configPath);
  const loads: number[] = [];
  let agents = 0;
  for (let i = 0; i < LOADS + 5; i++) {
    const started = performance.now();
    const loaded = loadConfig(city, configPath, registry);
    const took = performance.now() - started;
    if (i >= 5) loads.push(took); // the first few warm the module and file caches
    agents = loaded.agents.length;
    if (loaded.composed.problems.length) throw new Error(JSON.stringify(loaded.composed.problems));
  }
  if (agents !== PACKS * AGENTS_PER_PACK) throw new Error(`expected ${PACKS * AGENTS_PER_PACK} agents, got ${agents}`);

  // 2 and 3: a real supervisor and controller.
  const rigsRoot = tempDir('ctl-bench-rigs-');
  let rigsToml = '';
  for (let r = 0; r < RIGS; r++) {
    const dir = join(rigsRoot, `rig${r}`);
    mkdirSync(dir);
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.email=b@example.invalid', '-c', 'user.name=b', ...args], {
        cwd: dir,
        stdio: 'pipe',
      });
    git('init', '-q', '-b', 'main');
    writeFileSync(join(dir, 'README'), `rig ${r}\n`);
    git('add', '.');
    git('commit', '-q', '-m', 'first');
    if (r % 2 === 0) writeFileSync(join(dir, 'CHANGED'), 'x\n');
    rigsToml += `\n[[rigs]]\nname = "rig${r}"\npath = ${JSON.stringify(dir)}\n`;
  }
  const served = await startSessionCity(
    'bench-config',
    `\n[[service]]\nname = "web"\ncommand = ${JSON.stringify(`${process.execPath} ${SERVICE}`)}\nhealth = "/healthz"\n${rigsToml}${importsOf(city)}`,
  );
  let direct: number[];
  let proxied: number[];
  let directLoad;
  let proxiedLoad;
  let rigGets: number[];
  const writes: Record<string, number[]> = {};
  const diskEdits: number[] = [];
  try {
    const web = await waitUntil(
      'the service to run',
      async () => {
        const s = (await served.api.get<{ local_state: string; port?: number }>('/service/web')).body;
        return s.local_state === 'running' ? s : undefined;
      },
      20_000,
    );
    const base = new URL(served.sup.base);
    const agent = keepAliveAgent(CONCURRENCY);
    const straight: GetTarget = {
      label: 'direct',
      options: { host: '127.0.0.1', port: web.port, path: '/hello', agent },
    };
    const through: GetTarget = {
      label: 'svc proxy',
      options: { host: base.hostname, port: base.port, path: '/v0/city/bench-config/svc/web/hello', agent },
    };
    await sequentialLatencies(straight, 50);
    await sequentialLatencies(through, 50);
    direct = await sequentialLatencies(straight, PROXY_GETS);
    proxied = await sequentialLatencies(through, PROXY_GETS);
    directLoad = await closedLoopLoad(straight, CONCURRENCY, LOAD_MS);
    proxiedLoad = await closedLoopLoad(through, CONCURRENCY, LOAD_MS);
    rigGets = [];
    for (let i = 0; i < RIG_GETS + 3; i++) {
      const started = performance.now();
      const res = await served.api.get<{ items: { git?: { branch?: string } }[] }>('/rigs?git=true');
      const took = performance.now() - started;
      if (
        res.status !== 200 ||
        res.body.items.length !== RIGS ||
        !res.body.items.every((r) => r.git?.branch === 'main')
      ) {
        throw new Error(`GET /rigs?git=true: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
      if (i >= 3) rigGets.push(took);
    }
    // 4. API writes to city.toml: each answered once the new configuration is composed, checked and in use.
    const api = served.api;
    const n = CONFIG_WRITES;
    writes['POST /agents'] = await timedWrites(n, (i) =>
      api.post('/agents', { name: `w${i}`, provider: 'echo', min_active_sessions: 0 }),
    );
    writes['PATCH /agent/{name}'] = await timedWrites(n, (i) =>
      api.patch(`/agent/w${i}`, { description: `agent ${i}` }),
    );
    writes['DELETE /agent/{name}'] = await timedWrites(n, (i) => api.del(`/agent/w${i}`));
    writes['POST /providers'] = await timedWrites(n, (i) =>
      api.post('/providers', { name: `bench${i}`, command: 'cat', protocol: 'text' }),
    );
    // 5. Edits on disk: what a person's editor does, taken by the watcher (no request answers it).
    for (let i = 0; i < DISK_EDITS + 1; i++) {
      const dir = join(served.dir, 'agents', `disk${i}`);
      mkdirSync(dir, { recursive: true });
      const started = performance.now();
      writeFileSync(join(dir, 'agent.toml'), 'provider = "echo"\nmin_active_sessions = 0\n');
      await waitUntil(
        `agent disk${i} to be listed`,
        async () => (await api.get(`/agent/disk${i}`)).status === 200,
        undefined,
        5,
      );
      if (i >= 1) diskEdits.push(performance.now() - started); // the first starts the watcher's caches
    }
  } finally {
    await served.sup.cleanup();
  }
  const loadS = rounded(summarize(loads));
  const directS = rounded(summarize(direct));
  const proxiedS = rounded(summarize(proxied));
  const rigsS = rounded(summarize(rigGets));
  const ratio = proxiedS.median / directS.median;
  console.log(
    formatTable(
      `Compose a city of ${PACKS} packs × ${AGENTS_PER_PACK} agents (loadConfig: files read, packs, defaults, patch, resolved)`,
      ['loads', 'p50', 'p99'],
      [[String(loads.length), ms(loadS.median), ms(loadS.p99)]],
    ),
  );
  console.log(
    formatTable(
      `svc/* proxy vs the service directly (GET /hello)`,
      ['path', 'p50 (one at a time)', 'p99', `req/s (${CONCURRENCY} at once)`],
      [
        ['direct', ms(directS.median, 3), ms(directS.p99, 3), directLoad.rps.toFixed(0)],
        ['supervisor → controller → service', ms(proxiedS.median, 3), ms(proxiedS.p99, 3), proxiedLoad.rps.toFixed(0)],
        ['ratio', `${ratio.toFixed(2)}×`, '', `${(proxiedLoad.rps / directLoad.rps).toFixed(2)}×`],
      ],
    ),
  );
  console.log(
    formatTable(
      `GET /rigs?git=true with ${RIGS} rigs (real git repositories, half with changes)`,
      ['requests', 'p50', 'p99'],
      [[String(rigGets.length), ms(rigsS.median), ms(rigsS.p99)]],
    ),
  );
  const diskS = rounded(summarize(diskEdits));
  console.log(
    formatTable(
      `An agents/<name>/agent.toml written on disk until the agent is listed (the watcher, its debounce, the reload)`,
      ['edits', 'p50', 'p99'],
      [[String(diskEdits.length), ms(diskS.median), ms(diskS.p99)]],
    ),
  );
  const writeStats = Object.fromEntries(Object.entries(writes).map(([op, times]) => [op, rounded(summarize(times))]));
  console.log(
    formatTable(
      `API writes to city.toml (${PACKS} packs × ${AGENTS_PER_PACK} agents, ${RIGS} rigs; answered once in use; new agents start no session)`,
      ['operation', 'writes', 'p50', 'p99'],
      Object.entries(writeStats).map(([op, st]) => [op, String(writes[op].length), ms(st.median), ms(st.p99)]),
    ),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(
    OUT_FILE,
    `${JSON.stringify(
      {
        compose_10_packs_100_agents_ms: loadS,
        svc_direct_ms: directS,
        svc_proxied_ms: proxiedS,
        svc_p50_ratio: ratio,
        svc_direct_rps: directLoad.rps,
        svc_proxied_rps: proxiedLoad.rps,
        rigs_git_20_ms: rigsS,
        config_writes_ms: writeStats,
        disk_edit_to_listed_ms: diskS,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${OUT_FILE}`);
}
