import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { porcelainPaths } from '../../controller/worktrees/git.js';
import {
  MAKE_WORKTREE,
  pushRefspecs,
  REMOVE_WORKTREE,
  RemoteWorktree,
  repositoryName,
  workDirOnHost,
} from '../../controller/worktrees/remote-worktree.js';
import type { Host } from '../../controller/hosts/host.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

/** The host's half of a worktree, run by this machine's sh and git, as the host's would run it. */
function onHost(script: string, ...args: string[]) {
  const result = spawnSync('sh', ['-c', script, 'sh', ...args], { encoding: 'utf8' });
  return { code: result.status, stderr: result.stderr };
}

// The pure parts of a worktree on a host, and its host-side scripts run against real git repositories here: what
// the host's repository gets pushed, where a session works there, and how its worktree is made, found again,
// refused when broken, and removed.
describe('a worktree on a host', function () {
  let root: string;
  let bare: string;
  let rig: string;

  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-unit-remote-worktree-'));
    rig = join(root, 'rig');
    mkdirSync(rig);
    git(rig, 'init', '-q', '-b', 'main');
    writeFileSync(join(rig, 'README'), 'hello\n');
    git(rig, 'add', '.');
    git(rig, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'first');
    bare = join(root, 'host', 'repos', 'rig.git');
    execFileSync('git', ['init', '--bare', '--quiet', bare]);
    git(rig, 'push', '--quiet', bare, ...pushRefspecs('main', 'ctl/a/s', false));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('pushes the base, and the rig’s copy of the branch beside it (never over the host’s own branch)', function () {
    expect(pushRefspecs('main', 'ctl/a/s', false)).to.deep.equal(['+refs/heads/main:refs/heads/main']);
    expect(pushRefspecs('main', 'ctl/a/s', true)).to.deep.equal([
      '+refs/heads/main:refs/heads/main',
      '+refs/heads/ctl/a/s:refs/ctl/rig/ctl/a/s',
    ]);
  });

  it('names a rig’s repository by its directory and a digest of its path', function () {
    expect(repositoryName('/srv/web')).to.match(/^web-[0-9a-f]{12}$/);
    expect(repositoryName('/srv/web')).to.not.equal(repositoryName('/home/web'));
    expect(repositoryName('/srv/my rig')).to.match(/^my_rig-/);
  });

  it('works in <session dir>/work, and its agent’s subdir there only when it has a worktree', function () {
    const host = { sessionDir: (id: string) => `/w/cities/c/sessions/${id}` } as unknown as Host;
    expect(workDirOnHost(host, { id: 's1' })).to.equal('/w/cities/c/sessions/s1/work');
    expect(workDirOnHost(host, { id: 's1', worktree: '/x', worktree_subdir: 'app' })).to.equal(
      '/w/cities/c/sessions/s1/work/app',
    );
    expect(workDirOnHost(host, { id: 's1', worktree_subdir: 'app' })).to.equal('/w/cities/c/sessions/s1/work');
  });

  it('makes the worktree on a new branch from the base, and finds it again', function () {
    const work = join(root, 'host', 'sessions', 's1', 'work');
    expect(onHost(MAKE_WORKTREE, bare, work, 'ctl/a/s', 'main')).to.deep.equal({ code: 0, stderr: '' });
    expect(git(work, 'rev-parse', '--abbrev-ref', 'HEAD')).to.equal('ctl/a/s');
    expect(git(work, 'rev-parse', 'HEAD')).to.equal(git(rig, 'rev-parse', 'main'));
    writeFileSync(join(work, 'wip.txt'), 'kept\n');
    expect(onHost(MAKE_WORKTREE, bare, work, 'ctl/a/s', 'main').code).to.equal(0);
    expect(existsSync(join(work, 'wip.txt'))).to.equal(true);
    expect(porcelainPaths(git(work, 'status', '--porcelain=v1', '-z', '--untracked-files=all') + '\0')).to.deep.equal([
      'wip.txt',
    ]);
  });

  it('makes the branch from the rig’s copy when the host lost it, and replaces a directory that is no worktree', function () {
    git(rig, 'checkout', '-q', '-b', 'ctl/a/s');
    writeFileSync(join(rig, 'done.txt'), 'done\n');
    git(rig, 'add', '.');
    git(rig, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'done');
    git(rig, 'push', '--quiet', bare, ...pushRefspecs('main', 'ctl/a/s', true));
    const work = join(root, 'host', 'sessions', 's1', 'work');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'stray'), '');
    expect(onHost(MAKE_WORKTREE, bare, work, 'ctl/a/s', 'main').code).to.equal(0);
    expect(git(work, 'log', '-1', '--format=%s')).to.equal('done');
    expect(existsSync(join(work, 'stray'))).to.equal(false);
  });

  it('leaves a broken worktree alone and says so', function () {
    const work = join(root, 'host', 'sessions', 's1', 'work');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, '.git'), `gitdir: ${join(root, 'gone')}\n`);
    writeFileSync(join(work, 'work.txt'), 'maybe precious\n');
    const made = onHost(MAKE_WORKTREE, bare, work, 'ctl/a/s', 'main');
    expect(made.code).to.equal(3);
    expect(made.stderr).to.match(/is broken \(git no longer knows it\)/);
    expect(existsSync(join(work, 'work.txt'))).to.equal(true);
  });

  it('removes the worktree and its branches there', function () {
    const work = join(root, 'host', 'sessions', 's1', 'work');
    git(rig, 'branch', 'ctl/a/s');
    git(rig, 'push', '--quiet', bare, ...pushRefspecs('main', 'ctl/a/s', true));
    expect(onHost(MAKE_WORKTREE, bare, work, 'ctl/a/s', 'main').code).to.equal(0);
    expect(onHost(REMOVE_WORKTREE, bare, work, 'ctl/a/s').code).to.equal(0);
    expect(existsSync(work)).to.equal(false);
    expect(git(bare, 'for-each-ref', '--format=%(refname)')).to.equal('refs/heads/main');
  });
});

// Sessions of one rig starting on one host at once all push the rig's base into the host's one repository: each
// start must find its worktree made, none losing the race for the base ref's lock.
describe('worktrees on one host made at once', function () {
  let root: string;

  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-unit-remote-worktrees-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('makes six sessions’ worktrees from one rig there, every push of the base landing', async function () {
    const rig = join(root, 'rig');
    mkdirSync(rig);
    git(rig, 'init', '-q', '-b', 'main');
    for (let n = 0; n < 20; n++) writeFileSync(join(rig, `f${n}.txt`), `${n}\n`);
    git(rig, 'add', '.');
    git(rig, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'first');
    const bare = join(root, 'host', 'repos', 'rig.git');
    // A host whose commands run here: the same sh and git scripts, without ssh between.
    const host = {
      name: 'h1',
      prepare: async () => undefined,
      sessionDir: (id: string) => join(root, 'host', 'sessions', id),
      gitRepository: () => ({ path: bare, url: bare, env: {} }),
      run: async (argv: string[]) => {
        const [command, ...args] = argv;
        const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          child.on('close', (code) => resolve({ code, stdout, stderr }));
        });
        return result;
      },
    } as unknown as Host;
    const worktree = new RemoteWorktree(host);
    const dirs = await Promise.all(
      ['s1', 's2', 's3', 's4', 's5', 's6'].map((id) =>
        worktree.prepare({ id, branch: `ctl/coder/${id}`, worktree_repo: rig }, 'main'),
      ),
    );
    for (const dir of dirs) expect(git(dir, 'rev-parse', 'HEAD')).to.equal(git(rig, 'rev-parse', 'main'));
  });
});
