import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { listCityTree } from './helpers/city-tree.js';
import { CSRF, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Each test has a supervisor of its own (and, past the first, a running city made for it), so any one runs
// alone (`-g`) and in any order.
describe('city lifecycle (real supervisor and controllers)', function () {
  let sup: TestSupervisor;

  beforeEach(async function () {
    sup = await TestSupervisor.start();
  });

  afterEach(async function () {
    await sup?.cleanup();
  });

  it('creates a city: scaffold, registry and city.created before the 202, then exactly one terminal event', async function () {
    const dir = sup.cityDir('alpha');
    const { data, response } = await sup.api.POST('/v0/city', {
      params: { header: CSRF },
      body: { dir, start_command: 'sleep 3600' },
    });
    expect(response.status).to.equal(202);
    expect(data!.request_id).to.match(/^req-[0-9a-f]{24}$/);
    expect(data!.event_cursor).to.match(/(^|,)alpha:0(,|$)/);
    expect(data!.event_cursor).to.match(/(^|,)__supervisor__:\d+(,|$)/);
    // Before the 202: the directory, its config and its log exist, and the log holds city.created.
    expect(existsSync(join(dir, 'city.toml'))).to.equal(true);
    const log = readFileSync(join(dir, '.ctl', 'events.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const created = JSON.parse(log[0]);
    expect(created).to.include({ seq: 1, type: 'city.created', subject: 'alpha' });
    expect(created.payload).to.deep.equal({ name: 'alpha', path: dir });
    expect(readFileSync(join(sup.home, 'cities.toml'), 'utf8')).to.include(dir);

    const terminal = await sup.terminalEvent(data!.request_id);
    expect(terminal.type).to.equal('request.result.city.create');
    expect(terminal.city).to.equal('alpha');
    expect(terminal.payload).to.deep.equal({ request_id: data!.request_id, name: 'alpha', path: dir });
    const city = await sup.city('alpha');
    expect(city).to.include({ name: 'alpha', path: dir, running: true });
    // Exactly one terminal event, even after more reconciler passes (each would settle the request again if
    // it were still pending).
    await sup.reconcilerPasses(2);
    const terminals = (await sup.events()).filter(
      (e) => (e.payload as { request_id?: string }).request_id === data!.request_id,
    );
    expect(terminals).to.have.length(1);
  });

  describe('a running city', function () {
    beforeEach(async function () {
      await sup.createCity('alpha');
    });

    it('serves per-city routes through the supervisor once running', async function () {
      const { data, response } = await sup.api.GET('/v0/city/{cityName}/status', {
        params: { path: { cityName: 'alpha' } },
      });
      expect(response.status).to.equal(200);
      expect(data!.name).to.equal('alpha');
      expect(Number(response.headers.get('X-CTL-Index'))).to.be.greaterThan(0);
    });

    it('unregister leaves the directory exactly as it was, and register attaches it again', async function () {
      const dir = sup.cityDir('alpha');
      const before = listCityTree(dir);
      const configBefore = readFileSync(join(dir, 'city.toml'));
      const logBefore = readFileSync(join(dir, '.ctl', 'events.jsonl'));
      const { data, response } = await sup.api.POST('/v0/city/{cityName}/unregister', {
        params: { header: CSRF, path: { cityName: 'alpha' } },
      });
      expect(response.status).to.equal(202);
      const terminal = await sup.terminalEvent(data!.request_id);
      expect(terminal.type).to.equal('request.result.city.unregister');
      expect(terminal.payload).to.deep.equal({ request_id: data!.request_id, name: 'alpha', path: dir });
      expect(await sup.city('alpha')).to.equal(undefined);
      const log = readFileSync(join(dir, '.ctl', 'events.jsonl'), 'utf8');
      expect(log).to.include('"city.unregister_requested"');
      // Same files (apart from those that exist only while a controller runs), same config.
      expect(listCityTree(dir)).to.deep.equal(before);
      expect(readFileSync(join(dir, 'city.toml')).equals(configBefore)).to.equal(true);
      // The log only grew (the controller's stop, the unregister request): what was there is unchanged.
      const logAfter = readFileSync(join(dir, '.ctl', 'events.jsonl'));
      expect(logAfter.subarray(0, logBefore.length).equals(logBefore)).to.equal(true);

      const registered = await sup.ctl(['register', dir]);
      expect(registered.stderr).to.equal('');
      expect(registered.code).to.equal(0);
      await waitUntil('alpha to run again', async () => (await sup.city('alpha'))?.running);
    });
  });
});
