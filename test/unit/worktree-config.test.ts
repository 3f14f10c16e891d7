import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { resolveAgents, type AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { composeConfig } from '../../controller/config/compose.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { parseCityConfig } from '../../shared/config/city-config.js';

/** `isolation`, `merge` and `base_branch`: read, checked, laid over by `[agent_defaults]` and patches, resolved. */
describe('worktree settings of agents', function () {
  let root: string;
  let repo: string;

  before(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-unit-worktree-'));
    repo = join(root, 'repo');
    mkdirSync(join(repo, 'app'), { recursive: true });
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    mkdirSync(join(root, 'city'));
    mkdirSync(join(root, 'plain'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  function agents(toml: string): AgentDefinition[] {
    const city = join(root, 'city');
    const composed = composeConfig(city, parseCityConfig(toml, 'city.toml'), { cacheRoot: join(root, 'cache') });
    expect(composed.problems).to.deep.equal([]);
    const provider = { name: 'echo' } as never;
    return resolveAgents(city, composed.config, composed.agents, () => provider, 'echo');
  }

  it('resolves the repository, the directory inside it, the base (the agent’s, else its rig’s) and merge', function () {
    const [web, app] = agents(`
[[rigs]]
name = "web"
path = "${repo}"
default_branch = "trunk"

[[agent]]
name = "coder"
dir = "web"
isolation = "worktree"

[[agent]]
name = "app"
work_dir = "${join(repo, 'app')}"
isolation = "worktree"
merge = "direct"
base_branch = "release/1.0"
`);
    expect(web.worktree).to.deep.equal({ repo, subdir: '', base: 'trunk', merge: 'none', remote: 'origin' });
    expect(app.worktree).to.deep.equal({ repo, subdir: 'app', base: 'release/1.0', merge: 'direct', remote: 'origin' });
    expect(web.available && app.available).to.equal(true);
  });

  it('[agent_defaults] and patches set them too; isolation = "none" has no worktree', function () {
    const [a, b] = agents(`
[agent_defaults]
isolation = "worktree"
merge = "direct"

[[agent]]
name = "a"
work_dir = "${repo}"

[[agent]]
name = "b"
work_dir = "${repo}"

[[patches.agent]]
name = "b"
isolation = "none"
`);
    expect(a.worktree).to.deep.equal({ repo, subdir: '', merge: 'direct', remote: 'origin' });
    expect(b.worktree).to.equal(undefined);
    expect(b.available).to.equal(true);
  });

  it('outside a git repository, or in one that holds the city, the agent is unavailable saying why', function () {
    const [plain] = agents(`
[[rigs]]
name = "plain"
path = "${join(root, 'plain')}"

[[agent]]
name = "p"
dir = "plain"
isolation = "worktree"
`);
    expect(plain.available).to.equal(false);
    expect(plain.unavailableReason).to.equal(
      `isolation = "worktree" needs a git repository, and rig plain (${join(root, 'plain')}) is not in one`,
    );
    // The city itself in a repository: its worktrees would be made inside it.
    execFileSync('git', ['init', '-q'], { cwd: join(root, 'city') });
    try {
      const [, q] = agents(`
[[agent]]
name = "p"

[[agent]]
name = "q"
isolation = "worktree"
`);
      expect(q.available).to.equal(false);
      expect(q.unavailableReason).to.match(
        /holds the city, so its worktrees \(under \.ctl\/worktrees\) would be inside it$/,
      );
    } finally {
      rmSync(join(root, 'city', '.git'), { recursive: true, force: true });
    }
  });

  it('a directory that is only inside a home directory kept in git is no repository of its own', function () {
    const home = process.env.HOME;
    process.env.HOME = repo;
    try {
      const [inside] = agents(`
[[agent]]
name = "p"
work_dir = "${join(repo, 'app')}"
isolation = "worktree"
`);
      expect(inside.available).to.equal(false);
      expect(inside.unavailableReason).to.equal(
        `isolation = "worktree" needs a git repository, and ${join(repo, 'app')} is only inside ${repo}, which is not a project's`,
      );
    } finally {
      process.env.HOME = home;
    }
  });

  it('refuses values it does not know, naming the key', function () {
    const bad = (line: string) => () => parseCityConfig(`[[agent]]\nname = "a"\n${line}\n`, 'city.toml');
    expect(bad('isolation = "container"')).to.throw(
      ConfigError,
      'city.toml: agent[0].isolation must be "none" or "worktree" (got "container")',
    );
    expect(bad('merge = "squash"')).to.throw(
      ConfigError,
      'city.toml: agent[0].merge must be "none" or "direct" or "review"',
    );
    expect(bad('base_branch = "-x"')).to.throw(ConfigError, 'city.toml: agent[0].base_branch must be a branch name');
    expect(bad('base_branch = "a..b"')).to.throw(ConfigError, 'must be a branch name');
  });
});
