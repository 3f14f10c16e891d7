import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { WireEvent } from '../shared/dto/events.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive, processesMentioning, zombieChildrenOf } from './helpers/processes.js';
import { CSRF, TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** Live `ctl controller run` processes for one city directory. */
function controllersOf(dir: string): number[] {
  return processesMentioning(dir).filter((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return args.includes('controller') && args[args.indexOf('--city') + 1] === dir;
    } catch {
      return false;
    }
  });
}

async function cityEvents(sup: TestSupervisor, name: string): Promise<WireEvent[]> {
  const { data } = await sup.api.GET('/v0/city/{cityName}/events', {
    params: { path: { cityName: name }, query: { limit: 1000 } },
  });
  return data?.items ?? [];
}

/** How long the supervisor waits for a controller after SIGTERM before it kills it (7 s unless told). */
const STOP_GRACE_MS = 2000;

describe('controller processes', function () {
  describe('crash and restart', function () {
    let sup: TestSupervisor;
    withSupervisor(async (started) => {
      sup = started;
      await sup.createCity('alpha');
    });
    it('restarts a controller killed with -9, records the crash, and reaps it', async function () {
      const first = controllerPid(sup.cityDir('alpha'));
      process.kill(first, 'SIGKILL');
      const info = await waitUntil('alpha to run again with a new controller', async () => {
        const city = await sup.city('alpha');
        return city?.running && city.pid !== first ? city : undefined;
      });
      expect(info.pid).to.not.equal(first);
      expect(isAlive(first)).to.equal(false);
      expect(zombieChildrenOf(sup.pid)).to.deep.equal([]);
      const crash = (await cityEvents(sup, 'alpha')).find((e) => e.type === 'controller.crashed');
      expect(crash, 'controller.crashed event').to.not.equal(undefined);
      expect(crash!.payload).to.deep.include({
        pid: first,
        exit_code: null,
        signal: 'SIGKILL',
        restarts: 1,
        restart_in_ms: 500,
      });
      expect(controllersOf(sup.cityDir('alpha'))).to.deep.equal([info.pid]);
    });

    it('backs off: consecutive crashes double the delay', async function () {
      const second = controllerPid(sup.cityDir('alpha'));
      process.kill(second, 'SIGKILL');
      await waitUntil('a restart', async () => {
        const city = await sup.city('alpha');
        return city?.running && city.pid !== second;
      });
      const crashes = (await cityEvents(sup, 'alpha')).filter((e) => e.type === 'controller.crashed');
      expect((crashes[0].payload as { restarts: number }).restarts).to.equal(2);
      expect((crashes[0].payload as { restart_in_ms: number }).restart_in_ms).to.equal(1000);
    });

    it('stop keeps the city registered and stopped (across a supervisor restart), start brings it back', async function () {
      const pid = controllerPid(sup.cityDir('alpha'));
      const { data, response } = await sup.api.POST('/v0/city/{cityName}/stop', {
        params: { header: CSRF, path: { cityName: 'alpha' } },
      });
      expect(response.status).to.equal(200);
      expect(data).to.include({ name: 'alpha', running: false, status: 'stopped' });
      expect(isAlive(pid)).to.equal(false);
      expect(readFileSync(join(sup.home, 'cities.toml'), 'utf8')).to.match(/stopped = true/);
      const proxied = await fetch(`${sup.base}/v0/city/alpha/status`);
      expect(proxied.status).to.equal(404);

      await sup.stop();
      await sup.launch();
      // A pass would start the controller of a city that is not stopped: after one, none was started.
      await sup.reconcilerPasses(1);
      expect(await sup.city('alpha')).to.include({ running: false, status: 'stopped' });
      expect(controllersOf(sup.cityDir('alpha'))).to.deep.equal([]);

      const started = await sup.api.POST('/v0/city/{cityName}/start', {
        params: { header: CSRF, path: { cityName: 'alpha' } },
      });
      expect(started.response.status).to.equal(200);
      expect(started.data).to.include({ name: 'alpha', running: true });
    });

    it('reports the age of the last reconciler pass in /health', async function () {
      const { data } = await sup.api.GET('/health');
      expect(data!.status).to.equal('ok');
      expect(data!.reconciler.healthy).to.equal(true);
      expect(data!.reconciler.ticks).to.be.greaterThan(0);
      expect(data!.reconciler.last_tick_age_ms).to.be.lessThan(3 * data!.reconciler.interval_ms);
    });
  });

  describe('a controller that does not stop when asked (SIGSTOPped: killed after the grace)', function () {
    let sup: TestSupervisor;
    before(async function () {
      sup = await TestSupervisor.start({ env: { CTL_STOP_GRACE_MS: String(STOP_GRACE_MS) } });
      await Promise.all([sup.createCity('stuck'), sup.createCity('wedged')]);
    });
    after(async function () {
      await sup?.cleanup();
    });

    it('is not listed as running while it is being stopped, and its kill is recorded as controller.stopped', async function () {
      this.timeout(60_000);
      const pid = controllerPid(sup.cityDir('stuck'));
      process.kill(pid, 'SIGSTOP');
      const stopping = sup.api.POST('/v0/city/{cityName}/stop', {
        params: { header: CSRF, path: { cityName: 'stuck' } },
      });
      const listed = await waitUntil('stuck to be listed as stopping', async () => {
        const city = await sup.city('stuck');
        return city?.status === 'stopping' ? city : undefined;
      });
      expect(listed).to.include({ running: false, pid });
      expect((await fetch(`${sup.base}/v0/city/stuck/status`)).status).to.equal(404);
      const { response, data } = await stopping;
      expect(response.status).to.equal(200);
      expect(data).to.include({ running: false, status: 'stopped' });
      expect(isAlive(pid)).to.equal(false);
      // The city is stopped, so its log is read where it lies.
      const log = join(sup.cityDir('stuck'), '.ctl', 'events.jsonl');
      const stopped = await waitUntil('controller.stopped in the city log', () => {
        const found = readFileSync(log, 'utf8')
          .split('\n')
          .filter((line) => line.includes('"controller.stopped"'))
          .map((line) => JSON.parse(line) as WireEvent);
        return found.length ? found : undefined;
      });
      expect(stopped, 'controller.stopped').to.have.length(1);
      expect(stopped[0].message).to.match(
        new RegExp(`did not stop within ${STOP_GRACE_MS} ms of SIGTERM and was killed`),
      );
    });

    it('a city registered again under another name is not listed as running until its new controller is', async function () {
      this.timeout(60_000);
      await sup.createCity('renamed-from');
      const dir = sup.cityDir('renamed-from');
      const oldPid = controllerPid(sup.cityDir('renamed-from'));
      const { data, response } = await sup.api.POST('/v0/cities/register', {
        params: { header: CSRF },
        body: { path: dir, name: 'renamed-to' },
      });
      expect(response.status).to.be.lessThan(300);
      // The old controller still serves the old name: never "running" under the new one, in the answer to the
      // register itself nor in the list.
      const answered = JSON.stringify(data);
      expect(answered).to.not.match(new RegExp(`"running":true.*"pid":${oldPid}|"pid":${oldPid}.*"running":true`));
      const listed = (await sup.api.GET('/v0/cities')).data!.items.find((c) => c.name === 'renamed-to');
      expect(listed && listed.running && listed.pid === oldPid, JSON.stringify(listed)).to.not.equal(true);
      const running = await waitUntil('renamed-to to run', async () => {
        const city = await sup.city('renamed-to');
        return city?.running ? city : undefined;
      });
      expect(running.pid).to.not.equal(oldPid);
    });

    it('an unregister that had to kill it ends in request.failed (city_unregister_failed)', async function () {
      this.timeout(60_000);
      const pid = controllerPid(sup.cityDir('wedged'));
      process.kill(pid, 'SIGSTOP');
      const { data, response } = await sup.api.POST('/v0/city/{cityName}/unregister', {
        params: { header: CSRF, path: { cityName: 'wedged' } },
      });
      expect(response.status).to.equal(202);
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.failed');
      expect(terminal.payload).to.include({ operation: 'city.unregister', error_code: 'city_unregister_failed' });
      expect(String((terminal.payload as { error_message?: string }).error_message)).to.match(/was killed/);
      expect(isAlive(pid)).to.equal(false);
      expect(await sup.city('wedged')).to.equal(undefined);
    });
  });

  describe('startup phases and failures', function () {
    let sup: TestSupervisor;
    withSupervisor(
      (started) => {
        sup = started;
      },
      { env: { CTL_CONTROLLER_PHASE_DELAY_MS: '400' } },
    );
    it('lists a starting city with running=false and its phase, and answers 404 on its routes until it runs', async function () {
      const { data } = await sup.api.POST('/v0/city', {
        params: { header: CSRF },
        body: { dir: sup.cityDir('slow'), start_command: 'sleep 3600' },
      });
      const seen = new Set<string>();
      await waitUntil('slow to run', async () => {
        const city = await sup.city('slow');
        if (city && !city.running) {
          seen.add(city.status!);
          const res = await fetch(`${sup.base}/v0/city/slow/health`);
          if (city.status !== 'starting_api') {
            expect(res.status).to.equal(404);
            expect(((await res.json()) as { detail: string }).detail).to.equal(
              'not_found: city not found or not running: slow',
            );
          }
        }
        return city?.running;
      });
      expect([...seen]).to.include.members(['loading_config', 'opening_event_log', 'starting_agents', 'starting_api']);
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.result.city.create');
    });

    it('fails a create whose controller cannot start with request.failed and status init_failed', async function () {
      const dir = sup.cityDir('broken');
      const { data } = await sup.api.POST('/v0/city', {
        params: { header: CSRF },
        body: { dir, start_command: 'sleep 3600' },
      });
      // Break the config before the controller reads it (its first phase is delayed).
      writeFileSync(join(dir, 'city.toml'), '[workspace\nbroken = ');
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.failed');
      expect(terminal.city).to.equal('broken');
      expect(terminal.payload).to.deep.include({
        request_id: data!.request_id,
        operation: 'city.create',
        error_code: 'city_init_failed',
      });
      expect((terminal.payload as { error_message: string }).error_message).to.include('city.toml');
      const city = await sup.city('broken');
      expect(city).to.include({ running: false, status: 'init_failed' });
      expect(city!.error).to.include('city.toml');
    });
  });

  describe('supervisor crash and restart', function () {
    let sup: TestSupervisor;
    before(async function () {
      sup = await TestSupervisor.start({
        env: { CTL_CONTROLLER_PHASE_DELAY_MS: '300', CTL_STOP_GRACE_MS: String(STOP_GRACE_MS) },
      });
      await sup.createCity('steady');
    });
    after(async function () {
      await sup?.cleanup();
    });

    it('after kill -9 with a pending create: one controller per city and exactly one terminal event', async function () {
      const steadyPid = controllerPid(sup.cityDir('steady'));
      const { data } = await sup.api.POST('/v0/city', {
        params: { header: CSRF },
        body: { dir: sup.cityDir('pending'), start_command: 'sleep 3600' },
      });
      await sup.kill9();
      expect(readFileSync(join(sup.home, 'cities.toml'), 'utf8')).to.include(data!.request_id);
      await sup.launch();
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.result.city.create');
      await waitUntil(
        'both cities running',
        async () => (await sup.city('pending'))?.running && (await sup.city('steady'))?.running,
      );
      // The running controller was adopted, not replaced.
      expect((await sup.city('steady'))!.pid).to.equal(steadyPid);
      expect(controllersOf(sup.cityDir('steady'))).to.deep.equal([steadyPid]);
      expect(controllersOf(sup.cityDir('pending'))).to.have.length(1);
      // Exactly one terminal event, even after more reconciler passes (each would settle the request again if
      // it were still pending).
      await sup.reconcilerPasses(2);
      const terminals = (await sup.events()).filter(
        (e) => (e.payload as { request_id?: string }).request_id === data!.request_id,
      );
      expect(terminals).to.have.length(1);
      expect(readFileSync(join(sup.home, 'cities.toml'), 'utf8')).to.not.include(data!.request_id);
      const started = (await sup.events({ type: 'supervisor.started' })).at(-1)!;
      expect(started.payload).to.deep.equal({ previous_exit: 'crash' });
    });

    it('after kill -9 with a pending unregister: the controller is stopped and the result recorded once', async function () {
      const pid = controllerPid(sup.cityDir('pending'));
      const { data } = await sup.api.POST('/v0/city/{cityName}/unregister', {
        params: { header: CSRF, path: { cityName: 'pending' } },
      });
      await sup.kill9();
      await sup.launch();
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.result.city.unregister');
      await waitUntil('the old controller to be gone', () => !isAlive(pid));
      expect(controllersOf(sup.cityDir('pending'))).to.deep.equal([]);
    });

    it('adopts a leftover controller found only by who holds its city lock', async function () {
      const pid = controllerPid(sup.cityDir('steady'));
      await sup.kill9();
      rmSync(join(sup.cityDir('steady'), '.ctl', 'controller.pid'));
      await sup.launch();
      await waitUntil('steady to be listed running', async () => (await sup.city('steady'))?.running);
      expect((await sup.city('steady'))!.pid).to.equal(pid);
      expect(controllersOf(sup.cityDir('steady'))).to.deep.equal([pid]);
    });

    it('on SIGTERM, records the stop of a controller it had to kill before exiting', async function () {
      this.timeout(60_000);
      await sup.createCity('frozen');
      const pid = controllerPid(sup.cityDir('frozen'));
      process.kill(pid, 'SIGSTOP');
      expect(await sup.stop()).to.equal(0);
      expect(isAlive(pid)).to.equal(false);
      const log = readFileSync(join(sup.cityDir('frozen'), '.ctl', 'events.jsonl'), 'utf8');
      expect(log).to.match(/"controller\.stopped".*was killed/);
      await sup.launch();
      await waitUntil('steady to run again', async () => (await sup.city('steady'))?.running);
    });

    it('stops every controller on SIGTERM and exits', async function () {
      const pid = (await sup.city('steady'))!.pid!;
      const code = await sup.stop();
      expect(code).to.equal(0);
      expect(isAlive(pid)).to.equal(false);
      expect(processesMentioning(sup.root)).to.deep.equal([]);
      const log = readFileSync(join(sup.cityDir('steady'), '.ctl', 'events.jsonl'), 'utf8');
      expect(log).to.include('"controller.stopped"');
    });
  });
});
