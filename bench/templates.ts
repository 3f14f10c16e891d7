/**
 * Prompt template bounds benchmark (issue 30): a city whose agent's prompt is a 26-level doubling bomb of nested
 * defines (2^26 × "ha" were it rendered), measuring
 *   1. `POST /sessions` of that agent and `GET …/session/{id}/prime` of a session whose agent's prompt became the
 *      bomb: status and latency (one at a time, 5 each);
 *   2. `GET …/health` latency, asked every 20 ms while those requests are in flight (max, p50);
 *   3. the controller's VmRSS before and after.
 * Prints a table and writes `.bench-out/templates.json`. Run with `npm run bench -- templates`; set
 * CTL_TEST_ENTRY to another build's `dist/cli/ctl.mjs` for its figures (before the bounds: tens of seconds, GiBs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CityApi, registerCity } from '../test/helpers/city-api.js';
import { TestSupervisor } from '../test/helpers/supervisor.js';
import { waitUntil } from '../test/helpers/wait.js';
import { rssKiB } from './proc.js';
import { round, summarize } from './stats.js';
import { formatTable, mib, ms } from './table.js';

const LEVELS = 26;
const TRIES = 5;
const HEALTH_EVERY_MS = 20;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'templates.json');
const SHELL_AGENT = join(repoRoot, 'test', 'fixtures', 'shell-agent.sh');

function doublingBomb(levels: number): string {
  let text = '{{ define "l0" }}ha{{ end }}\n';
  for (let i = 1; i <= levels; i++) {
    text += `{{ define "l${i}" }}{{ template "l${i - 1}" . }}{{ template "l${i - 1}" . }}{{ end }}\n`;
  }
  return `${text}{{ template "l${levels}" . }}\n`;
}

interface Measured {
  statuses: number[];
  ms: number[];
  healthMaxMs: number;
  healthMedianMs: number;
}

/** Runs `request` TRIES times, one after the other, while /health is asked every HEALTH_EVERY_MS. */
async function measure(api: CityApi, request: () => Promise<{ status: number }>): Promise<Measured> {
  const health: number[] = [];
  let done = false;
  const prober = (async () => {
    while (!done) {
      const start = performance.now();
      await api.get('/health');
      health.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, HEALTH_EVERY_MS));
    }
  })();
  const statuses: number[] = [];
  const times: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const start = performance.now();
    statuses.push((await request()).status);
    times.push(performance.now() - start);
  }
  done = true;
  await prober;
  const s = summarize(health);
  return {
    statuses,
    ms: times.map((t) => round(t, 1)),
    healthMaxMs: round(s.max, 1),
    healthMedianMs: round(s.median, 1),
  };
}

export async function runTemplates(): Promise<void> {
  const sup = await TestSupervisor.start();
  try {
    const dir = sup.cityDir('bombs');
    for (const agent of ['worker', 'bomber']) {
      mkdirSync(join(dir, 'agents', agent), { recursive: true });
      writeFileSync(join(dir, 'agents', agent, 'agent.toml'), 'provider = "shell"\nmin_active_sessions = 0\n');
    }
    writeFileSync(
      join(dir, 'city.toml'),
      `[workspace]\nname = "bombs"\n\n[providers.shell]\ncommand = "${SHELL_AGENT}"\nready_prompt_prefix = "ready>"\n`,
    );
    writeFileSync(join(dir, 'agents', 'worker', 'prompt.template.md'), 'Worker of {{ .CityName }}\n');
    writeFileSync(join(dir, 'agents', 'bomber', 'prompt.template.md'), doublingBomb(LEVELS));
    const api = await registerCity(sup, 'bombs');
    const pid = (await api.get<{ pid: number }>('/health')).body.pid;
    const rssBefore = rssKiB(pid);

    const create = await measure(api, () => api.post('/sessions', { kind: 'agent', name: 'bomber' }));
    const created = await api.post<{ session_id: string }>('/sessions', { kind: 'agent', name: 'worker' });
    const id = created.body.session_id;
    // Taken once the controller says it reloaded the file (what either build says).
    const reloads = async () => (await api.get<{ items: unknown[] }>('/events?type=config.reloaded')).body.items.length;
    const before = await reloads();
    writeFileSync(join(dir, 'agents', 'worker', 'prompt.template.md'), doublingBomb(LEVELS));
    await waitUntil('the bomb to be taken', async () => (await reloads()) > before, 30_000);
    const prime = await measure(api, () => api.get(`/session/${id}/prime`));
    const rssAfter = rssKiB(pid);

    const row = (what: string, m: Measured) => [
      what,
      m.statuses.join(' '),
      ms(Math.max(...m.ms), 1),
      ms(m.healthMaxMs, 1),
      ms(m.healthMedianMs, 1),
    ];
    console.log(
      formatTable(
        `Prompt template bounds: a ${LEVELS}-level doubling bomb (${TRIES} requests each)`,
        ['request', 'statuses', 'slowest', '/health max', '/health median'],
        [row('POST /sessions (bomb agent)', create), row('GET /session/{id}/prime', prime)],
      ),
    );
    console.log(`controller VmRSS: ${mib(rssBefore)} MiB before, ${mib(rssAfter)} MiB after`);
    mkdirSync(dirname(OUT_FILE), { recursive: true });
    writeFileSync(
      OUT_FILE,
      `${JSON.stringify({ levels: LEVELS, create, prime, rss_kib: { before: rssBefore, after: rssAfter } }, null, 2)}\n`,
    );
  } finally {
    await sup.cleanup();
  }
}
