import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Rig {
  name: string;
  path: string;
  suspended: boolean;
  agent_count: number;
  running_count: number;
  present: boolean;
  prefix?: string;
  git?: {
    branch?: string;
    clean: boolean;
    ahead: number;
    behind: number;
    changed_files: string[];
    head?: string;
    upstream?: string;
    error?: string;
  };
}

/** A real git repository with one commit on `main`, and a clone of it that is one commit ahead. */
function repositories(): { origin: string; work: string } {
  const root = tempDir('ctl-rig-git-');
  const origin = join(root, 'origin');
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd, stdio: 'pipe' });
  mkdirSync(origin);
  git(origin, 'init', '-q', '-b', 'main');
  writeFileSync(join(origin, 'README'), 'hello\n');
  git(origin, 'add', 'README');
  git(origin, 'commit', '-q', '-m', 'first');
  const work = join(root, 'work');
  git(root, 'clone', '-q', origin, work);
  writeFileSync(join(work, 'CHANGES'), 'more\n');
  git(work, 'add', 'CHANGES');
  git(work, 'commit', '-q', '-m', 'second');
  return { origin, work };
}

describe('rigs (real git repositories)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let repos: { origin: string; work: string };

  before(async function () {
    repos = repositories();
    city = await startSessionCity(
      'rigged',
      '\n[[agent]]\nname = "fixer"\ndir = "web"\nprovider = "echo"\nmin_active_sessions = 0\n',
    );
  });
  after(async () => city?.sup.cleanup());

  it('POST /rigs adds an existing repository (201, written to city.toml); ?git=true shows its branch and state', async function () {
    const { api } = city;
    const before = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    const created = await api.post<{ status: string; rig: string; prefix: string }>('/rigs', {
      name: 'web',
      path: repos.work,
      prefix: 'web',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body).to.deep.equal({ status: 'created', rig: 'web', prefix: 'web' });
    const shown = await api.get<Rig>('/rig/web');
    expect(shown.body).to.include({ name: 'web', path: repos.work, suspended: false, agent_count: 1, present: true });
    const after = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(after.startsWith(before)).to.equal(true);
    expect(after.slice(before.length)).to.equal(
      `\n[[rigs]]\nname = "web"\npath = ${JSON.stringify(repos.work)}\nprefix = "web"\n`,
    );
    // Its agent is now the rig's: addressed rig/agent.
    expect((await api.get('/agent/web/fixer')).status).to.equal(200);

    const listed = await api.get<{ items: Rig[]; total: number }>('/rigs?git=true');
    expect(listed.body.total).to.equal(1);
    const git = listed.body.items[0].git!;
    expect(git).to.include({ branch: 'main', clean: true, ahead: 1, behind: 0, upstream: 'origin/main' });
    expect(git.head).to.match(/^[0-9a-f]{40}$/);
    writeFileSync(join(repos.work, 'README'), 'changed\n');
    writeFileSync(join(repos.work, 'NEW'), 'new\n');
    const dirty = (await api.get<Rig>('/rig/web?git=true')).body.git!;
    expect(dirty.clean).to.equal(false);
    expect([...dirty.changed_files].sort()).to.deep.equal(['NEW', 'README']);
  });

  it('refuses a bad rig: a missing directory, a duplicate, a bad name; a directory that is not git says so', async function () {
    const { api } = city;
    const missing = await api.post('/rigs', { name: 'ghost', path: '/nonexistent/dir' });
    expectProblem(missing, 422, 'validation-failed');
    expect(JSON.stringify(missing.body)).to.include('body.path');
    expectProblem(await api.post('/rigs', { name: 'web', path: repos.origin }), 409, 'conflict-wrong-state');
    expectProblem(await api.post('/rigs', { name: '../x', path: repos.origin }), 422, 'validation-failed');
    const plain = tempDir('ctl-rig-plain-');
    expect((await api.post('/rigs', { name: 'plain', path: plain })).status).to.equal(201);
    const status = (await api.get<Rig>('/rig/plain?git=true')).body.git!;
    expect(status.error).to.match(/not a git repository/);
    expectProblem(await api.get('/rig/nope'), 404, 'rig-not-found');
  });

  it('refuses rig paths the placement rules forbid and clone URLs the source policy refuses, naming the rule', async function () {
    const { api, sup } = city;
    const refused = async (body: Record<string, string>, field: string, text: string) => {
      const reply = await api.post('/rigs', { name: 'bad', ...body });
      expectProblem(reply, 422, 'validation-failed');
      const problem = reply.body as { detail: string; errors: { location: string }[] };
      expect(problem.errors[0].location, JSON.stringify(body)).to.equal(`body.${field}`);
      expect(problem.detail, JSON.stringify(body)).to.include(text);
    };
    await refused({ path: '/' }, 'path', '(rule: system_directory)');
    await refused({ path: '/etc' }, 'path', '(rule: system_directory)');
    await refused({ path: '/proc/self' }, 'path', '(rule: system_directory)');
    await refused({ path: '../../..' }, 'path', '(rule: escapes_city)');
    await refused({ path: 'rigs/../../elsewhere' }, 'path', '(rule: escapes_city)');
    await refused({ path: sup.root }, 'path', '(rule: home_directory)'); // the controller's $HOME
    await refused({ path: sup.home }, 'path', '(rule: ctl_home)');
    await refused({ path: city.dir }, 'path', '(rule: contains_city)');
    mkdirSync(join(city.dir, '.ctl', 'inside'), { recursive: true });
    await refused({ path: '.ctl/inside' }, 'path', '(rule: inside_city)');
    // A clone's target too, before anything is cloned.
    await refused({ git_url: `file://${repos.origin}`, path: '/etc/x' }, 'path', '(rule: system_directory)');
    await refused({ git_url: `file://${repos.origin}`, path: '../out' }, 'path', '(rule: escapes_city)');

    await refused({ git_url: 'http://169.254.169.254/x.git' }, 'git_url', 'link-local');
    await refused({ git_url: 'http://10.1.2.3/x.git' }, 'git_url', 'in a private range');
    await refused({ git_url: 'https://[fd00::1]/x.git' }, 'git_url', 'unique-local');
    await refused({ git_url: '-uevil@host:x' }, 'git_url', 'may not begin with "-"');
    await refused({ git_url: '--upload-pack=touch /tmp/x' }, 'git_url', 'may not begin with "-"');
    await refused({ git_url: 'ssh://-oProxyCommand=x/y.git' }, 'git_url', 'begins with "-"');
    await refused({ git_url: 'me@-oProxy:y.git' }, 'git_url', 'begins with "-"');
    // The machine's [packs] policy is the one pack sources meet: file:// off refuses a file:// clone.
    const config = join(sup.home, 'supervisor.toml');
    const before = readFileSync(config, 'utf8');
    writeFileSync(config, `${before}\n[packs]\nallow_file_sources = false\n`);
    try {
      await refused({ git_url: `file://${repos.origin}` }, 'git_url', 'file:// pack sources are disabled');
    } finally {
      writeFileSync(config, before);
    }
    expect((await api.get<{ items: Rig[] }>('/rigs')).body.items.map((r) => r.name)).to.not.include('bad');
    expect(existsSync(join(city.dir, 'rigs', 'bad'))).to.equal(false);
  });

  it('POST /rig/{name}/{action} refuses an action a rig does not have (422, naming the ones there are)', async function () {
    const refused = await city.api.post('/rig/web/explode', {});
    expectProblem(refused, 422, 'validation-failed', { location: 'path.action' });
    expect(JSON.stringify(refused.body)).to.include('suspend, resume, restart');
  });

  it('GET /rigs, /agents and /status with index = X-CTL-Index wait for the next event; lite leaves the counts out', async function () {
    const { api } = city;
    const now = await api.get<{ work?: unknown; mail?: unknown }>('/status');
    expect(now.body).to.have.property('work');
    const index = Number(now.headers.get('X-CTL-Index'));
    expect(index).to.be.greaterThan(0);
    let settled = 0;
    const blocked = ['/rigs', '/agents', '/status?lite=true'].map((path) =>
      api.get(`${path}${path.includes('?') ? '&' : '?'}index=${index}&wait=30s`).finally(() => settled++),
    );
    // A later request over the same paths has been answered: the blocking ones, sent before it, wait by now.
    expect((await api.get('/rigs')).status).to.equal(200);
    expect((await api.get('/status')).status).to.equal(200);
    expect(settled, 'a blocking query answered before anything changed').to.equal(0);
    await api.create({ title: 'wakes the blocking queries' });
    for (const reply of await Promise.all(blocked)) {
      expect(reply.status).to.equal(200);
      expect(Number(reply.headers.get('X-CTL-Index'))).to.be.greaterThan(index);
    }
    const lite = (await blocked[2]).body as { work?: unknown; mail?: unknown; agents?: unknown };
    expect(lite).to.have.property('agents');
    expect(lite).to.not.have.property('work');
    expect(lite).to.not.have.property('mail');
    expectProblem(await api.get('/agents?index=0&wait=soon'), 422, 'validation-failed', { location: 'query.wait' });
  });

  it('suspend, resume, patch and delete edit its table; the CLI speaks for them', async function () {
    const { api, sup } = city;
    const ctl = (...args: string[]) => sup.ctl(['--city', 'rigged', ...args]);
    expect(expectSuccess(await ctl('rig', 'suspend', 'web'))).to.deep.equal(['Suspended rig web']);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.include('prefix = "web"\nsuspended = true\n');
    await waitUntil('the agent suspended with its rig', async () => {
      const agent = await api.get<{ state: string }>('/agent/web/fixer');
      return agent.body.state === 'suspended';
    });
    const list = expectSuccess(await ctl('rig', 'list', '--git'));
    expect(list[0]).to.match(/^NAME\s+STATE\s+AGENTS\s+GIT\s+PATH$/);
    expect(list.some((l) => /^web\s+suspended\s+0\/1\s+main 2 changed ↑1\s+/.test(l))).to.equal(true);
    expect(expectSuccess(await ctl('rig', 'resume', 'web'))).to.deep.equal(['Resumed rig web']);
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.not.include('suspended = true');
    const patched = await api.patch<Rig>('/rig/web', { prefix: 'wb' });
    expect(patched.body.prefix).to.equal('wb');
    // A bead of the rig is numbered with its prefix; the numbers stay the city's.
    const bead = await api.create({ title: 'Fix the header', rig: 'web' });
    expect(bead.id).to.match(/^wb-\d+$/);
    expect((await api.bead(bead.id)).metadata?.rig).to.equal('web');
    expectProblem(await api.patch('/rig/web', { prefix: 'bad prefix' }), 422, 'validation-failed');
    const shown = expectSuccess(await ctl('rig', 'status', 'web'));
    expect(shown.some((l) => /^Git:\s+main 2 changed ↑1$/.test(l))).to.equal(true);
    expect(shown).to.include('  README');
    expect(expectSuccess(await ctl('rig', 'remove', 'plain'))).to.deep.equal(['Removed rig plain']);
    expectProblem(await api.get('/rig/plain'), 404, 'rig-not-found');
    expectFailure(await ctl('rig', 'add', 'x', '/nonexistent/dir'), 'rig add', /is not an existing directory/);
    const added = expectSuccess(await ctl('rig', 'add', 'origin', repos.origin));
    expect(added).to.deep.equal([`Added rig origin at ${repos.origin}`]);
  });

  it('git_url: 202, the clone runs in the background with progress, then request.result.rig.create; a bad URL fails cleanly', async function () {
    const { api, sup } = city;
    const accepted = await api.post<{ status: string; rig: string; request_id: string; event_cursor: string }>(
      '/rigs',
      {
        name: 'cloned',
        git_url: `file://${repos.origin}`,
      },
    );
    expect(accepted.status, JSON.stringify(accepted.body)).to.equal(202);
    expect(accepted.body).to.include({ status: 'accepted', rig: 'cloned' });
    const result = await waitUntil('the clone to finish', async () =>
      (await api.events()).find(
        (e) =>
          (e.type === 'request.result.rig.create' || e.type === 'request.failed') &&
          (e.payload as { request_id?: string }).request_id === accepted.body.request_id,
      ),
    );
    expect(result.type, JSON.stringify(result.payload)).to.equal('request.result.rig.create');
    expect(result.payload).to.deep.equal({
      request_id: accepted.body.request_id,
      rig: 'cloned',
      prefix: '',
      default_branch: 'main',
    });
    expect(result.seq).to.be.greaterThan(Number(accepted.body.event_cursor));
    const steps = (await api.events('rig.provision.progress'))
      .filter((e) => (e.payload as { request_id?: string }).request_id === accepted.body.request_id)
      .map((e) => (e.payload as { step: string }).step);
    expect(steps[0]).to.equal('clone');
    expect(steps.at(-1)).to.equal('config');
    const rig = (await api.get<Rig & { default_branch: string }>('/rig/cloned?git=true')).body;
    expect(rig).to.include({ path: join(city.dir, 'rigs', 'cloned'), default_branch: 'main' });
    expect(rig.git).to.include({ branch: 'main', clean: true });
    expectProblem(
      await api.post('/rigs', { name: 'cloned', git_url: `file://${repos.origin}` }),
      409,
      'conflict-wrong-state',
    );
    expectProblem(await api.post('/rigs', { name: 'bad', git_url: 'not a url' }), 422, 'validation-failed');

    const failing = await api.post<{ request_id: string }>('/rigs', {
      name: 'gone',
      git_url: 'file:///nonexistent/repo.git',
    });
    expect(failing.status).to.equal(202);
    const failed = await waitUntil('the failure', async () =>
      (await api.events('request.failed')).find(
        (e) => (e.payload as { request_id?: string }).request_id === failing.body.request_id,
      ),
    );
    expect(failed.payload).to.include({ operation: 'rig.create', error_code: 'rig_clone_failed' });
    // git's error, not its first line of progress ("Cloning into '…'…").
    const reason = (failed.payload as { error_message: string }).error_message;
    expect(reason)
      .to.match(/^fatal: /)
      .and.match(/nonexistent/);
    expect(failed.message).to.equal(reason);
    expectProblem(await api.get('/rig/gone'), 404, 'rig-not-found');

    // An empty repository clones without a commit: named as what it is, not "HEAD".
    const empty = join(tempDir('ctl-empty-repo-'), 'empty.git');
    execFileSync('git', ['init', '-q', '--bare', empty]);
    const hollow = await api.post<{ request_id: string }>('/rigs', { name: 'hollow', git_url: `file://${empty}` });
    expect(hollow.status).to.equal(202);
    const hollowFailed = await waitUntil('the empty clone to fail', async () =>
      (await api.events('request.failed')).find(
        (e) => (e.payload as { request_id?: string }).request_id === hollow.body.request_id,
      ),
    );
    expect((hollowFailed.payload as { error_message: string }).error_message).to.match(
      /empty\.git is an empty repository: it has no commit to check out/,
    );
    expect(existsSync(join(city.dir, 'rigs', 'hollow'))).to.equal(false);
    expect(existsSync(join(city.dir, 'rigs', 'gone'))).to.equal(false);

    const viaCli = expectSuccess(
      await sup.ctl(['--city', 'rigged', 'rig', 'add', 'again', '--git-url', `file://${repos.origin}`]),
    );
    expect(viaCli).to.deep.equal([`Added rig again at ${join(city.dir, 'rigs', 'again')}`]);
  });
});
