import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { composeConfig } from '../../controller/config/compose.js';

// The reference's patch keys beyond an agent's own: `pre_start_append` and `session_setup_append` lengthen the
// agent's lists (after a `pre_start` the same patch sets), `env_remove` drops keys after the patch's env is laid
// over, `pool` sets the session bounds — in the city's patches, a pack's, and a rig's `[[rigs.overrides]]`.
describe('reference patch keys: appends, env_remove, pool, rig overrides (in-process)', function () {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-appends-'));
  });
  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });
  const compose = (cityToml: string) =>
    composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });

  it('a city patch appends to pre_start and session_setup, after what it sets, and removes env keys', function () {
    const composed = compose(
      '[[agent]]\nname = "w"\npre_start = ["echo a"]\nsession_setup = ["echo s"]\nenv = { KEEP = "1", DROP = "2" }\n' +
        '[[agent]]\nname = "v"\npre_start = ["echo old"]\n' +
        '[[patches.agent]]\nname = "w"\npre_start_append = ["echo b", "echo c"]\nsession_setup_append = ["echo t"]\n' +
        'env = { ADDED = "3", GONE = "4" }\nenv_remove = ["DROP", "GONE"]\n' +
        '[[patches.agent]]\nname = "v"\npre_start = ["echo new"]\npre_start_append = ["echo more"]\n',
    );
    expect(composed.problems).to.deep.equal([]);
    expect(composed.unsupported).to.deep.equal([]);
    const w = composed.agents.find((a) => a.name === 'w')!;
    expect(w.pre_start).to.deep.equal(['echo a', 'echo b', 'echo c']);
    expect(w.session_setup).to.deep.equal(['echo s', 'echo t']);
    expect(w.env).to.deep.equal({ KEEP: '1', ADDED: '3' });
    expect(composed.agents.find((a) => a.name === 'v')!.pre_start).to.deep.equal(['echo new', 'echo more']);
  });

  it('an agent without the list gets the appended commands as its list', function () {
    const composed = compose('[[agent]]\nname = "w"\n[[patches.agent]]\nname = "w"\npre_start_append = ["true"]\n');
    expect(composed.agents[0].pre_start).to.deep.equal(['true']);
  });

  it('a pack’s patch appends to its agent’s pre_start', function () {
    write('packs/p/pack.toml', '[pack]\nname = "p"\n[[patches.agent]]\nname = "w"\npre_start_append = ["echo pack"]\n');
    write('packs/p/agents/w/agent.toml', 'pre_start = ["echo own"]\n');
    const composed = compose('[imports.p]\nsource = "./packs/p"\n');
    expect(composed.problems).to.deep.equal([]);
    expect(composed.agents[0].pre_start).to.deep.equal(['echo own', 'echo pack']);
  });

  it('a wrong value is a problem naming the key, and the patch is left out', function () {
    const composed = compose(
      '[[agent]]\nname = "w"\n[[patches.agent]]\nname = "w"\npre_start_append = "echo b"\nsuspended = true\n' +
        '[[patches.agent]]\nname = "w"\nenv_remove = [3]\n' +
        '[[patches.provider]]\nname = "claude"\nenv_remove = "X"\n',
    );
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      'city.toml: patches.agent[0].pre_start_append must be an array of shell commands',
      'city.toml: patches.agent[1].env_remove must be an array of non-empty strings',
      'city.toml: patches.provider[0].env_remove must be an array of non-empty strings',
    ]);
    expect(composed.agents[0].suspended).to.equal(false);
  });

  it('a provider patch removes keys of the provider’s env', function () {
    const composed = compose(
      '[providers.mine]\nbase = "claude"\nenv = { A = "1", B = "2" }\n' +
        '[[patches.provider]]\nname = "mine"\nenv = { C = "3" }\nenv_remove = ["A"]\n',
    );
    expect(composed.problems).to.deep.equal([]);
    expect(composed.config.providers.mine).to.deep.include({ env: { B: '2', C: '3' } });
    expect(composed.config.providers.mine).not.to.have.property('env_remove');
  });

  it('pool sets min, max, check and drain_timeout after the patch’s own keys; a wrong one names pool.<key>', function () {
    const composed = compose(
      '[[agent]]\nname = "w"\n[[patches.agent]]\nname = "w"\nmin_active_sessions = 0\n' +
        '[patches.agent.pool]\nmin = 2\nmax = 4\ncheck = "echo 3"\ndrain_timeout = "1m"\non_death = "x"\n' +
        '[[agent]]\nname = "v"\n[[patches.agent]]\nname = "v"\n[patches.agent.pool]\nmin = "two"\n',
    );
    expect(composed.agents[0]).to.include({
      min_active_sessions: 2,
      max_active_sessions: 4,
      scale_check: 'echo 3',
      drain_timeout_ms: 60_000,
    });
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      'city.toml: patches.agent[1].pool.min must be an integer',
    ]);
    expect(composed.unsupported.map((w) => w.key)).to.deep.equal(['patches.agent[0].pool.on_death']);
  });

  it('[[rigs.overrides]] and [[rigs.patches]] change the agents the rig’s packs bring, by agent', function () {
    write('packs/web/pack.toml', '[pack]\nname = "web"\n');
    write('packs/web/agents/dev/agent.toml', 'scope = "rig"\npre_start = ["echo own"]\n');
    write('packs/web/agents/ops/agent.toml', 'scope = "rig"\n');
    mkdirSync(join(root, 'app'));
    mkdirSync(join(root, 'api'));
    const rig = (name: string, extra: string) =>
      `[[rigs]]\nname = "${name}"\npath = "${name}"\n[rigs.imports.web]\nsource = "./packs/web"\n${extra}`;
    const composed = compose(
      rig(
        'app',
        '[[rigs.overrides]]\nagent = "dev"\npre_start_append = ["echo rig"]\ndir = "elsewhere"\n' +
          '[[rigs.patches]]\nagent = "web.ops"\nsuspended = true\n' +
          '[[rigs.patches]]\nagent = "nobody"\nsuspended = true\n',
      ) + rig('api', ''),
    );
    const agent = (dir: string, name: string) => composed.agents.find((a) => a.dir === dir && a.name === name)!;
    expect(agent('app', 'web.dev').pre_start).to.deep.equal(['echo own', 'echo rig']);
    expect(agent('app', 'web.dev').dir).to.equal('app');
    expect(agent('app', 'web.ops').suspended).to.equal(true);
    // Another rig's agents of the same pack are untouched.
    expect(agent('api', 'web.dev').pre_start).to.deep.equal(['echo own']);
    expect(agent('api', 'web.ops').suspended).to.equal(false);
    expect(composed.problems.map((p) => p.message)).to.deep.equal([
      "city.toml: rigs.app.patches[1]: rig app's packs bring no agent named nobody",
    ]);
    expect(composed.unsupported.map((w) => w.key)).to.deep.equal(['rigs[0].overrides[0].dir']);
  });
});
