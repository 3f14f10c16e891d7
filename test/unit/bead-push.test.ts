import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { resolveAgents, type AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import { composeConfig } from '../../controller/config/compose.js';
import { repositoryTransportOverrides } from '../../controller/git-safety.js';
import { previousPush, stampBranch } from '../../controller/worktrees/bead-push.js';
import { trailerValues, withTrailer } from '../../controller/worktrees/commit-trailer.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { parseCityConfig } from '../../shared/config/city-config.js';

describe('the Ctl-Bead trailer of a pushed commit', function () {
  it('is added after the body in a block of its own, or to the trailer block the message has', function () {
    expect(withTrailer('add x', 'Ctl-Bead', 'gc-1')).to.equal('add x\n\nCtl-Bead: gc-1\n');
    expect(withTrailer('add x\n\nbecause y.\n', 'Ctl-Bead', 'gc-1')).to.equal(
      'add x\n\nbecause y.\n\nCtl-Bead: gc-1\n',
    );
    expect(withTrailer('add x\n\nSigned-off-by: A <a@x>\n', 'Ctl-Bead', 'gc-1')).to.equal(
      'add x\n\nSigned-off-by: A <a@x>\nCtl-Bead: gc-1\n',
    );
    // A last paragraph with a line that is no trailer is body, not a trailer block.
    expect(withTrailer('add x\n\nNote: this\nand that\n', 'Ctl-Bead', 'gc-1')).to.equal(
      'add x\n\nNote: this\nand that\n\nCtl-Bead: gc-1\n',
    );
  });

  it('is read as git reads trailers: the last paragraph only, any case, never the subject', function () {
    expect(trailerValues('x\n\nctl-bead: gc-2\nSigned-off-by: a\n', 'Ctl-Bead')).to.deep.equal(['gc-2']);
    expect(trailerValues('Ctl-Bead: gc-2', 'Ctl-Bead')).to.deep.equal([]);
    expect(trailerValues('x\n\nCtl-Bead: gc-2\n\nmore body\n', 'Ctl-Bead')).to.deep.equal([]);
    const once = withTrailer('x', 'Ctl-Bead', 'gc-3');
    expect(withTrailer(once, 'Ctl-Bead', 'gc-3')).to.equal(once);
  });

  it('agrees with git interpret-trailers on what it writes', function () {
    for (const message of ['add x', 'add x\n\nbody\n', 'add x\n\nSigned-off-by: A <a@x>\n']) {
      const parsed = execFileSync('git', ['interpret-trailers', '--parse'], {
        input: withTrailer(message, 'Ctl-Bead', 'gc-4'),
        encoding: 'utf8',
      });
      expect(parsed).to.contain('Ctl-Bead: gc-4\n');
    }
  });

  it('leases a push again only on what the same bead pushed to the same remote and ref', function () {
    const meta = { 'ctl.pushed': 'abc', 'ctl.pushed_remote': 'origin', 'ctl.pushed_ref': 'refs/heads/ctl/a/b' };
    expect(previousPush(meta, 'origin', 'ctl/a/b')).to.equal('abc');
    expect(previousPush(meta, 'upstream', 'ctl/a/b')).to.equal(undefined);
    expect(previousPush(meta, 'origin', 'ctl/a/c')).to.equal(undefined);
    expect(previousPush(undefined, 'origin', 'ctl/a/b')).to.equal(undefined);
  });
});

describe('stamping a branch before its push', function () {
  let repo: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
  const commit = (file: string, message: string) => {
    writeFileSync(join(repo, file), `${file}\n`);
    git('add', file);
    git('commit', '-q', '-m', message);
  };

  beforeEach(function () {
    repo = mkdtempSync(join(tmpdir(), 'ctl-unit-stamp-'));
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'dev@example.invalid');
    git('config', 'user.name', 'dev');
    commit('a', 'first');
    git('checkout', '-q', '-b', 'ctl/coder/s1');
  });
  afterEach(() => rmSync(repo, { recursive: true, force: true }));

  it('rewrites only the branch’s own commits that lack a trailer, keeping trees, authors and dates', async function () {
    commit('b', 'second');
    commit('c', 'third\n\nCtl-Bead: gc-0');
    const before = git('log', '--format=%T %an %ad %cd', 'main..HEAD');
    const main = git('rev-parse', 'main');
    const request = { repo, branch: 'ctl/coder/s1', base: 'main', remote: 'origin', bead: 'gc-9', moveBranch: true };
    const { commit: head, stamped } = await stampBranch(request);
    expect(stamped).to.equal(1);
    expect(git('rev-parse', 'ctl/coder/s1')).to.equal(head);
    expect(git('rev-parse', 'main')).to.equal(main);
    expect(
      git('log', '--format=%(trailers:key=Ctl-Bead,valueonly,separator=)', 'main..HEAD').split('\n'),
    ).to.deep.equal(['gc-0', 'gc-9']);
    expect(git('log', '--format=%T %an %ad %cd', 'main..HEAD')).to.equal(before);
    // The worktree sees no change: the same tree, nothing to commit.
    expect(git('status', '--porcelain')).to.equal('');
    // Again: nothing left to stamp, the same head.
    expect(await stampBranch(request)).to.deep.equal({ commit: head, stamped: 0 });
  });

  it('stamps the same commits into the same commits, so a branch not moved pushes the same', async function () {
    commit('b', 'second');
    const request = { repo, branch: 'ctl/coder/s1', base: 'main', remote: 'origin', bead: 'gc-9', moveBranch: false };
    const first = await stampBranch(request);
    expect(git('log', '-1', '--format=%s', 'ctl/coder/s1')).to.equal('second');
    expect((await stampBranch(request)).commit).to.equal(first.commit);
  });
});

describe('what a push runs of the repository’s configuration', function () {
  it('keeps the user’s credential helpers and drops the repository’s own', function () {
    const listing = [
      'global\tcredential.helper store --file /home/me/.creds',
      'local\tcredential.helper !evil',
      'global\tcredential.https://example.com.helper cache',
      'local\tcore.sshcommand ssh -o ProxyCommand=evil',
      'local\tremote.origin.receivepack evil',
      'global\tcore.askpass /usr/bin/ksshaskpass',
    ].join('\n');
    expect(repositoryTransportOverrides(listing)).to.deep.equal([
      'credential.helper=',
      'credential.helper=store --file /home/me/.creds',
      'core.sshcommand=ssh',
      'remote.origin.receivepack=git-receive-pack',
    ]);
    expect(repositoryTransportOverrides('global\tcredential.helper store\n')).to.deep.equal([]);
    expect(repositoryTransportOverrides('')).to.deep.equal([]);
  });
});

describe('a rig’s remote', function () {
  let root: string;
  let repo: string;

  before(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-unit-remote-'));
    repo = join(root, 'repo');
    mkdirSync(repo);
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    execFileSync('git', ['remote', 'add', 'upstream', 'https://example.invalid/x.git'], { cwd: repo });
    mkdirSync(join(root, 'city'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  function agents(toml: string): AgentDefinition[] {
    const city = join(root, 'city');
    const composed = composeConfig(city, parseCityConfig(toml, 'city.toml'), { cacheRoot: join(root, 'cache') });
    expect(composed.problems).to.deep.equal([]);
    return resolveAgents(city, composed.config, composed.agents, () => ({ name: 'echo' }) as never, 'echo');
  }
  const rig = (extra: string) => `
[[rigs]]
name = "web"
path = "${repo}"
${extra}

[[agent]]
name = "coder"
dir = "web"
isolation = "worktree"
`;

  it('is where merge = "push" pushes, and must be a remote of the rig’s repository', function () {
    const [ok] = agents(`${rig('remote = "upstream"')}merge = "push"\n`);
    expect(ok.available).to.equal(true);
    expect(ok.worktree).to.include({ merge: 'push', remote: 'upstream' });
    const [wrong] = agents(rig('remote = "fork"'));
    expect(wrong.available).to.equal(false);
    expect(wrong.unavailableReason).to.equal(
      `its rig's remote = "fork", which is not a remote of ${repo} (its remotes are upstream): add it (git remote add fork URL) or set the rig's remote`,
    );
    // No remote named: origin, checked only when the agent pushes.
    const [noOrigin] = agents(`${rig('')}merge = "push"\n`);
    expect(noOrigin.unavailableReason).to.match(/^merge = "push" pushes to origin, which is not a remote of /);
    expect(agents(rig(''))[0].available).to.equal(true);
  });

  it('is a remote’s name, and [review] land is merge or push', function () {
    expect(() => parseCityConfig('[[rigs]]\nname = "w"\nremote = "--upload-pack=x"\n', 'city.toml')).to.throw(
      ConfigError,
      'city.toml: rigs[0].remote must be the name of a git remote (got "--upload-pack=x")',
    );
    expect(parseCityConfig('[review]\nland = "push"\n', 'city.toml').review?.land).to.equal('push');
    expect(() => parseCityConfig('[review]\nland = "rebase"\n', 'city.toml')).to.throw(ConfigError, /review\.land/);
  });
});
