import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// A problem a person left in city.toml (here a broken [[service]] table) does not hold every API write hostage:
// an edit that parses and adds no problem goes through, naming the existing one as a warning.
describe('config writes beside a broken [[service]] table (real controller)', function () {
  this.timeout(60_000);
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('warned', '\n[[service]]\nname = "web"\nurl = "http://127.0.0.1:9"\n');
    const path = join(city.dir, 'city.toml');
    writeFileSync(path, `${readFileSync(path, 'utf8')}\n[[service]]\nname = "bad name!"\nurl = "http://127.0.0.1:9"\n`);
    await waitUntil('the broken edit to be noticed', async () =>
      (await city.api.events('config.reload_failed')).some((e) => /service\[1\]\.name/.test(e.message ?? '')),
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  const warningOf = (headers: Headers) => headers.get('ctl-config-warning') ?? '';

  it('adds an agent, a provider and a rig (201), each answer naming the existing problem; the file keeps it', async function () {
    const { api } = city;
    const agent = await api.post('/agents', { name: 'helper', provider: 'echo' });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
    expect(warningOf(agent.headers)).to.match(
      /^city\.toml already had a problem this write did not fix: .*service\[1\]\.name/,
    );
    expect((await api.get('/agent/helper')).status).to.equal(200);
    const provider = await api.post('/providers', { name: 'plain', command: 'cat', protocol: 'text' });
    expect(provider.status, JSON.stringify(provider.body)).to.equal(201);
    expect(warningOf(provider.headers)).to.match(/service\[1\]\.name/);
    mkdirSync(join(city.dir, 'tools'));
    const rig = await api.post('/rigs', { name: 'tools', path: join(city.dir, 'tools') });
    expect(rig.status, JSON.stringify(rig.body)).to.be.oneOf([200, 201]);
    expect(warningOf(rig.headers)).to.match(/service\[1\]\.name/);
    const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(toml).to.include('name = "bad name!"').and.include('name = "helper"').and.include('[providers.plain]');
    // The good service in use goes on.
    expect((await api.get('/service/web')).status).to.equal(200);
  });

  it('disables an order (its override written) and names the existing problem', async function () {
    const { api } = city;
    mkdirSync(join(city.dir, 'orders'), { recursive: true });
    writeFileSync(join(city.dir, 'orders', 'nightly.toml'), '[order]\ntrigger = "manual"\nexec = "true"\n');
    const disabled = await api.post('/order/nightly/disable');
    expect(disabled.status, JSON.stringify(disabled.body)).to.equal(200);
    expect(warningOf(disabled.headers)).to.match(/service\[1\]\.name/);
    const toml = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expect(toml)
      .to.include('[[orders.overrides]]\nname = "nightly"\nenabled = false\n')
      .and.include('name = "bad name!"');
    expect((await api.get<{ enabled: boolean }>('/order/nightly')).body.enabled).to.equal(false);
  });

  it('an edit that adds a problem of its own is still refused, and writes nothing', async function () {
    const { api } = city;
    const before = readFileSync(join(city.dir, 'city.toml'), 'utf8');
    expectProblem(await api.post('/agents', { name: 'lost', provider: 'no-such-provider' }), 422, 'validation-failed');
    expect(readFileSync(join(city.dir, 'city.toml'), 'utf8')).to.equal(before);
  });
});
