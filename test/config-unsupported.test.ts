import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Issue {
  file: string;
  key?: string;
  message: string;
}

// A Gas City city whose keys ctl does not act on runs, and says so: validate names each with its file and key, the
// event log records them once, and a typo in our own tables is an error suggesting the key meant.
describe('configuration ctl reads but does not act on (real controller)', function () {
  this.timeout(60_000);
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity(
      'gascity',
      '\n[session]\nprovider = "k8s"\n\n[session.k8s]\nnamespace = "agents"\n\n[imports.gs]\nsource = "./packs/gs"\n',
    );
    const pack = join(city.dir, 'packs', 'gs');
    mkdirSync(join(pack, 'agents', 'mayor'), { recursive: true });
    writeFileSync(
      join(pack, 'pack.toml'),
      '[pack]\nname = "gs"\nschema = 2\n\n[global]\nsession_live = ["echo hi"]\n\n[[patches.agent]]\nname = "mayor"\n\n[[named_session]]\ntemplate = "mayor"\nmode = "always"\n',
    );
    writeFileSync(join(pack, 'agents', 'mayor', 'agent.toml'), 'provider = "echo"\nnudge = "wake up"\npromt = "hi"\n');
    // The pack appeared after the city loaded: touching city.toml reloads it.
    writeFileSync(join(city.dir, 'city.toml'), `${readCity()}\n`);
    await waitUntil('the pack agent to load', async () => (await city.api.get('/agent/gs.mayor')).status === 200);
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  const readCity = () => readFileSync(join(city.dir, 'city.toml'), 'utf8');

  it('GET /config/validate names each unsupported key as a warning and the typo as an error, with file and key', async function () {
    const { body } = await city.api.get<{ valid: boolean; errors: Issue[]; warnings: Issue[] }>('/config/validate');
    const warning = (file: string, key: string) => body.warnings.find((w) => w.file === file && w.key === key);
    expect(warning('city.toml', 'session.provider')?.message).to.match(
      /^not supported: `\[session\] provider = "k8s"` — sessions run on this machine/,
    );
    expect(warning('city.toml', 'session.k8s')?.message).to.match(/`\[session\.k8s\]`/);
    expect(warning('pack:gs/pack.toml', 'global')?.message).to.match(/^not supported: `\[global\]`/);
    // [[named_session]] and [[patches.agent]] are acted on now (mode = "always" keeps a session of gs.mayor; the
    // patch is laid over it): no warning.
    expect(warning('pack:gs/pack.toml', 'patches')).to.equal(undefined);
    expect(warning('pack:gs/pack.toml', 'named_session')).to.equal(undefined);
    // An agent's nudge is acted on now (the text an idle session is given when work or mail arrives).
    expect(warning('pack:gs/agents/mayor/agent.toml', 'nudge')).to.equal(undefined);
    expect(body.valid).to.equal(false);
    expect(body.errors).to.deep.include({
      file: 'pack:gs/agents/mayor/agent.toml',
      key: 'promt',
      message: 'unknown key `promt` in pack:gs/agents/mayor/agent.toml — did you mean `prompt`?',
    });
  });

  it('records them once as config.unsupported, and again only when they change', async function () {
    const recorded = await waitUntil('config.unsupported', async () => {
      const events = await city.api.events('config.unsupported');
      return events.some((e) => JSON.stringify(e.payload).includes('pack:gs/pack.toml')) ? events : undefined;
    });
    const last = recorded[recorded.length - 1];
    const payload = last.payload as { unsupported: Issue[]; unknown: Issue[] };
    expect(payload.unsupported.map((i) => `${i.file} ${i.key}`)).to.include.members([
      'city.toml session.provider',
      'pack:gs/pack.toml global',
    ]);
    expect(payload.unknown.map((i) => i.key)).to.deep.equal(['promt']);
    // An edit that changes none of them records nothing more.
    writeFileSync(join(city.dir, 'city.toml'), `${readCity()}\n# a comment\n`);
    writeFileSync(join(city.dir, 'city.toml'), `${readCity()}\n[session.acp]\nhandshake_timeout = "5s"\n`);
    await waitUntil('the new key to be recorded', async () =>
      (await city.api.events('config.unsupported')).some((e) => JSON.stringify(e.payload).includes('session.acp')),
    );
    const after = await city.api.events('config.unsupported');
    expect(after.length).to.equal(recorded.length + 1);
  });

  it('ctl config validate prints each, and exits 1 for the typo', async function () {
    const result = await city.sup.ctl(['--city', 'gascity', 'config', 'validate']);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stdout).to.match(
      /warning city\.toml \(session\.provider\): not supported: `\[session\] provider = "k8s"`/,
    );
    expect(result.stdout).to.match(
      /error pack:gs\/agents\/mayor\/agent\.toml \(promt\): unknown key `promt`.*did you mean `prompt`\?/,
    );
  });
});
