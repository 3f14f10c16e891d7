import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CityApi } from './helpers/city-api.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { STREAM_JSON_AGENT } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// The acceptance corpus of issue 24: the reference's own example cities (test/fixtures/reference-cities/, MIT,
// README there says from which commit) registered as written, their git-backed packs served from the machine's
// pack cache seeded the way `ctl pack add` lays it out, since github.com is not reachable from a test. Each city
// must register and run, list its packs' agents, formulas and orders, and validate must name exactly what ctl
// does not support: the lists below are exact, so a key ctl starts (or stops) acting on shows here as a diff.
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'reference-cities');
const GASCITY = 'https://github.com/gastownhall/gascity.git';
const GASCITY_COMMIT = 'f895c0ff47d6ee9334ed282a416387eb5b084d24';
const GASTOWN = 'https://github.com/gastownhall/gascity-packs/tree/main/gastown';
const GASTOWN_COMMIT = '33d3a430a67d1782ad364556cb566bdb01d0afe3';

// The swarm city's sessions run a stand-in for Claude Code (a stream-json agent), so its named sessions can be
// seen started: a patch of its own `claude` provider, which the city's files leave as written.
const PRETEND_CLAUDE = `\n[[patches.provider]]\nname = "claude"\ncommand = "${process.execPath} ${STREAM_JSON_AGENT}"\n`;

interface Issue {
  file: string;
  key?: string;
  message: string;
}

/** `$CTL_HOME/cache/packs/<sha256 of the URL, 16 hex>/<commit>/<subdir>`: where compose reads a locked git pack. */
function seedPackCache(home: string, url: string, commit: string, subdir: string, from: string): void {
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 16);
  const dest = join(home, 'cache', 'packs', hash, commit, subdir);
  mkdirSync(dirname(dest), { recursive: true });
  cpSync(join(FIXTURES, 'packs', from), dest, { recursive: true });
}

describe('the reference example cities (real supervisor)', function () {
  this.timeout(120_000);
  let sup: TestSupervisor;

  before(async function () {
    sup = await TestSupervisor.start();
    seedPackCache(sup.home, GASCITY, GASCITY_COMMIT, 'internal/bootstrap/packs/core', 'core');
    seedPackCache(sup.home, GASCITY, GASCITY_COMMIT, 'examples/bd', 'bd');
    seedPackCache(sup.home, GASTOWN, GASTOWN_COMMIT, '', 'gastown');
  });

  after(async function () {
    await sup?.cleanup();
  });

  /** Copies the example into the cities directory (plus a rig when `rig`), registers it and waits until it runs. */
  async function register(example: string, rig: boolean | string = false, extra = ''): Promise<CityApi> {
    const dir = sup.cityDir(example);
    cpSync(join(FIXTURES, 'cities', example), dir, { recursive: true });
    if (extra) appendFileSync(join(dir, 'city.toml'), extra);
    if (rig) {
      // As each example's city.toml says: register a rig to activate its per-rig agents.
      mkdirSync(join(dir, 'myproject'));
      // A string is the pack the rig imports itself (swarm's `rigs[].pack`); the others' rigs get theirs from
      // `[defaults.rig.imports]`.
      const imports = typeof rig === 'string' ? `\n[rigs.imports.${rig}]\nsource = "packs/${rig}"\n` : '';
      appendFileSync(join(dir, 'city.toml'), `\n[[rigs]]\nname = "myproject"\npath = "myproject"\n${imports}`);
    }
    const res = await fetch(`${sup.base}/v0/cities/register`, {
      method: 'POST',
      headers: { ...CSRF, 'Content-Type': 'application/json' },
      // Registered under the example's name: two examples may both say `[workspace] name = "gastown"`.
      body: JSON.stringify({ path: dir, name: example }),
    });
    const text = await res.text();
    expect(res.status, text).to.equal(201);
    const name = (JSON.parse(text) as { name: string }).name;
    await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running === true, 30_000);
    return new CityApi(sup, name);
  }

  async function survey(api: CityApi) {
    const agents = (await api.get<{ items: { name: string }[] }>('/agents')).body.items.map((a) => a.name).sort();
    const formulaList = (await api.get<{ items: { name: string }[] }>('/formulas?limit=1000')).body;
    const formulas = formulaList.items.map((f) => f.name).sort();
    const orderList = (await api.get<{ orders: { name: string }[] }>('/orders')).body;
    const orders = orderList.orders.map((o) => o.name).sort();
    const validate = (await api.get<{ valid: boolean; errors: Issue[]; warnings: Issue[] }>('/config/validate')).body;
    return { agents, formulas, orders, validate };
  }

  // What each city gives today, written down in expected.json: its agents (pack agents named `binding.agent`, a
  // rig's `rig/binding.agent`), formulas, orders, and validate's warnings (`file key`) and errors, exactly.
  const expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as Record<
    string,
    { agents: string[]; formulas: string[]; orders: string[]; valid: boolean; warnings: string[]; errors: string[] }
  >;

  for (const [example, rig] of [
    ['swarm', 'swarm'],
    ['lifecycle', true],
    ['hyperscale', false],
    ['gastown', true],
    // The gastown example as published in April 2026: its pack imports the maintenance pack, whose fallback dog
    // (`fallback = true`) it patches by its name there.
    ['gastown-maintenance', false],
    ['storage', false],
  ] as const) {
    it(`${example}: registers, runs, lists its packs' agents, formulas and orders, and names what is unsupported`, async function () {
      const api = await register(example, rig, example === 'swarm' ? PRETEND_CLAUDE : '');
      const { agents, formulas, orders, validate } = await survey(api);
      const got = {
        agents,
        formulas,
        orders,
        valid: validate.valid,
        warnings: validate.warnings.map((w) => `${w.file} ${w.key ?? ''}`).sort(),
        errors: validate.errors.map((e) => e.message).sort(),
      };
      // After a change in what ctl supports: CTL_UPDATE_CORPUS=1 writes what the cities give now, for the diff.
      if (process.env.CTL_UPDATE_CORPUS === '1') {
        expected[example] = got;
        writeFileSync(join(FIXTURES, 'expected.json'), `${JSON.stringify(expected, null, 1)}\n`);
      }
      const want = expected[example];
      expect(agents, 'agents').to.deep.equal(want.agents);
      expect(formulas, 'formulas').to.deep.equal(want.formulas);
      expect(orders, 'orders').to.deep.equal(want.orders);
      expect(got.warnings, 'warnings').to.deep.equal(want.warnings);
      expect(got.errors, 'errors').to.deep.equal(want.errors);
      expect(validate.valid, 'valid').to.equal(want.valid);
      // Every unsupported key is a warning that says so; none is silently dropped.
      for (const w of validate.warnings.filter((w) => !w.key?.startsWith('formula.'))) {
        expect(w.message, `${w.file} ${w.key}`).to.match(/^not supported: /);
      }
    });
  }

  it("gastown-maintenance: gastown's patch reaches maintenance's dog, a fallback in use since nothing replaces it", async function () {
    const api = new CityApi(sup, 'gastown-maintenance');
    type Explained = { name: string; fallback?: boolean; replaced?: unknown[]; source: string };
    const { agents } = (await api.get<{ agents: Explained[] }>('/config/explain')).body;
    expect(agents.find((a) => a.name === 'gastown.maintenance.dog')).to.deep.include({
      fallback: true,
      source: 'pack:gastown.maintenance/agents/dog/agent.toml',
    });
    expect(agents.filter((a) => a.replaced)).to.deep.equal([]);
    const { errors, warnings } = (await api.get<{ errors: Issue[]; warnings: Issue[] }>('/config/validate')).body;
    expect([...errors, ...warnings].filter((i) => /patches|fallback/.test(`${i.key} ${i.message}`))).to.deep.equal([]);
  });

  it('swarm: its pack\'s [[named_session]] mode = "always" keeps a deacon running; on_demand leaves the mayor', async function () {
    const api = new CityApi(sup, 'swarm');
    type Session = { template: string; state: string; running: boolean };
    const sessionsOf = async (agent: string) =>
      (await api.get<{ items: Session[] }>(`/sessions?template=${agent}`)).body.items;
    await waitUntil(
      'a session of swarm.deacon to run',
      async () => (await sessionsOf('swarm.deacon')).some((s) => s.running && s.state === 'active'),
      30_000,
    );
    expect((await api.get<{ min_active_sessions: number }>('/agent/swarm.deacon')).body.min_active_sessions).to.equal(
      1,
    );
    expect(await sessionsOf('swarm.mayor')).to.deep.equal([]);
  });
});
