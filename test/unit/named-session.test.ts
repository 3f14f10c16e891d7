import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { readPackFile } from '../../controller/packs/pack-file.js';

// A pack's [[named_session]]: `always` keeps one session of its agent (min_active_sessions ≥ 1), at the city or
// in each rig as its scope says; `on_demand` leaves it to be started by work or mail (min_active_sessions 0), not kept running.
describe("a pack's [[named_session]]", function () {
  let root: string;
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-named-'));
    const pack = join(root, 'packs', 'sw');
    for (const [name, toml] of [
      ['mayor', 'scope = "city"\n'],
      ['deacon', 'scope = "city"\nmin_active_sessions = 2\n'],
      ['committer', 'scope = "rig"\n'],
      ['coder', 'scope = "rig"\n'],
    ]) {
      mkdirSync(join(pack, 'agents', name), { recursive: true });
      writeFileSync(join(pack, 'agents', name, 'agent.toml'), toml);
    }
    writeFileSync(
      join(pack, 'pack.toml'),
      '[pack]\nname = "sw"\n' +
        '[[named_session]]\ntemplate = "mayor"\nscope = "city"\nmode = "always"\n' +
        '[[named_session]]\ntemplate = "deacon"\nscope = "city"\nmode = "always"\n' +
        '[[named_session]]\ntemplate = "committer"\nscope = "rig"\nmode = "always"\n' +
        '[[named_session]]\ntemplate = "coder"\nscope = "rig"\n',
    );
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });

  const compose = (extra = '') =>
    composeConfig(
      root,
      parseCityConfig(
        `[workspace]\nname = "c"\n[imports.sw]\nsource = "./packs/sw"\n[[rigs]]\nname = "web"\npath = "web"\n[rigs.imports.sw]\nsource = "./packs/sw"\n${extra}`,
        'city.toml',
      ),
      { cacheRoot: join(root, 'cache') },
    );

  it('always keeps one session of its agent where its scope says; on_demand changes nothing', function () {
    const composed = compose();
    const min = Object.fromEntries(composed.agents.map((a) => [`${a.dir ?? ''}:${a.name}`, a.min_active_sessions]));
    expect(min).to.deep.equal({
      ':sw.mayor': 1,
      ':sw.deacon': 2,
      'web:sw.committer': 1,
      'web:sw.coder': 0,
    });
    expect(composed.problems).to.deep.equal([]);
    expect(composed.unsupported.map((w) => w.key)).not.to.include('named_session');
  });

  it('names a named session whose template is no agent of the pack', function () {
    writeFileSync(
      join(root, 'packs', 'sw', 'pack.toml'),
      '[pack]\nname = "sw"\n[[named_session]]\ntemplate = "boot"\nscope = "city"\nmode = "always"\n',
    );
    expect(compose().problems).to.deep.include({
      file: 'pack:sw/pack.toml',
      key: 'named_session[0].template',
      message: 'named session boot: the pack has no city-scoped agent boot',
    });
  });

  it('refuses a mode or scope it does not know', function () {
    const dir = join(root, 'packs', 'sw');
    writeFileSync(join(dir, 'pack.toml'), '[[named_session]]\ntemplate = "mayor"\nmode = "sometimes"\n');
    expect(() => readPackFile(dir, 'pack:sw/pack.toml')).to.throw(
      ConfigError,
      'pack:sw/pack.toml: named_session[0].mode must be "always" or "on_demand", not "sometimes"',
    );
    writeFileSync(join(dir, 'pack.toml'), '[[named_session]]\ntemplate = "mayor"\nscope = "town"\n');
    expect(() => readPackFile(dir, 'pack:sw/pack.toml')).to.throw(ConfigError, /scope must be "city" or "rig"/);
  });
});
