import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { CSRF, freePort, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Agent {
  name: string;
  state: string;
}

interface Explain {
  agents: { name: string; origin: string; source: string; patched: boolean; pack?: string }[];
  providers: Record<string, { origin: string; patched: boolean; env?: Record<string, string> }>;
  patches: { agents: number; providers: number; rigs: number };
  packs: { binding: string; git_backed: boolean; commit?: string; error?: string }[];
}

interface Validate {
  valid: boolean;
  errors: { file: string; key?: string; message: string }[];
  warnings: { file: string; message: string }[];
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd, stdio: 'pipe' })
    .toString()
    .trim();

/** A pack as a real git repository: an agent for the city, one for rigs, a formula and an order; tagged v1.0.0. */
function packRepository(root: string, name: string): string {
  const repo = join(root, name);
  mkdirSync(join(repo, 'agents', 'lint'), { recursive: true });
  mkdirSync(join(repo, 'agents', 'rigger'), { recursive: true });
  mkdirSync(join(repo, 'formulas'));
  mkdirSync(join(repo, 'orders'));
  writeFileSync(join(repo, 'pack.toml'), `[pack]\nname = "${name}"\nversion = "1.0.0"\n`);
  writeFileSync(join(repo, 'agents', 'lint', 'agent.toml'), 'provider = "echo"\nmin_active_sessions = 0\n');
  writeFileSync(join(repo, 'agents', 'lint', 'prompt.md'), 'You lint.\n');
  writeFileSync(
    join(repo, 'agents', 'rigger', 'agent.toml'),
    'provider = "echo"\nscope = "rig"\nmin_active_sessions = 0\n',
  );
  writeFileSync(
    join(repo, 'formulas', 'review-flow.toml'),
    'formula = "review-flow"\n\n[[steps]]\nid = "look"\ntitle = "Look at it"\n',
  );
  writeFileSync(join(repo, 'orders', 'nightly.toml'), '[order]\ntrigger = "manual"\nexec = "true"\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  git(repo, 'tag', 'v1.0.0');
  return repo;
}

describe('config, packs and patches (real git, real files)', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let root: string;
  let repo: string;
  let daemon: ChildProcess | undefined;

  before(async function () {
    root = tempDir('ctl-packs-');
    repo = packRepository(root, 'review');
    const tools = join(root, 'tools');
    mkdirSync(join(tools, 'agents', 'helper'), { recursive: true });
    writeFileSync(
      join(tools, 'agents', 'helper', 'agent.toml'),
      'provider = "echo"\nscope = "rig"\nmin_active_sessions = 0\n',
    );
    const web = join(root, 'web');
    mkdirSync(web);
    city = await startSessionCity(
      'packed',
      `\n# the city's own worker\n[[agent]]\nname = "fixer"\nprovider = "echo"\nmin_active_sessions = 0\n\n[[rigs]]\nname = "web"\npath = ${JSON.stringify(web)}\n\n[rigs.imports.tools]\nsource = ${JSON.stringify(tools)}\n`,
    );
  });
  after(async () => {
    daemon?.kill();
    await city?.sup.cleanup();
  });

  it('POST /packs fetches a file:// repository, pins its commit in packs.lock, and its agents, formulas and orders join the city', async function () {
    const { api } = city;
    const source = `file://${repo}`;
    const added = await api.post<Record<string, unknown>>('/packs', { source });
    expect(added.status, JSON.stringify(added.body)).to.equal(201);
    const head = git(repo, 'rev-parse', 'HEAD');
    expect(added.body).to.deep.include({ name: 'review', source, git_backed: true, commit: head });
    expect(added.body.agents).to.deep.equal(['review.lint']);
    const lock = readFileSync(join(city.dir, 'packs.lock'), 'utf8');
    expect(lock).to.include('[packs.review]').and.include(`commit = "${head}"`);
    const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(toml)
      .to.include(`[imports.review]\nsource = ${JSON.stringify(source)}\n`)
      .and.include("# the city's own worker");
    expect(existsSync(join(city.sup.home, 'cache', 'packs'))).to.equal(true);

    const listed = (await api.get<{ items: (Agent & { pack_derived: boolean })[] }>('/agents')).body.items;
    const agents = listed.map((a) => a.name);
    expect(agents).to.include.members(['fixer', 'review.lint', 'web/tools.helper']);
    // An agent a pack brings says so; the city's own does not.
    const derived = (name: string) => listed.find((a) => a.name === name)?.pack_derived;
    expect([derived('review.lint'), derived('web/tools.helper'), derived('fixer')]).to.deep.equal([true, true, false]);
    // A rig-scoped agent of a city import does not load at the city.
    expect(agents).to.not.include('review.rigger');
    const formulas = (await api.get<{ items: { name: string }[] }>('/formulas')).body.items.map((f) => f.name);
    expect(formulas).to.include('review-flow');
    // Also under its binding, which reaches the pack's own whatever a higher layer has.
    expect((await api.get<{ name: string }>('/formula/review.review-flow')).status).to.equal(200);
    const orders = (await api.get<{ orders: { name: string }[] }>('/orders')).body.orders.map((o) => o.name);
    expect(orders).to.include('review.nightly');

    const packs = await api.get<{
      packs: { name: string; commit?: string; pack_version?: string; agents: string[] }[];
    }>('/packs');
    expect(packs.body.packs).to.have.length(1);
    expect(packs.body.packs[0]).to.deep.include({ name: 'review', commit: head, pack_version: '1.0.0' });

    const explain = (await api.get<Explain>('/config/explain')).body;
    const origin = (name: string) => explain.agents.find((a) => a.name === name)?.origin;
    expect(origin('review.lint')).to.equal('pack-derived');
    expect(origin('web/tools.helper')).to.equal('pack-derived');
    expect(origin('fixer')).to.equal('inline');
    expect(explain.providers.echo.origin).to.equal('city');
    expect(explain.providers.claude.origin).to.equal('builtin');

    // A retried add with its Idempotency-Key answers as the first (201); another body under the key is refused.
    const tools = { source: join(root, 'tools'), name: 'toolbox' };
    const keyedFirst = await api.post('/packs', tools, { 'Idempotency-Key': 'pack-1' });
    expect(keyedFirst.status, JSON.stringify(keyedFirst.body)).to.equal(201);
    const keyedAgain = await api.post('/packs', tools, { 'Idempotency-Key': 'pack-1' });
    expect(keyedAgain.status).to.equal(201);
    expect(keyedAgain.body).to.deep.equal(keyedFirst.body);
    expectProblem(
      await api.post('/packs', { ...tools, name: 'other' }, { 'Idempotency-Key': 'pack-1' }),
      422,
      'idempotency-mismatch',
    );
    expect((await api.del('/packs/toolbox')).status).to.equal(200);
    // The same import again is answered as it is; another source under that name is a conflict.
    expect((await api.post('/packs', { source })).status).to.equal(200);
    expectProblem(
      await api.post('/packs', { source: `file://${root}/tools`, name: 'review' }),
      409,
      'conflict-wrong-state',
    );
  });

  it('a semver version resolves to the newest matching tag; normal start never fetches', async function () {
    const { api } = city;
    writeFileSync(join(repo, 'agents', 'lint', 'prompt.md'), 'You lint harder.\n');
    git(repo, 'commit', '-q', '-am', 'second');
    git(repo, 'tag', 'v1.1.0');
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'third');
    git(repo, 'tag', 'v2.0.0');
    const added = await api.post<{ commit: string }>('/packs', {
      source: `file://${repo}`,
      name: 'ranged',
      version: '^1.0.0',
    });
    expect(added.status, JSON.stringify(added.body)).to.equal(201);
    expect(added.body.commit).to.equal(git(repo, 'rev-parse', 'v1.1.0^{commit}'));

    // The repository goes away: the city restarts from its lock and the machine's cache alone.
    rmSync(repo, { recursive: true, force: true });
    const stop = await fetch(`${city.sup.base}/v0/city/packed/stop`, { method: 'POST', headers: CSRF });
    expect(stop.status).to.be.oneOf([200, 202]);
    await waitUntil('the city to stop', async () => (await city.sup.city('packed'))?.running === false);
    const start = await fetch(`${city.sup.base}/v0/city/packed/start`, { method: 'POST', headers: CSRF });
    expect(start.status).to.be.oneOf([200, 202]);
    await waitUntil('the city to run again', async () => (await city.sup.city('packed'))?.running === true);
    const agents = (await api.get<{ items: Agent[] }>('/agents')).body.items.map((a) => a.name);
    expect(agents).to.include.members(['review.lint', 'ranged.lint']);
    expect((await api.get<Validate>('/config/validate')).body.errors).to.deep.equal([]);
  });

  it('patches: PUT, GET, DELETE for agents, providers and rigs; one that matches nothing is a 422 and changes nothing', async function () {
    const { api } = city;
    const set = await api.call('PUT', '/patches/agents', {
      name: 'review.lint',
      suspended: true,
      env: { LEVEL: 'strict' },
    });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body).to.deep.equal({ status: 'ok', agent_patch: 'review.lint' });
    const agent = await api.get<Agent>('/agent/review.lint');
    expect(agent.body.state).to.equal('suspended');
    const patch = await api.get<Record<string, unknown>>('/patches/agent/review.lint');
    expect(patch.body).to.deep.include({
      Name: 'review.lint',
      Suspended: true,
      Env: { LEVEL: 'strict' },
      Provider: null,
    });
    // A second PUT replaces it whole.
    expect((await api.call('PUT', '/patches/agents', { name: 'review.lint', provider: 'echo' })).status).to.equal(200);
    expect((await api.get<Record<string, unknown>>('/patches/agent/review.lint')).body).to.deep.include({
      Suspended: null,
      Provider: 'echo',
    });
    expect((await api.get<Agent>('/agent/review.lint')).body.state).to.not.equal('suspended');
    // What only the file can say (the body has no field for it) is kept by a PUT.
    const file = join(city.dir, 'city.toml');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(/(name = "review\.lint"\n)/, '$1pre_start_append = ["true"]\n'),
    );
    expect((await api.call('PUT', '/patches/agents', { name: 'review.lint', provider: 'echo' })).status).to.equal(200);
    expect(readFileSync(file, 'utf8')).to.match(/name = "review\.lint"\n(.*\n)*pre_start_append = \["true"\]/);

    const before = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(
      expectProblem(
        await api.call('PUT', '/patches/agents', { name: 'nobody', suspended: true }),
        422,
        'validation-failed',
      ).detail,
    ).to.match(/no agent named nobody/);
    expectProblem(
      await api.call('PUT', '/patches/agents', { name: 'fixer', idle_timeout: 'soon' }),
      422,
      'validation-failed',
    );
    expectProblem(await api.call('PUT', '/patches/agents', { name: 'fixer' }), 422, 'validation-failed');
    expectProblem(await api.call('PUT', '/patches/rigs', { name: 'nowhere', prefix: 'x' }), 422, 'validation-failed');
    expectProblem(
      await api.call('PUT', '/patches/providers', { name: 'nothing', command: 'x' }),
      422,
      'validation-failed',
    );
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.equal(before);

    expect((await api.call('PUT', '/patches/rigs', { name: 'web', prefix: 'wb' })).status).to.equal(200);
    const rigs = await api.get<{ rigs: { name: string; prefix?: string }[] }>('/config');
    expect(rigs.body.rigs.find((r) => r.name === 'web')?.prefix).to.equal('wb');
    expect((await api.call('PUT', '/patches/providers', { name: 'echo', env: { FROM_PATCH: '1' } })).status).to.equal(
      200,
    );
    const explain = (await api.get<Explain>('/config/explain')).body;
    expect(explain.patches).to.deep.equal({ agents: 1, providers: 1, rigs: 1 });
    expect(explain.providers.echo.patched).to.equal(true);
    expect(explain.providers.echo.env).to.include({ FROM_PATCH: '1' });
    expect(explain.agents.find((a) => a.name === 'review.lint')?.patched).to.equal(true);
    expect((await api.get<{ items: unknown[] }>('/patches/rigs')).body.items).to.deep.equal([
      { Name: 'web', Path: null, Prefix: 'wb', DefaultBranch: null, Suspended: null },
    ]);

    for (const path of ['/patches/agent/review.lint', '/patches/provider/echo', '/patches/rig/web']) {
      const gone = await api.del<{ status: string }>(path);
      expect(gone.status, path).to.equal(200);
      expect(gone.body.status).to.equal('deleted');
      expectProblem(await api.get(path), 404, 'patch-not-found');
    }
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.not.include('patches');
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.include("# the city's own worker");

    // Suspending a pack's agent writes its patch (the pack's files are not ours); resuming takes it away again.
    expect((await api.post('/agent/review.lint/suspend')).status).to.equal(200);
    expect((await api.get<Record<string, unknown>>('/patches/agent/review.lint')).body).to.deep.include({
      Suspended: true,
    });
    expect((await api.get<Agent>('/agent/review.lint')).body.state).to.equal('suspended');
    expect((await api.post('/agent/review.lint/resume')).status).to.equal(200);
    expectProblem(await api.get('/patches/agent/review.lint'), 404, 'patch-not-found');
    expect(expectProblem(await api.del('/agent/review.lint'), 409, 'conflict-wrong-state').detail).to.match(
      /comes from pack review/,
    );
  });

  it('validate names the file of a broken edit on disk while the city keeps running; a patch on disk matching nothing is an error', async function () {
    const { api } = city;
    expect((await api.get<Validate>('/config/validate')).body.valid).to.equal(true);
    const path = join(city.dir, 'city.toml');
    const good = readFileSync(path, 'utf8');
    writeFileSync(path, `${good}\n[[agent]\nname = broken\n`);
    const broken = await waitUntil('validate to see the broken file', async () => {
      const v = (await api.get<Validate>('/config/validate')).body;
      return v.valid ? undefined : v;
    });
    expect(broken.errors[0].file).to.equal('city.toml');
    expect((await api.get<{ items: Agent[] }>('/agents')).body.items.map((a) => a.name)).to.include('review.lint');
    writeFileSync(path, `${good}\n[[patches.agent]]\nname = "ghost"\nsuspended = true\n`);
    const stale = await waitUntil('validate to see the stale patch', async () => {
      const v = (await api.get<Validate>('/config/validate')).body;
      return v.errors.some((e) => /ghost/.test(e.message)) ? v : undefined;
    });
    expect(stale.errors.find((e) => /ghost/.test(e.message))).to.deep.include({
      file: 'city.toml',
      key: 'patches.agent[0]',
    });
    writeFileSync(path, good);
    await waitUntil('validate to be clean again', async () => (await api.get<Validate>('/config/validate')).body.valid);
    const defaults = await api.get<{
      workspace: { name: string; prefix: string };
      agents: unknown[];
      providers: Record<string, unknown>;
    }>('/config/defaults');
    expect(defaults.body.workspace).to.deep.include({ name: 'packed', prefix: 'pac' });
    expect(defaults.body.agents).to.deep.equal([]);
    expect(defaults.body.providers).to.have.property('claude');
    expect(defaults.body.providers).to.not.have.property('echo');
  });

  it('refuses sources it must not fetch and sources that cannot be fetched, recording nothing', async function () {
    const { api } = city;
    const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    const lock = readFileSync(join(city.dir, 'packs.lock'), 'utf8');
    expect(
      expectProblem(await api.post('/packs', { source: 'http://169.254.169.254/latest.git' }), 422, 'validation-failed')
        .detail,
    ).to.match(/link-local/);
    expect(
      expectProblem(await api.post('/packs', { source: 'https://10.1.2.3/team/pack.git' }), 422, 'validation-failed')
        .detail,
    ).to.match(/private/);
    expect(
      expectProblem(await api.post('/packs', { source: `file://${root}/missing.git` }), 502, 'pack-fetch-failed')
        .detail,
    ).to.match(/git could not fetch/);
    expect(
      expectProblem(await api.post('/packs', { source: join(root, 'web') }), 422, 'validation-failed').detail,
    ).to.match(/not a pack/);
    expectProblem(await api.post('/packs', { source: `file://${root}/x.git//../etc` }), 422, 'validation-failed');
    expectProblem(await api.post('/packs', { source: '' }), 422, 'validation-failed');
    expectProblem(await api.del('/packs/nothing'), 404, 'pack-not-found');
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.equal(toml);
    expect(readFileSync(join(city.dir, 'packs.lock'), 'utf8')).to.equal(lock);
  });

  it('a pack.toml over the 1 MiB limit for TOML files is a 422 naming the limit, never parsed, nothing recorded', async function () {
    const { api } = city;
    const huge = join(root, 'huge');
    mkdirSync(huge);
    // 2 MiB of agents: a real pack.toml is a few KiB.
    let text = '[pack]\nname = "huge"\n';
    for (let i = 0; text.length < 2 * 1024 * 1024; i++) text += `\n[[agent]]\nname = "a${i}"\nprovider = "echo"\n`;
    writeFileSync(join(huge, 'pack.toml'), text);
    const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    const refused = expectProblem(await api.post('/packs', { source: huge }), 422, 'validation-failed');
    expect(refused.detail).to.match(/pack\.toml: 2\.0 MiB, over the 1 MiB limit for a TOML file/);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.equal(toml);
  });

  it('a pack served by a local git daemon (git://), added and removed through the CLI', async function () {
    const served = join(root, 'served');
    mkdirSync(served);
    packRepository(served, 'ops');
    const port = await freePort();
    daemon = spawn(
      'git',
      [
        'daemon',
        '--reuseaddr',
        '--export-all',
        `--base-path=${served}`,
        '--listen=127.0.0.1',
        `--port=${port}`,
        served,
      ],
      { stdio: 'ignore' },
    );
    const source = `git://127.0.0.1:${port}/ops`;
    const out = await waitUntil('the git daemon to serve the pack', async () => {
      const r = await city.sup.ctl(['--city', 'packed', 'pack', 'add', source]);
      return r.code === 0 ? r : undefined;
    });
    expect(expectSuccess(out)[0]).to.match(
      /^Added pack ops \(git:\/\/127\.0\.0\.1:\d+\/ops at [0-9a-f]{12}\): 1 agent: ops\.lint$/,
    );
    const list = expectSuccess(await city.sup.ctl(['--city', 'packed', 'pack', 'list']));
    expect(list[0]).to.match(/^NAME\s+SOURCE\s+COMMIT\s+AGENTS\s+DESCRIPTION$/);
    expect(list.some((l) => /^ops\s+git:\/\//.test(l))).to.equal(true);
    expect(expectSuccess(await city.sup.ctl(['--city', 'packed', 'pack', 'remove', 'ops']))).to.deep.equal([
      'Removed pack ops',
    ]);
    expect(readFileSync(join(city.dir, 'packs.lock'), 'utf8')).to.not.include('[packs.ops]');
    expect((await city.api.get<{ items: Agent[] }>('/agents')).body.items.map((a) => a.name)).to.not.include(
      'ops.lint',
    );
    expectFailure(
      await city.sup.ctl(['--city', 'packed', 'pack', 'remove', 'ops']),
      'pack remove',
      /no pack named ops/,
    );
    const explained = expectSuccess(await city.sup.ctl(['--city', 'packed', 'config', 'explain']));
    expect(explained.some((l) => /^review\.lint\s+pack-derived\s+/.test(l))).to.equal(true);
    const valid = expectSuccess(await city.sup.ctl(['--city', 'packed', 'config', 'validate']));
    expect(valid[0]).to.match(/^valid/);
  });
  it('a symbolic link leading out of a pack, a rig or the city is skipped, never read, and named by validate', async function () {
    const { api } = city;
    // A file outside every tree that would pass for a formula, an order and a prompt.
    const secret = join(root, 'secret.txt');
    writeFileSync(secret, 'formula = "stolen"\n\n[[steps]]\nid = "a"\ntitle = "SECRET-CONTENT"\n');
    // A git pack with an absolute link, a relative link that stays inside, and links from an order and a prompt.
    const leaky = join(root, 'leaky');
    mkdirSync(join(leaky, 'formulas'), { recursive: true });
    mkdirSync(join(leaky, 'shared'));
    mkdirSync(join(leaky, 'orders'));
    mkdirSync(join(leaky, 'agents', 'spy'), { recursive: true });
    writeFileSync(join(leaky, 'pack.toml'), '[pack]\nname = "leaky"\n');
    writeFileSync(join(leaky, 'shared', 'kept.toml'), 'formula = "kept"\n\n[[steps]]\nid = "a"\ntitle = "Kept"\n');
    symlinkSync('../shared/kept.toml', join(leaky, 'formulas', 'kept.toml'));
    symlinkSync(secret, join(leaky, 'formulas', 'passwd.toml'));
    symlinkSync(secret, join(leaky, 'orders', 'leak.toml'));
    writeFileSync(join(leaky, 'agents', 'spy', 'agent.toml'), 'provider = "echo"\nmin_active_sessions = 0\n');
    symlinkSync(secret, join(leaky, 'agents', 'spy', 'prompt.md'));
    git(leaky, 'init', '-q', '-b', 'main');
    git(leaky, 'add', '.');
    git(leaky, 'commit', '-q', '-m', 'links');
    // A local-directory pack with a relative ../ link out of it.
    const loose = join(root, 'loose');
    mkdirSync(join(loose, 'formulas'), { recursive: true });
    writeFileSync(join(loose, 'pack.toml'), '[pack]\nname = "loose"\n');
    symlinkSync('../../secret.txt', join(loose, 'formulas', 'relative.toml'));
    // The city's own formulas/ and a rig's.
    mkdirSync(join(city.dir, 'formulas'), { recursive: true });
    symlinkSync(secret, join(city.dir, 'formulas', 'citylink.toml'));
    mkdirSync(join(root, 'web', 'formulas'), { recursive: true });
    symlinkSync(secret, join(root, 'web', 'formulas', 'riglink.toml'));
    try {
      expect((await api.post('/packs', { source: `file://${leaky}` })).status).to.equal(201);
      expect((await api.post('/packs', { source: loose })).status).to.equal(201);

      const listed = await api.get<{ items: { name: string }[] }>('/formulas?limit=1000');
      const names = listed.body.items.map((f) => f.name);
      expect(names).to.include('kept');
      expect(names).to.not.include.members(['passwd', 'relative', 'citylink', 'riglink', 'stolen']);
      expect((await api.get<{ source: string }>('/formulas/leaky.kept/source')).body.source).to.include('Kept');
      for (const name of ['passwd', 'leaky.passwd', 'relative', 'loose.relative', 'citylink', 'riglink']) {
        const reply = await api.get(`/formulas/${name}/source`);
        expectProblem(reply, 404, 'formula-not-found');
      }
      const orders = (await api.get<{ orders: { name: string }[] }>('/orders')).body.orders.map((o) => o.name);
      expect(orders).to.not.include('leaky.leak');
      const agents = (await api.get<{ items: Agent[] }>('/agents')).body.items.map((a) => a.name);
      expect(agents).to.not.include('leaky.spy');

      const validated = (await api.get<Validate>('/config/validate')).body;
      const warned = validated.warnings.map((w) => `${w.file} ${w.message}`).join('\n');
      for (const file of [
        'formulas/citylink.toml',
        'riglink.toml',
        'relative.toml',
        'passwd.toml',
        'pack:leaky/orders/leak.toml',
        'pack:leaky/agents/spy/prompt.md',
      ]) {
        expect(warned, file).to.match(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*leading out of`));
      }
      // Nothing of the file was ever served.
      for (const path of ['/formulas?limit=1000', '/config/validate', '/orders', '/agents', '/config/explain']) {
        expect(JSON.stringify((await api.get(path)).body), path).to.not.include('SECRET-CONTENT');
      }
    } finally {
      await api.del('/packs/leaky');
      await api.del('/packs/loose');
      rmSync(join(city.dir, 'formulas', 'citylink.toml'), { force: true });
      rmSync(join(root, 'web', 'formulas'), { recursive: true, force: true });
    }
  });
});
