import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { resolveAgents } from '../../controller/agent-catalog/agent-catalog.js';
import { composeConfig } from '../../controller/config/compose.js';
import { explainView, type ConfigViewsHost } from '../../controller/config/config-views.js';

// The reference's `fallback = true` (an agent definition for when nothing else defines its name: a definition
// of the same name that is not a fallback, from another pack or the city, replaces it), and a pack's
// `[[patches.agent]]` reaching an agent its own import brings — as the reference's gastown example patches its
// maintenance pack's fallback `dog`.
describe('fallback agents and patches of an imported agent', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-fallback-'));
    write('packs/maint/pack.toml', '[pack]\nname = "maint"\n');
    write('packs/maint/agents/dog/agent.toml', 'scope = "city"\nfallback = true\nenv = { FROM = "maint" }\n');
    write('packs/gt/pack.toml', '[pack]\nname = "gt"\n');
    write('packs/gt/agents/dog/agent.toml', 'scope = "city"\nenv = { FROM = "gt" }\n');
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) => {
    const config = parseCityConfig(cityToml, 'city.toml');
    return composeConfig(root, config, { cacheRoot: join(root, 'cache') });
  };
  const explained = (composed: ReturnType<typeof compose>) => {
    const host: ConfigViewsHost = {
      config: composed.config,
      composed,
      agents: resolveAgents(root, composed.config, composed.agents, () => undefined, undefined),
      reloadError: undefined,
      reloadErrorPlace: undefined,
      providers: { all: () => [] },
      orders: { list: () => ({ orders: [], errors: [], skipped: [] }) },
      formulas: { list: () => [], skipped: () => [] },
    };
    return explainView(host).agents;
  };

  it('a fallback loaded first yields to a definition of the same name that is not one, and explain says so', function () {
    const composed = compose('[workspace]\nincludes = ["packs/maint", "packs/gt"]\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => [a.name, a.env.FROM])).to.deep.equal([['dog', 'gt']]);
    expect(composed.unsupported.map((w) => `${w.file} ${w.key}`)).to.deep.equal([]);
    const [dog] = explained(composed);
    expect(dog).to.include({ name: 'dog', source: 'pack:gt/agents/dog/agent.toml' });
    expect(dog.fallback).to.equal(undefined);
    expect(dog.replaced).to.deep.equal([
      {
        source: 'pack:maint/agents/dog/agent.toml',
        pack: 'maint',
        reason:
          'a fallback definition (fallback = true): a definition of the same name that is not a fallback replaces it',
      },
    ]);
  });

  it('a fallback loaded after the definition that is not one yields to it too', function () {
    // gt re-exports its import of maint: maint's dog is named gt.dog, as gt's own is.
    write('packs/gt/pack.toml', '[pack]\nname = "gt"\n[imports.maint]\nsource = "../maint"\nexport = true\n');
    const composed = compose('[imports.gt]\nsource = "packs/gt"\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents.map((a) => [a.name, a.env.FROM])).to.deep.equal([['gt.dog', 'gt']]);
    expect(composed.replaced.map((r) => [r.name, r.source, r.by])).to.deep.equal([
      ['gt.dog', 'pack:gt.maint/agents/dog/agent.toml', 'pack:gt/agents/dog/agent.toml'],
    ]);
  });

  it('a fallback alone is used, and of two fallbacks the first loaded is kept', function () {
    const alone = compose('[workspace]\nincludes = ["packs/maint"]\n');
    expect(alone.agents.map((a) => [a.name, a.env.FROM, a.fallback])).to.deep.equal([['dog', 'maint', true]]);
    expect(alone.replaced).to.deep.equal([]);
    expect(explained(alone)[0]).to.include({ name: 'dog', fallback: true });
    write('packs/gt/agents/dog/agent.toml', 'scope = "city"\nfallback = true\nenv = { FROM = "gt" }\n');
    const both = compose('[workspace]\nincludes = ["packs/gt", "packs/maint"]\n');
    expect(both.agents.map((a) => [a.name, a.env.FROM])).to.deep.equal([['dog', 'gt']]);
    expect(both.replaced.map((r) => r.source)).to.deep.equal(['pack:maint/agents/dog/agent.toml']);
  });

  it('two definitions of a name neither of which is a fallback are both kept, for the duplicate check', function () {
    write('packs/maint/agents/dog/agent.toml', 'scope = "city"\n');
    const composed = compose('[workspace]\nincludes = ["packs/maint", "packs/gt"]\n');
    expect(composed.agents.map((a) => a.name)).to.deep.equal(['dog', 'dog']);
    expect(composed.replaced).to.deep.equal([]);
  });

  it("a pack's [[patches.agent]] reaches an agent its import brings, by its name in its own pack", function () {
    // The reference's gastown example: the city imports gastown, which imports maintenance and patches its dog.
    write('packs/maint/agents/dog/agent.toml', 'scope = "city"\nfallback = true\nmax_active_sessions = 3\n');
    write(
      'packs/gt/pack.toml',
      '[pack]\nname = "gt"\n[imports.maint]\nsource = "../maint"\n' +
        '[[patches.agent]]\nname = "dog"\nwork_dir = ".gc/agents/dogs"\n',
    );
    rmSync(join(root, 'packs/gt/agents'), { recursive: true });
    const composed = compose('[imports.gt]\nsource = "packs/gt"\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.unsupported).to.deep.equal([]);
    expect(composed.agents.map((a) => [a.name, a.work_dir, a.fallback])).to.deep.equal([
      ['gt.maint.dog', '.gc/agents/dogs', true],
    ]);
  });

  it('a patch naming a composed name wins over one of an import’s local names; fallback cannot be patched', function () {
    write(
      'packs/gt/pack.toml',
      '[pack]\nname = "gt"\n[imports.maint]\nsource = "../maint"\n' +
        '[[patches.agent]]\nname = "dog"\nwork_dir = "own"\n[[patches.agent]]\nname = "maint.dog"\nwork_dir = "theirs"\n' +
        '[[patches.agent]]\nname = "dog"\nfallback = true\n',
    );
    const composed = compose('[imports.gt]\nsource = "packs/gt"\n');
    expect(composed.agents.map((a) => [a.name, a.work_dir])).to.deep.equal([
      ['gt.dog', 'own'],
      ['gt.maint.dog', 'theirs'],
    ]);
    expect(composed.problems.map((p) => p.message)).to.deep.include.members([
      'pack:gt/pack.toml: patches.agent[2].fallback is not an agent key',
    ]);
  });
});
