import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';

// `[[pack.requires]]`: agents a pack's formulas and orders need. `scope = "city"`: some agent of the city answers
// to the name (composed, or as its pack names it); `scope = "rig"`: what the pack's load brought into each rig
// loading it has one. One missing is a problem naming the requirement; the city runs on.
describe('pack requirements (in-process)', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-requires-'));
    write(
      'packs/work/pack.toml',
      '[pack]\nname = "work"\n[[pack.requires]]\nscope = "city"\nagent = "mayor"\n' +
        '[[pack.requires]]\nscope = "rig"\nagent = "polecat"\n',
    );
    write('packs/work/agents/polecat/agent.toml', 'scope = "rig"\n');
    write('packs/boss/pack.toml', '[pack]\nname = "boss"\n');
    write('packs/boss/agents/mayor/agent.toml', 'scope = "city"\n');
    write('packs/none/pack.toml', '[pack]\nname = "none"\n');
    mkdirSync(join(root, 'app'));
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });
  const rig = (pack: string) => `[[rigs]]\nname = "app"\npath = "app"\n[rigs.imports.w]\nsource = "./packs/${pack}"\n`;

  it('is met by an agent of another pack at the city, and by the pack’s own agent in the rig', function () {
    const composed = compose(
      `[imports.work]\nsource = "./packs/work"\n[imports.boss]\nsource = "./packs/boss"\n${rig('work')}`,
    );
    expect(composed.problems).to.deep.equal([]);
    expect(composed.unsupported).to.deep.equal([]);
  });

  it('names each requirement nothing meets', function () {
    write('packs/none/pack.toml', '[pack]\nname = "none"\n[[pack.requires]]\nscope = "rig"\nagent = "polecat"\n');
    const composed = compose(`[imports.work]\nsource = "./packs/work"\n${rig('none')}`);
    const tail = ' — import or include a pack that provides it';
    expect(composed.problems.map((p) => [p.file, p.key, p.message])).to.deep.equal([
      [
        'pack:app/w/pack.toml',
        'pack.requires[0]',
        `pack:app/w/pack.toml: pack.requires[0]: the pack needs an agent polecat in rig app, and none is there${tail}`,
      ],
      [
        'pack:work/pack.toml',
        'pack.requires[0]',
        `pack:work/pack.toml: pack.requires[0]: the pack needs an agent mayor in the city, and none is there${tail}`,
      ],
    ]);
  });

  it('refuses a requirement without a scope or an agent, naming it', function () {
    write('packs/none/pack.toml', '[pack]\nname = "none"\n[[pack.requires]]\nscope = "town"\nagent = "x"\n');
    const composed = compose('[imports.none]\nsource = "./packs/none"\n');
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      'pack none: pack:none/pack.toml: pack.requires[0].scope must be "city" or "rig"',
    ]);
  });
});
