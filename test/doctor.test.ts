import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { DoctorCheck, DoctorReport } from '../shared/dto/doctor.js';
import { starttimeOf } from '../controller/process-tether.js';
import { CityApi } from './helpers/city-api.js';
import { isAlive } from './helpers/processes.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { providersToml } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface DoctorJson {
  ok: boolean;
  reports: (DoctorReport | { scope: 'ctl'; ok: boolean; checks: DoctorCheck[] })[];
}

async function register(sup: TestSupervisor, name: string, cityToml: string): Promise<string> {
  const dir = sup.cityDir(name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'city.toml'), cityToml);
  const res = await fetch(`${sup.base}/v0/cities/register`, {
    method: 'POST',
    headers: { ...CSRF, 'Content-Type': 'application/json' },
    body: JSON.stringify({ path: dir }),
  });
  expect(res.status, await res.text()).to.equal(201);
  await waitUntil(`${name} to run`, async () => (await sup.city(name))?.running === true);
  return dir;
}

function script(path: string, body: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

const checkOf = (out: DoctorJson, id: string) => out.reports.flatMap((r) => r.checks).find((c) => c.id === id);

// `ctl doctor` and the two doctor routes against a real supervisor and controllers: what breaks a city is named
// with how to fix it, the safe fixes run with --fix, and the exit status says whether anything failed.
describe('ctl doctor (real supervisor, controllers and CLI)', function () {
  this.timeout(90_000);
  let sup: TestSupervisor;
  let broken: string;

  before(async function () {
    sup = await TestSupervisor.start();
    const state = join(sup.root, 'state');
    mkdirSync(state);
    await register(sup, 'healthy', `[workspace]\nprovider = "echo"\n${providersToml(state)}`);
    broken = sup.cityDir('broken');
    const pack = join(broken, 'packs', 'tools');
    mkdirSync(pack, { recursive: true });
    writeFileSync(
      join(pack, 'pack.toml'),
      '[pack]\nname = "tools"\n\n[[doctor]]\nname = "widget"\nscript = "checks/widget.sh"\ndescription = "the widget is there"\n\n[[doctor]]\nname = "slow"\nscript = "checks/slow.sh"\ntimeout = "1s"\n',
    );
    script(join(pack, 'checks', 'widget.sh'), 'echo "widget missing"\necho "looked in /opt/widget"\nexit 2');
    script(join(pack, 'checks', 'slow.sh'), 'sleep 30');
    script(join(pack, 'doctor', 'present', 'run.sh'), 'echo "all there"');
    writeFileSync(join(pack, 'doctor', 'present', 'doctor.toml'), 'description = "it is present"\n');
    await register(
      sup,
      'broken',
      '[workspace]\nprovider = "ghost"\n\n[providers.ghost]\ncommand = "ctl-no-such-program --serve"\n\n[[agent]]\nname = "worker"\n\n[imports.tools]\nsource = "./packs/tools"\n',
    );
  });

  after(async function () {
    await sup?.cleanup();
  });

  it('GET /v0/doctor and GET /v0/city/{name}/doctor: stable ids, ok/warn/fail, a message and a fix hint', async function () {
    const machine = (await (await fetch(`${sup.base}/v0/doctor`)).json()) as DoctorReport;
    expect(machine.scope).to.equal('machine');
    expect(machine.checks.map((c) => c.id)).to.include.members([
      'node.version',
      'home.dir',
      'home.disk',
      'home.events.size',
      'city.healthy',
      'city.broken',
    ]);
    expect(machine.checks.find((c) => c.id === 'node.version')?.status).to.equal('ok');
    const { status, body } = await new CityApi(sup, 'broken').get<DoctorReport>('/doctor');
    expect(status).to.equal(200);
    expect(body.ok).to.equal(false);
    const provider = body.checks.find((c) => c.id === 'provider.ghost')!;
    expect(provider.status).to.equal('fail');
    expect(provider.message).to.match(/provider ghost \(worker\) is not installed/);
    expect(provider.fix).to.match(/install it so that `ctl-no-such-program` is on the PATH/);
    for (const id of [
      'city.dir',
      'city.runtime_dir',
      'city.disk',
      'city.events.size',
      'city.orphans',
      'packs.tools',
      'packs.lock',
    ]) {
      expect(body.checks.find((c) => c.id === id)?.status, id).to.equal('ok');
    }
  });

  it('runs each pack’s [[doctor]] and doctor/<name>/ checks, bounded in time, by exit status', async function () {
    const { body } = await new CityApi(sup, 'broken').get<DoctorReport>('/doctor');
    const widget = body.checks.find((c) => c.id === 'pack.tools.widget')!;
    expect(widget).to.deep.include({ status: 'fail', message: 'widget missing', details: ['looked in /opt/widget'] });
    expect(widget.fix).to.match(/checks\/widget\.sh of pack tools/);
    expect(body.checks.find((c) => c.id === 'pack.tools.present')).to.deep.include({
      status: 'ok',
      message: 'all there',
    });
    expect(body.checks.find((c) => c.id === 'pack.tools.slow')).to.deep.include({
      status: 'fail',
      message: 'slow: did not finish within 1s',
    });
  });

  it('ctl doctor exits 1 naming each failure with its fix; 0 when every check of the scope passes', async function () {
    const failing = await sup.ctl(['doctor', '--city', 'broken']);
    expect(failing.code, failing.stderr).to.equal(1);
    expect(failing.stdout).to.match(/FAIL {2}provider\.ghost {2}provider ghost \(worker\) is not installed/);
    expect(failing.stdout).to.match(/ {10}fix: install it so that `ctl-no-such-program`/);
    expect(failing.stdout).to.match(/FAIL {2}pack\.tools\.widget {2}widget missing\n {10}looked in \/opt\/widget/);
    expect(failing.stdout, failing.stdout).to.match(/\d+ checks: \d+ ok, \d+ warnings, [1-9]\d* failed\n?$/);
    const passing = await sup.ctl(['doctor', '--city', 'healthy']);
    expect(passing.stdout).to.not.match(/FAIL/);
    expect(passing.code, passing.stdout).to.equal(0);
    const asJson = JSON.parse((await sup.ctl(['doctor', '--city', 'healthy', '--json'])).stdout) as DoctorJson;
    expect(asJson.ok).to.equal(true);
    expect(asJson.reports.map((r) => r.scope)).to.deep.equal(['ctl', 'machine', 'city']);
    expect(checkOf(asJson, 'provider.echo')?.status).to.equal('ok');
  });

  it('--fix ends a program a controller left running (.ctl/groups) and says so', async function () {
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    child.unref();
    const pid = child.pid!;
    try {
      const groups = join(broken, '.ctl', 'groups');
      writeFileSync(
        join(groups, `${pid}.json`),
        JSON.stringify({ pid, starttime: starttimeOf(pid), what: 'order left' }),
      );
      const seen = JSON.parse((await sup.ctl(['doctor', '--city', 'broken', '--json'])).stdout) as DoctorJson;
      expect(checkOf(seen, 'city.orphans')).to.deep.include({ status: 'fail', fixable: true });
      expect(checkOf(seen, 'city.orphans')?.message).to.include(`${pid} (order left)`);
      expect(isAlive(pid)).to.equal(true);
      const fixed = await sup.ctl(['doctor', '--city', 'broken', '--fix']);
      expect(fixed.stdout, fixed.stdout).to.match(
        new RegExp(`ok {4}city\\.orphans .*\\n {10}fixed: ended 1 orphan process group\\(s\\) \\(${pid}\\)`),
      );
      await waitUntil('the orphan to end', () => !isAlive(pid));
      expect(existsSync(join(groups, `${pid}.json`))).to.equal(false);
    } finally {
      if (isAlive(pid)) process.kill(-pid, 'SIGKILL');
    }
  });

  it('a dead supervisor’s address file: named with no supervisor running, removed by --fix', async function () {
    await sup.stop();
    writeFileSync(
      join(sup.home, 'supervisor.address'),
      JSON.stringify({ pid: 2 ** 22 + 7, api: sup.base, bind: '127.0.0.1', port: sup.port }),
    );
    const seen = await sup.ctl(['doctor']);
    expect(seen.code).to.equal(1);
    expect(seen.stdout).to.match(/FAIL {2}supervisor\.running {2}no supervisor runs for/);
    expect(seen.stdout).to.match(/ {10}fix: ctl supervisor start/);
    expect(seen.stdout).to.match(/warn {2}supervisor\.files {2}supervisor\.address left by a supervisor that is gone/);
    expect(existsSync(join(sup.home, 'supervisor.address'))).to.equal(true);
    const fixed = await sup.ctl(['doctor', '--fix']);
    expect(fixed.stdout).to.match(/ok {4}supervisor\.files .*\n {10}fixed: removed supervisor\.address/);
    expect(existsSync(join(sup.home, 'supervisor.address'))).to.equal(false);
    expect(fixed.code, 'the supervisor still does not run').to.equal(1);
  });
});
