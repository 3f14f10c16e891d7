import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Reply } from './helpers/city-api.js';
import { expectFailure } from './helpers/cli.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { CSRF, TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

async function post(sup: TestSupervisor, path: string, body: unknown): Promise<Reply> {
  const res = await fetch(`${sup.base}${path}`, {
    method: 'POST',
    headers: { ...CSRF, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** A 422 naming `rule`, with an errors entry for `location`. */
function expectRefused(reply: Reply, rule: string, location = 'body.dir'): void {
  const problem = expectProblem(reply, 422, 'validation-failed', { detail: 'invalid: ', location });
  expect(problem.detail, problem.detail).to.include(`rule: ${rule}`);
}

describe('city directories: what a city may be, checked without ever freezing the supervisor', function () {
  let sup: TestSupervisor;

  withSupervisor(async (started) => {
    sup = started;
    await sup.createCity('alpha');
  });

  it('ctl init /proc/nope is a 422 naming the rule, and the supervisor keeps answering', async function () {
    const result = await sup.ctl(['init', '/proc/nope', '--start-command', 'true']);
    expectFailure(result, 'init', /rule: system_directory/);
    expectRefused(await post(sup, '/v0/city', { dir: '/proc/nope', start_command: 'true' }), 'system_directory');
    expectRefused(
      await post(sup, '/v0/city', { dir: '/proc/self/root/tmp/x', start_command: 'true' }),
      'system_directory',
    );
    const health = await fetch(`${sup.base}/health`);
    expect(health.status).to.equal(200);
  });

  it('system directories are refused, their subdirectories are not', async function () {
    for (const dir of ['/etc', '/etc/ctl-city', '/usr', '/sys/x', '/dev/x', '/boot/x', '/', '/tmp', '/home', '/var']) {
      expectRefused(await post(sup, '/v0/city', { dir, start_command: 'true' }), 'system_directory');
    }
    expect(existsSync('/etc/ctl-city')).to.equal(false);
  });

  it('$CTL_HOME, anything inside it, and anything around it are refused', async function () {
    for (const dir of [sup.home, join(sup.home, 'city'), sup.root]) {
      expectRefused(await post(sup, '/v0/city', { dir, start_command: 'true' }), 'ctl_home');
    }
  });

  it('a directory inside another city, inside its .ctl/, or holding cities is refused', async function () {
    const alpha = sup.cityDir('alpha');
    expectRefused(await post(sup, '/v0/city', { dir: join(alpha, 'sub'), start_command: 'true' }), 'inside_city');
    const inRuntime = await post(sup, '/v0/city', { dir: join(alpha, '.ctl', 'x'), start_command: 'true' });
    expectRefused(inRuntime, 'inside_city');
    expect((inRuntime.body as { detail: string }).detail).to.include('.ctl/');
    expectRefused(await post(sup, '/v0/city', { dir: sup.citiesDir, start_command: 'true' }), 'contains_city');
    expect(existsSync(join(alpha, 'sub'))).to.equal(false);
  });

  it('a symbolic link is followed: into another city is refused; dangling links and loops are 422s', async function () {
    const links = join(sup.root, 'links');
    mkdirSync(links, { recursive: true });
    symlinkSync(sup.cityDir('alpha'), join(links, 'to-alpha'));
    expectRefused(
      await post(sup, '/v0/city', { dir: join(links, 'to-alpha', 'inner'), start_command: 'true' }),
      'inside_city',
    );
    symlinkSync(join(sup.root, 'nowhere'), join(links, 'dangling'));
    expectRefused(
      await post(sup, '/v0/city', { dir: join(links, 'dangling'), start_command: 'true' }),
      'dangling_symlink',
    );
    symlinkSync(join(links, 'loop-b'), join(links, 'loop-a'));
    symlinkSync(join(links, 'loop-a'), join(links, 'loop-b'));
    expectRefused(
      await post(sup, '/v0/city', { dir: join(links, 'loop-a', 'x'), start_command: 'true' }),
      'symlink_loop',
    );
    symlinkSync('/etc', join(links, 'etc'));
    expectRefused(
      await post(sup, '/v0/city', { dir: join(links, 'etc', 'x'), start_command: 'true' }),
      'system_directory',
    );
  });

  it('a file in the way, an over-long path or component is a 422, not a 500', async function () {
    const file = join(sup.root, 'a-file');
    writeFileSync(file, 'x');
    expectRefused(await post(sup, '/v0/city', { dir: file, start_command: 'true' }), 'not_a_directory');
    expectRefused(await post(sup, '/v0/city', { dir: join(file, 'city'), start_command: 'true' }), 'not_a_directory');
    expectRefused(
      await post(sup, '/v0/city', { dir: join(sup.root, 'x'.repeat(300)), start_command: 'true' }),
      'too_long',
    );
    const deep = join(sup.root, ...Array.from({ length: 40 }, () => 'y'.repeat(120)));
    expectRefused(await post(sup, '/v0/city', { dir: deep, start_command: 'true' }), 'too_long');
  });

  it('an unwritable parent is a 422', async function () {
    // As root every directory is writable; a read-only bind mount is the one thing root cannot write to.
    const ro = join(sup.root, 'ro');
    mkdirSync(ro);
    try {
      execFileSync('mount', ['--bind', '-o', 'ro', ro, ro], { stdio: 'ignore' });
      execFileSync('mount', ['-o', 'remount,bind,ro', ro], { stdio: 'ignore' });
    } catch {
      // No mount here (no CAP_SYS_ADMIN): skipped, since as root nothing else is unwritable.
      this.skip();
    }
    try {
      expectRefused(await post(sup, '/v0/city', { dir: join(ro, 'city'), start_command: 'true' }), 'not_writable');
    } finally {
      execFileSync('umount', [ro]);
    }
  });

  it('missing levels are created one at a time', async function () {
    const dir = join(sup.root, 'deep', 'er', 'gamma');
    const { data, response } = await sup.api.POST('/v0/city', {
      params: { header: CSRF },
      body: { dir, start_command: 'sleep 3600' },
    });
    expect(response.status).to.equal(202);
    const terminal = await sup.terminalEvent(data!.request_id);
    expect(terminal.type).to.equal('request.result.city.create');
    expect(readFileSync(join(dir, 'city.toml'), 'utf8')).to.include('sleep 3600');
  });

  it('register follows links to the real directory: one directory, one name', async function () {
    const link = join(sup.root, 'alpha-link');
    symlinkSync(sup.cityDir('alpha'), link);
    const viaLink = await post(sup, '/v0/cities/register', { path: link });
    expect(viaLink.status, JSON.stringify(viaLink.body)).to.equal(200);
    expect(viaLink.body).to.include({
      name: 'alpha',
      path: sup.cityDir('alpha'),
    });
    const names = (await sup.api.GET('/v0/cities')).data!.items.filter((c) => c.path === sup.cityDir('alpha'));
    expect(names.map((c) => c.name)).to.deep.equal(['alpha']);
    expectRefused(
      await post(sup, '/v0/cities/register', { path: `/proc/self/root${sup.cityDir('alpha')}` }),
      'system_directory',
      'body.path',
    );
  });

  it('register refuses a city.toml that is not a regular file (a FIFO would block a read forever)', async function () {
    const dir = join(sup.root, 'fifo-city');
    mkdirSync(dir);
    execFileSync('mkfifo', [join(dir, 'city.toml')]);
    const reply = await post(sup, '/v0/cities/register', { path: dir });
    expectProblem(reply, 422, 'validation-failed', { location: 'body.path' });
    expect((reply.body as { detail: string }).detail).to.include('not a regular file');
    expect((await fetch(`${sup.base}/health`)).status).to.equal(200);
  });

  describe('a running city whose directory is deleted', function () {
    it('is reported (status and event), its controller stopped, requests to it never crash anything, and unregister works', async function () {
      const name = 'doomed';
      await sup.createCity(name);
      const dir = sup.cityDir(name);
      const before = await sup.city(name);
      const controllerPid = before!.pid!;
      const supervisorPid = sup.pid;
      rmSync(dir, { recursive: true, force: true });
      // Its controller's socket went with the directory: an answer that says so, never "no route".
      const status = await fetch(`${sup.base}/v0/city/${name}/status`);
      const problem = (await status.json()) as { code: string };
      expect(status.status, JSON.stringify(problem)).to.be.oneOf([502, 404]);
      expect(problem.code).to.be.oneOf(['bad-gateway', 'city-not-found']);
      // Bursts of requests on fresh connections make the controller (and the supervisor's tails) touch the
      // vanished log and lock while new sockets take the lowest free descriptor numbers.
      const poke = () =>
        fetch(`${sup.base}/v0/city/${name}/events`, {
          method: 'POST',
          headers: { ...CSRF, 'Content-Type': 'application/json', Connection: 'close' },
          body: JSON.stringify({ type: 'test.poke', payload: {} }),
        }).then(
          (res) => res.arrayBuffer(),
          () => undefined,
        );
      // Each round needs more connections than the last, so the controller accepts new sockets after the
      // first failed appends.
      for (const concurrent of [1, 2, 8, 32, 64]) {
        await Promise.all(Array.from({ length: concurrent }, poke));
        await fetch(`${sup.base}/v0/events?type=test.poke`).catch(() => undefined);
      }
      const missing = await waitUntil('the city to be listed directory_missing', async () => {
        const info = await sup.city(name);
        return info?.status === 'directory_missing' ? info : undefined;
      });
      expect(missing.running).to.equal(false);
      expect(missing.error).to.include(dir);
      await waitUntil('its controller to be gone', () => !isAlive(controllerPid));
      const event = await waitUntil('city.directory_missing', async () =>
        (await sup.events({ type: 'city.directory_missing' })).find((e) => e.subject === name),
      );
      expect(event.payload).to.deep.equal({ name, path: dir });
      expect(isAlive(supervisorPid), 'the supervisor is alive').to.equal(true);
      expect(existsSync(dir), 'nothing recreated the directory').to.equal(false);

      const unregister = await post(sup, `/v0/city/${name}/unregister`, {});
      expect(unregister.status, JSON.stringify(unregister.body)).to.equal(202);
      const terminal = await sup.terminalEvent((unregister.body as { request_id: string }).request_id);
      expect(terminal.type).to.equal('request.result.city.unregister');
      expect(await sup.city(name)).to.equal(undefined);
      expect(isAlive(supervisorPid)).to.equal(true);
      expect(processesMentioning(dir)).to.deep.equal([]);
      // The controller was stopped, never crashed (a lock acting on a reused descriptor ends in SIGABRT).
      const log = readFileSync(join(sup.home, 'supervisor.log'), 'utf8');
      const crashes = log.split('\n').filter((line) => line.includes(`"city":"${name}"`) && line.includes('crashed'));
      expect(crashes, crashes.join('\n')).to.deep.equal([]);
      expect((await fetch(`${sup.base}/health`)).status).to.equal(200);
    });
  });
});
