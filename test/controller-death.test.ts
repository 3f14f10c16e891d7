// Every program a city runs — a service, a session's program, an order's command — ends when its controller dies,
// by any signal, SIGKILL included: at once through the controller's watchdog, and through the records in
// `.ctl/groups/` when the watchdog died with it. Checked in the process table.
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa, type ResultPromise } from 'execa';
import { ctlEntryPath } from '../shared/paths.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive, killAllMentioning, processesMentioning } from './helpers/processes.js';
import { ECHO_AGENT, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { CSRF, freePort, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** A directory of its own whose path every program of the test names on its command line. */
function holdDir(): { dir: string; hold: string } {
  const dir = tempDir('ctl-held-');
  const hold = join(dir, 'hold.sh');
  // Not exec'd: the shell stays, its command line naming this file, and its sleep is in its group.
  writeFileSync(hold, '#!/bin/sh\nsleep 3600\necho done\n');
  chmodSync(hold, 0o755);
  return { dir, hold };
}

/**
 * What the city runs: a service (which starts one more program outside its process group and session, as a daemon
 * would), an agent's session (echo, told where it is) and an order we run by hand.
 */
function cityExtra(dir: string, hold: string): string {
  return `
[providers.held]
command = "${ECHO_AGENT} ${dir}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

[[agent]]
name = "keeper"
provider = "held"
min_active_sessions = 1

[[service]]
name = "hold"
command = "setsid ${hold} escaped & exec ${hold} service"
`;
}

function writeOrder(cityDir: string, hold: string): void {
  mkdirSync(join(cityDir, 'orders'), { recursive: true });
  writeFileSync(join(cityDir, 'orders', 'hold.toml'), `[order]\ntrigger = "manual"\nexec = "${hold} order"\n`);
}

function ppidOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** The live programs of the test by kind: the service's and the order's shell, the session's echo agent. */
function programs(dir: string): {
  service: number[];
  escaped: number[];
  order: number[];
  session: number[];
  all: number[];
} {
  const all = processesMentioning(dir).filter((pid) => !cmdline(pid).includes('controller run'));
  return {
    service: all.filter((pid) => cmdline(pid).includes('hold.sh service')),
    escaped: all.filter((pid) => cmdline(pid).includes('hold.sh escaped')),
    order: all.filter((pid) => cmdline(pid).includes('hold.sh order')),
    session: all.filter((pid) => cmdline(pid).includes('echo.sh')),
    all,
  };
}

/** The controller's watchdog: its child running the watchdog script. */
function watchdogOf(controller: number): number | undefined {
  return processesMentioning('groups=').find((pid) => ppidOf(pid) === controller);
}

async function allRunning(
  dir: string,
  api: { post: (path: string, body: unknown) => Promise<{ status: number; body?: unknown }> },
) {
  const fired = await api.post('/order/hold/run', {});
  expect(fired.status).to.be.oneOf([200, 202]);
  const now = await waitUntil('a service, a session and an order command to run', () => {
    const now = programs(dir);
    return now.service.length && now.escaped.length && now.order.length && now.session.length ? now : undefined;
  });
  return { ...now, tracking: (fired.body as { tracking_id?: string } | undefined)?.tracking_id };
}

// Twice: with each program in a cgroup of its own (where this machine allows it), and without (CTL_NO_CGROUPS=1),
// where what left its group is found by the marker in its environment (shared/program-scope.ts).
for (const [mode, env] of [
  ['cgroups', {}],
  ['no cgroups', { CTL_NO_CGROUPS: '1' }],
] as const)
  describe(`programs end with their controller, however it dies (${mode})`, function () {
    this.timeout(90_000);

    describe('under the supervisor', function () {
      let city: SessionCity;
      let held: { dir: string; hold: string };

      before(async function () {
        held = holdDir();
        city = await startSessionCity('tethered', cityExtra(held.dir, held.hold), env);
        writeOrder(city.dir, held.hold);
        await waitUntil('the order to be listed', async () => {
          const orders = (await city.api.get<{ orders: { name: string }[] }>('/orders')).body.orders;
          return orders.some((o) => o.name === 'hold');
        });
      });
      after(async function () {
        await city?.sup.cleanup();
        killAllMentioning(held.dir);
        rmSync(held.dir, { recursive: true, force: true });
      });

      it('kill -9 of the controller ends its service, session and order command at once (the watchdog)', async function () {
        const before = await allRunning(held.dir, city.api);
        const controller = controllerPid(city.dir);
        expect(watchdogOf(controller), 'a watchdog for the controller').to.be.a('number');
        process.kill(controller, 'SIGKILL');
        await waitUntil('every program of the dead controller to end', () => before.all.every((pid) => !isAlive(pid)));
        // None was left behind as an orphan (parent pid 1) either.
        expect(before.all.filter((pid) => isAlive(pid) && ppidOf(pid) === 1)).to.deep.equal([]);
        // The new controller starts the service and the session again, in its own groups.
        await waitUntil('the city to run a new controller', async () => {
          const info = await city.sup.city('tethered');
          return info?.running && info.pid !== controller;
        });
        await waitUntil('the service and session to run again', () => {
          const now = programs(held.dir);
          return (
            now.service.length === 1 && now.session.length >= 1 && now.all.every((pid) => !before.all.includes(pid))
          );
        });
        // The firing whose command died with the controller ends once, as failed, and holds the order back no more.
        expect(before.tracking).to.be.a('string');
        const ended = await waitUntil('the interrupted firing to end', async () => {
          const events = await city.api.events();
          const mine = events.filter((e) => (e.payload as { tracking_id?: string }).tracking_id === before.tracking);
          return mine.some((e) => e.type === 'order.failed') ? mine : undefined;
        });
        expect(ended.filter((e) => e.type === 'order.failed' || e.type === 'order.completed')).to.have.length(1);
        expect(JSON.stringify(ended)).to.include('the controller stopped while it ran');
      });

      it('when the watchdog dies with the controller, the next controller reaps what was recorded', async function () {
        const before = await allRunning(held.dir, city.api);
        const controller = controllerPid(city.dir);
        const watchdog = watchdogOf(controller);
        expect(watchdog).to.be.a('number');
        // Both at once: nothing is left to kill the programs but the records in .ctl/groups/.
        process.kill(watchdog!, 'SIGKILL');
        process.kill(controller, 'SIGKILL');
        await waitUntil('every program of the dead controller to end', () => before.all.every((pid) => !isAlive(pid)));
        await waitUntil('the city to run a new controller', async () => {
          const info = await city.sup.city('tethered');
          return info?.running && info.pid !== controller;
        });
      });

      it('ctl supervisor stop leaves nothing running', async function () {
        await allRunning(held.dir, city.api);
        const result = await city.sup.ctl(['supervisor', 'stop']);
        expect(result.code, result.stderr).to.equal(0);
        await waitUntil('nothing of the city to run', () => programs(held.dir).all.length === 0);
        expect(processesMentioning(city.dir)).to.deep.equal([]);
      });
    });

    describe('a controller run by hand (no supervisor to restart it)', function () {
      let root: string;
      let held: { dir: string; hold: string };
      let child: ResultPromise | undefined;

      before(function () {
        root = tempDir('ctl-solo-tether-');
        held = holdDir();
      });
      after(function () {
        if (child?.pid && isAlive(child.pid)) child.kill('SIGKILL');
        killAllMentioning(root);
        killAllMentioning(held.dir);
        rmSync(root, { recursive: true, force: true });
        rmSync(held.dir, { recursive: true, force: true });
      });

      it('kill -9 ends every program it started, with nothing to restart it', async function () {
        const dir = join(root, 'solo');
        mkdirSync(join(dir, '.ctl'), { recursive: true });
        writeFileSync(join(dir, 'city.toml'), `[workspace]\nname = "solo"\n${cityExtra(held.dir, held.hold)}`);
        writeOrder(dir, held.hold);
        const port = await freePort();
        child = execa(
          process.execPath,
          [ctlEntryPath(), 'controller', 'run', '--city', dir, '--listen', String(port)],
          {
            env: { ...process.env, ...env, CTL_HOME: join(root, 'home'), HOME: root },
            reject: false,
            stdin: 'ignore',
            buffer: false,
          },
        );
        const base = `http://127.0.0.1:${port}/v0/city/solo`;
        const api = {
          post: async (path: string, body: unknown) => {
            const res = await fetch(`${base}${path}`, {
              method: 'POST',
              headers: { ...CSRF, 'Content-Type': 'application/json' },
              body: JSON.stringify(body),
            });
            await res.arrayBuffer();
            return { status: res.status };
          },
        };
        await waitUntil('the controller to serve', async () => {
          try {
            return (await fetch(`${base}/orders`)).ok;
          } catch {
            return false;
          }
        });
        const before = await allRunning(held.dir, api);
        process.kill(child.pid!, 'SIGKILL');
        await waitUntil('every program of the dead controller to end', () => before.all.every((pid) => !isAlive(pid)));
        expect(programs(held.dir).all).to.deep.equal([]);
      });
    });
  });
