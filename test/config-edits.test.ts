import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Agent {
  name: string;
  min_active_sessions?: number;
  max_active_sessions?: number;
  description?: string;
}

// Every write of the API to a person's configuration goes through one funnel: the city the edit would leave is
// composed first (packs, patches, agents/ directories and all), and an edit that would leave it unusable is a
// 422 naming why, with the file byte for byte as it was and the configuration in use unchanged.
describe('config edits through the one funnel (real controller, real files)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let cityToml: string;
  let scribeToml: string;
  let original: string;

  before(async function () {
    const root = tempDir('ctl-funnel-');
    const web = join(root, 'web');
    mkdirSync(web);
    // A pack every rig imports, whose rig-scoped agent `lint` becomes `<rig>/tools.lint` in each rig.
    const tools = join(root, 'tools');
    mkdirSync(join(tools, 'agents', 'lint'), { recursive: true });
    writeFileSync(
      join(tools, 'agents', 'lint', 'agent.toml'),
      'provider = "echo"\nscope = "rig"\nmin_active_sessions = 0\n',
    );
    city = await startSessionCity(
      'funnel',
      [
        '',
        '[[rigs]]',
        'name = "web"',
        `path = ${JSON.stringify(web)}`,
        '',
        '# web/worker while web is a rig; worker, like the next one, once it is not',
        '[[agent]]',
        'name = "worker"',
        'dir = "web"',
        'provider = "echo"',
        'min_active_sessions = 0',
        '',
        '[[agent]]',
        'name = "worker"',
        'provider = "echo"',
        'min_active_sessions = 0',
        '',
        '# tools.lint while api is no rig; api/tools.lint, like the pack agent, once it is',
        '[[agent]]',
        'name = "tools.lint"',
        'dir = "api"',
        'provider = "echo"',
        'min_active_sessions = 0',
        '',
        '[defaults.rig.imports.tools]',
        `source = ${JSON.stringify(tools)}`,
        '',
        '[providers.flagged]',
        'command = "/bin/true"',
        'prompt_flag = "--prompt"',
        '',
        '[[patches.provider]]',
        'name = "flagged"',
        'prompt_mode = "flag"',
        '',
        '[[patches.agent]]',
        'name = "scribe"',
        'max_active_sessions = 5',
        '',
      ].join('\n'),
    );
    cityToml = join(city.dir, 'city.toml');
    scribeToml = join(city.dir, 'agents', 'scribe', 'agent.toml');
    mkdirSync(join(city.dir, 'agents', 'scribe'), { recursive: true });
    writeFileSync(scribeToml, '# the scribe\nprovider = "echo"\nmin_active_sessions = 0\nmax_active_sessions = 2\n');
    mkdirSync(join(city.dir, 'orders'));
    writeFileSync(join(city.dir, 'orders', 'nightly.toml'), '[order]\ntrigger = "manual"\nexec = "true"\n');
    await waitUntil('scribe, patched, to be in use', async () => {
      const reply = await city.api.get<Agent>('/agent/scribe');
      return reply.status === 200 && reply.body.max_active_sessions === 5;
    });
    original = readFileSync(cityToml, 'utf8');
  });
  after(async () => city?.sup.cleanup());

  // A test that failed may have left a file changed: the next one starts from the city as it was.
  afterEach(function () {
    if (readFileSync(cityToml, 'utf8') !== original) writeFileSync(cityToml, original);
  });

  it('DELETE /rig/{name} that would make two agents called worker is a 422; city.toml and the rig stay', async function () {
    const { api } = city;
    const problem = expectProblem(await api.del('/rig/web'), 422, 'validation-failed', { location: 'body' });
    expect(problem.detail).to.include('agent worker is defined twice');
    expect(readFileSync(cityToml, 'utf8')).to.equal(original);
    expect((await api.get('/rig/web')).status).to.equal(200);
    expect((await api.get('/agent/web/worker')).status).to.equal(200);
    expect((await api.get('/agent/worker')).status).to.equal(200);
  });

  it('POST /rigs that would make two agents called api/tools.lint is a 422; nothing is written', async function () {
    const { api } = city;
    const path = tempDir('ctl-funnel-api-');
    const problem = expectProblem(await api.post('/rigs', { name: 'api', path }), 422, 'validation-failed');
    expect(problem.detail).to.include('agent api/tools.lint is defined twice');
    expect(readFileSync(cityToml, 'utf8')).to.equal(original);
    expectProblem(await api.get('/rig/api'), 404, 'rig-not-found');
  });

  it('PATCH /provider/{name} that a patch over it would leave unusable is a 422; city.toml is untouched', async function () {
    const { api } = city;
    // Alone the table is fine without prompt_flag; with the patch's prompt_mode = "flag" it is not.
    const problem = expectProblem(
      await api.patch('/provider/flagged', { prompt_flag: null }),
      422,
      'validation-failed',
    );
    expect(problem.detail).to.match(/flagged.*prompt_flag/);
    expect(readFileSync(cityToml, 'utf8')).to.equal(original);
    const provider = await api.get<{ prompt_flag?: string; prompt_mode?: string }>('/provider/flagged');
    expect(provider.body).to.include({ prompt_flag: '--prompt', prompt_mode: 'flag' });
  });

  it('PATCH /agent/{name} that would leave its agent.toml invalid is a 422; the file is untouched, a good edit is taken', async function () {
    const { api } = city;
    const before = readFileSync(scribeToml, 'utf8');
    try {
      // The patch puts max 5 in use, which min 3 passes; the file's own max is 2, which it does not.
      const problem = expectProblem(
        await api.patch('/agent/scribe', { min_active_sessions: 3 }),
        422,
        'validation-failed',
      );
      expect(problem.detail).to.include('agents/scribe/agent.toml: min_active_sessions (3) is more than');
      expect(readFileSync(scribeToml, 'utf8')).to.equal(before);
      expect((await api.get<Agent>('/agent/scribe')).body.min_active_sessions ?? 0).to.equal(0);

      const edited = await api.patch<Agent>('/agent/scribe', { description: 'keeps the minutes' });
      expect(edited.status, JSON.stringify(edited.body)).to.equal(200);
      expect(edited.body.description).to.equal('keeps the minutes');
      expect(readFileSync(scribeToml, 'utf8')).to.equal(`${before}description = "keeps the minutes"\n`);
    } finally {
      writeFileSync(scribeToml, before);
    }
  });

  it('POST /order/{name}/enable on a city.toml whose hand edit was not taken is a 422 naming why; nothing is written', async function () {
    const { api } = city;
    const broken = `${original}\n[[agent]]\nname = "tools.lint"\nprovider = "echo"\n`;
    writeFileSync(cityToml, broken);
    try {
      await waitUntil('the hand edit to be refused', async () =>
        (await api.events('config.reload_failed')).some((e) => /tools\.lint is defined twice/.test(e.message ?? '')),
      );
      const problem = expectProblem(await api.post('/order/nightly/enable'), 422, 'validation-failed');
      expect(problem.detail).to.include('agent tools.lint is defined twice');
      expect(readFileSync(cityToml, 'utf8')).to.equal(broken);
      const order = await api.get<{ enabled: boolean }>('/order/nightly');
      expect(order.body.enabled).to.equal(true);
    } finally {
      writeFileSync(cityToml, original);
      await waitUntil('the city to load again', async () => {
        const v = await api.get<{ errors: { message: string }[] }>('/config/validate');
        return !v.body.errors.some((e) => /last good/.test(e.message));
      });
    }
  });
});
