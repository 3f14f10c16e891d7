import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { CityApi, registerCity } from './helpers/city-api.js';
import { TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// The controller watches every file its configuration was composed from — city.toml and the city's own
// directories, and each local pack's pack.toml, agents, fragments, formulas — not city.toml alone: an edit of a
// pack is taken up as an edit of city.toml is, and a pack imported since is watched once the reload takes it.
describe('the configuration watcher (real controller)', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let dir: string;
  let far: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  const agent = (name: string) => `\n[[agent]]\nname = "${name}"\nmin_active_sessions = 0\n`;
  const agents = async () => (await api.get<{ items: { name: string }[] }>('/agents')).body.items.map((a) => a.name);
  // An edit is heard after it settles (200 ms) and composed at once: a generous bound for a loaded machine.
  const taken = (what: string, name: string) =>
    waitUntil(`${what}: ${name} to be listed`, async () => (await agents()).includes(name), 20_000);

  before(async function () {
    sup = await TestSupervisor.start();
    dir = sup.cityDir('watched');
    // A pack beside the cities, outside the city's directory.
    far = join(sup.root, 'shared-packs', 'far');
    write(join(far, 'pack.toml'), '[pack]\nname = "far"\n');
    write(join(dir, 'packs', 'tools', 'pack.toml'), `[pack]\nname = "tools"\n${agent('first')}`);
    write(
      join(dir, 'city.toml'),
      '[workspace]\nname = "watched"\nstart_command = "sleep 3600"\n\n' +
        `[imports.tools]\nsource = "./packs/tools"\n\n[imports.far]\nsource = "${far}"\n\n` +
        '[imports.soon]\nsource = "./packs/soon"\n',
    );
    api = await registerCity(sup, 'watched');
    expect(await agents()).to.deep.equal(['tools.first']);
  });

  after(async function () {
    await sup?.cleanup();
  });

  const cityToml = () => readFileSync(join(dir, 'city.toml'), 'utf8');

  it("an edit of a local pack's pack.toml, in the city or outside it, is taken up without touching city.toml", async function () {
    const before = statSync(join(dir, 'city.toml')).mtimeMs;
    write(join(dir, 'packs', 'tools', 'pack.toml'), `[pack]\nname = "tools"\n${agent('first')}${agent('second')}`);
    await taken('an edit of packs/tools/pack.toml', 'tools.second');
    write(join(far, 'pack.toml'), `[pack]\nname = "far"\n${agent('scout')}`);
    await taken('an edit of a pack outside the city', 'far.scout');
    // An agent directory of a pack, too.
    write(join(far, 'agents', 'keeper', 'agent.toml'), 'min_active_sessions = 0\n');
    await taken('a new agents/keeper of the pack outside the city', 'far.keeper');
    expect(statSync(join(dir, 'city.toml')).mtimeMs).to.equal(before);
  });

  it('a local pack that was not there is taken up when it appears', async function () {
    write(join(dir, 'packs', 'soon', 'pack.toml'), `[pack]\nname = "soon"\n${agent('early')}`);
    await taken('packs/soon appearing', 'soon.early');
  });

  it('a pack imported after the city started is watched once the reload takes it', async function () {
    const late = join(sup.root, 'shared-packs', 'late');
    write(join(late, 'pack.toml'), `[pack]\nname = "late"\n${agent('one')}`);
    writeFileSync(join(dir, 'city.toml'), `${cityToml()}\n[imports.late]\nsource = "${late}"\n`);
    await taken('the import of late in city.toml', 'late.one');
    write(join(late, 'pack.toml'), `[pack]\nname = "late"\n${agent('one')}${agent('two')}`);
    await taken("an edit of the newly imported pack's pack.toml", 'late.two');
  });
});
