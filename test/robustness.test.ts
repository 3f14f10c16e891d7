import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa } from 'execa';
import { ctlEntryPath } from '../shared/paths.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { CSRF, freePort, TestSupervisor, tempDir } from './helpers/supervisor.js';
import { makeUnchangeable } from './helpers/unchangeable.js';
import { waitUntil } from './helpers/wait.js';

async function terminalsOf(sup: TestSupervisor, requestId: string) {
  return (await sup.events()).filter(
    (e) =>
      (e.type === 'request.failed' || e.type.startsWith('request.result.')) &&
      (e.payload as { request_id?: string }).request_id === requestId,
  );
}

describe('robustness', function () {
  describe('exactly one terminal event', function () {
    let sup: TestSupervisor;
    afterEach(async function () {
      await sup?.cleanup();
    });

    it('records it once even when forgetting the request fails and is retried', async function () {
      sup = await TestSupervisor.start({ env: { CTL_CONTROLLER_PHASE_DELAY_MS: '200' } });
      const { data } = await sup.api.POST('/v0/city', {
        params: { header: CSRF },
        body: { dir: sup.cityDir('flaky'), start_command: 'true' },
      });
      // From now on the registry cannot be written, so forgetting the request fails.
      const registry = join(sup.home, 'cities.toml');
      const restore = makeUnchangeable(registry);
      try {
        await sup.terminalEvent(data!.request_id);
        await sup.reconcilerPasses(2); // each retries forgetting it, and must not record it again
        expect(readFileSync(registry, 'utf8')).to.include(data!.request_id);
      } finally {
        restore();
      }
      await waitUntil(
        'the request to be forgotten',
        () => !readFileSync(join(sup.home, 'cities.toml'), 'utf8').includes(data!.request_id),
      );
      expect(await terminalsOf(sup, data!.request_id)).to.have.length(1);
    });

    it('does not record it again after a restart when the previous supervisor already had', async function () {
      const root = tempDir();
      const home = join(root, 'home');
      const city = join(root, 'cities', 'seeded');
      mkdirSync(home, { recursive: true });
      mkdirSync(join(city, '.ctl'), { recursive: true });
      writeFileSync(join(city, 'city.toml'), '[workspace]\nstart_command = "true"\n');
      writeFileSync(join(city, '.ctl', 'events.jsonl'), '');
      const id = 'req-0123456789abcdef01234567';
      writeFileSync(
        join(home, 'cities.toml'),
        `[[cities]]\nname = "seeded"\npath = "${city}"\n\n[[pending_city_requests]]\nrequest_id = "${id}"\noperation = "city.create"\nname = "seeded"\npath = "${city}"\nsupervisor_seq = 0\naccepted_at = "2026-01-01T00:00:00Z"\n`,
      );
      writeFileSync(
        join(home, 'events.jsonl'),
        JSON.stringify({
          seq: 1,
          type: 'request.result.city.create',
          ts: '2026-01-01T00:00:01Z',
          actor: 'api',
          subject: 'seeded',
          payload: { request_id: id, name: 'seeded', path: city },
        }) + '\n',
      );
      sup = await TestSupervisor.start({ root });
      await waitUntil('seeded to run', async () => (await sup.city('seeded'))?.running);
      // A request is forgotten in the pass that settles it, after its terminal event would be recorded: once
      // it is gone from the registry, no pass can record anything for it any more.
      await waitUntil(
        'the request to be forgotten',
        () => !readFileSync(join(home, 'cities.toml'), 'utf8').includes(id),
      );
      expect(await terminalsOf(sup, id)).to.have.length(1);
    });
  });

  describe('controllers', function () {
    let sup: TestSupervisor;
    afterEach(async function () {
      await sup?.cleanup();
    });

    it('resets the back-off after a healthy run, and waits it out before restarting', async function () {
      sup = await TestSupervisor.start({ env: { CTL_HEALTHY_RUN_MS: '1500' } });
      await sup.createCity('bouncy');
      /** When the test first saw the current controller running: the supervisor counts its run from before. */
      let runningSince = Date.now();
      const crash = async () => {
        const before = (await sup.city('bouncy'))!.pid!;
        const killedAt = Date.now();
        process.kill(before, 'SIGKILL');
        await waitUntil('a restart', async () => {
          const city = await sup.city('bouncy');
          return city?.running && city.pid !== before;
        });
        runningSince = Date.now();
        const { data } = await sup.api.GET('/v0/city/{cityName}/events', {
          params: { path: { cityName: 'bouncy' }, query: { type: 'controller.crashed', limit: 1 } },
        });
        const started = Date.parse(
          (
            await sup.api.GET('/v0/city/{cityName}/events', {
              params: { path: { cityName: 'bouncy' }, query: { type: 'controller.started', limit: 1 } },
            })
          ).data!.items[0].ts,
        );
        const payload = data!.items[0].payload as { restarts: number; restart_in_ms: number };
        // The new controller was not started before the back-off had passed.
        expect(started - killedAt).to.be.at.least(payload.restart_in_ms);
        return payload;
      };
      expect(await crash()).to.include({ restarts: 1, restart_in_ms: 500 });
      expect(await crash()).to.include({ restarts: 2, restart_in_ms: 1000 });
      // A healthy run: the controller has run for CTL_HEALTHY_RUN_MS. The condition is itself a time, counted
      // from when we saw it running (the supervisor counts from when it became ready, no later).
      await waitUntil('a healthy run of 1.5 s', () => Date.now() - runningSince > 1500);
      expect(await crash()).to.include({ restarts: 1, restart_in_ms: 500 });
    });

    it('numbers the events of a city created again at the same path from 1', async function () {
      sup = await TestSupervisor.start();
      await sup.createCity('again');
      const { data } = await sup.api.POST('/v0/city/{cityName}/unregister', {
        params: { header: CSRF, path: { cityName: 'again' } },
      });
      await sup.terminalEvent(data!.request_id);
      rmSync(sup.cityDir('again'), { recursive: true, force: true });
      await sup.createCity('again');
      const first = JSON.parse(readFileSync(join(sup.cityDir('again'), '.ctl', 'events.jsonl'), 'utf8').split('\n')[0]);
      expect(first).to.include({ seq: 1, type: 'city.created' });
    });

    it('adopts a controller run by hand (relative --city, a TCP port), proxies to it, and stops it', async function () {
      sup = await TestSupervisor.start();
      await sup.createCity('hand');
      await sup.api.POST('/v0/city/{cityName}/stop', { params: { header: CSRF, path: { cityName: 'hand' } } });
      const port = await freePort();
      const byHand = execa(
        process.execPath,
        [ctlEntryPath(), 'controller', 'run', '--city', '.', '--name', 'hand', '--listen', String(port)],
        {
          cwd: sup.cityDir('hand'),
          reject: false,
          env: sup.env,
        },
      );
      await waitUntil(
        'the hand-run controller to answer',
        async () => (await fetch(`http://127.0.0.1:${port}/v0/city/hand/health`)).ok,
      );
      const started = await sup.api.POST('/v0/city/{cityName}/start', {
        params: { header: CSRF, path: { cityName: 'hand' } },
      });
      expect(started.response.status).to.equal(200);
      expect(started.data!.pid).to.equal(byHand.pid);
      const proxied = await fetch(`${sup.base}/v0/city/hand/health`);
      expect(proxied.status).to.equal(200);
      expect(((await proxied.json()) as { pid: number }).pid).to.equal(byHand.pid);
      const stopped = await sup.api.POST('/v0/city/{cityName}/stop', {
        params: { header: CSRF, path: { cityName: 'hand' } },
      });
      expect(stopped.data).to.include({ status: 'stopped' });
      const result = await byHand;
      expect(result.exitCode).to.equal(0);
    });

    it('kills a controller that ignores SIGTERM when the supervisor stops', async function () {
      this.timeout(60_000);
      sup = await TestSupervisor.start();
      await sup.createCity('stuck');
      const pid = (await sup.city('stuck'))!.pid!;
      process.kill(pid, 'SIGSTOP'); // a stopped process cannot act on SIGTERM
      // Exit status 0: the orderly shutdown (SIGKILL after the grace period) finished before the 10 s
      // deadline, which would have ended the supervisor with status 1.
      expect(await sup.stop()).to.equal(0);
      expect(isAlive(pid)).to.equal(false);
      expect(processesMentioning(sup.root)).to.deep.equal([]);
    });
  });
});
