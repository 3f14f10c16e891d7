// A rig is a repository anyone else may write to: its hooks, its core.fsmonitor and its content filters are code
// that must never run as the supervisor's user when ctl itself runs git — to make a session's worktree, merge
// its branch, read status. Each of them here appends to a marker file; ctl does all three; the marker is not there.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { createSession, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';

/** The test's own git: with every program of the rig off, so that only ctl's commands could leave a mark. */
const SAFE = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'filter.mark.smudge=',
  '-c',
  'filter.mark.clean=',
];

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', [...SAFE, ...args], { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

const HOOKS = [
  'post-checkout',
  'post-merge',
  'post-rewrite',
  'post-commit',
  'pre-commit',
  'pre-rebase',
  'reference-transaction',
  'post-index-change',
];

/** A rig on `main` whose hooks, fsmonitor and `*.txt` filter each append their name to `marker`. */
function trappedRepository(marker: string): string {
  const repo = join(tempDir('ctl-git-trap-'), 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'dev@example.invalid');
  git(repo, 'config', 'user.name', 'dev');
  writeFileSync(join(repo, '.gitattributes'), '*.txt filter=mark\n');
  writeFileSync(join(repo, 'notes.txt'), 'notes\n');
  writeFileSync(join(repo, 'README'), 'hello\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  const trap = (name: string) => {
    const file = join(repo, '..', `${name}.sh`);
    writeFileSync(file, `#!/bin/sh\necho ${name} >> '${marker}'\ncat\n`);
    chmodSync(file, 0o755);
    return file;
  };
  for (const hook of HOOKS) {
    writeFileSync(join(repo, '.git', 'hooks', hook), `#!/bin/sh\necho ${hook} >> '${marker}'\n`);
    chmodSync(join(repo, '.git', 'hooks', hook), 0o755);
  }
  git(repo, 'config', 'core.fsmonitor', trap('fsmonitor'));
  git(repo, 'config', 'filter.mark.smudge', trap('smudge'));
  git(repo, 'config', 'filter.mark.clean', trap('clean'));
  return repo;
}

describe('ctl runs none of a rig’s own programs', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let repo: string;
  let marker: string;

  before(async function () {
    marker = join(tempDir('ctl-git-marker-'), 'ran');
    repo = trappedRepository(marker);
    city = await startSessionCity(
      'trapped',
      `
[[rigs]]
name = "web"
path = "${repo}"

[[agent]]
name = "lander"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "direct"
min_active_sessions = 0
`,
    );
  });
  after(async () => city?.sup.cleanup());

  it('making a worktree, merging into the rig’s checkout after a rebase, and reading status run no hook, fsmonitor or filter', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    const tree = (await city.api.get<{ worktree: { path: string; branch: string } }>(`/session/${id}`)).body.worktree;
    expect(readFileSync(join(tree.path, 'notes.txt'), 'utf8')).to.equal('notes\n');
    writeFileSync(join(tree.path, 'landed.txt'), 'landed\n');
    git(tree.path, 'add', 'landed.txt');
    git(tree.path, 'commit', '-q', '-m', 'land');
    // Main moves on: the merge rebases the branch in its worktree, then fast-forwards the rig's checkout.
    writeFileSync(join(repo, 'elsewhere.txt'), 'elsewhere\n');
    git(repo, 'add', 'elsewhere.txt');
    git(repo, 'commit', '-q', '-m', 'elsewhere');
    const bead = await city.api.create({ title: 'land it', metadata: { 'ctl.assigned_session': id } });
    expect((await city.api.post(`/bead/${bead.id}/close`)).status).to.equal(200);
    const closed = await city.api.bead(bead.id);
    expect(closed.metadata!['ctl.merged'], JSON.stringify(closed.metadata)).to.equal(git(repo, 'rev-parse', 'main'));
    expect(readFileSync(join(repo, 'landed.txt'), 'utf8')).to.equal('landed\n');
    // A dirty file in the rig and in the worktree: status has something to look at.
    writeFileSync(join(repo, 'notes.txt'), 'changed\n');
    const rigs = await city.api.get<{ items: { name: string; git?: { clean: boolean } }[] }>('/rigs?git=true');
    expect(rigs.body.items.find((r) => r.name === 'web')!.git!.clean).to.equal(false);

    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').to.equal('');
    // The traps do work: plain git in the rig runs them.
    execFileSync('git', ['status', '--porcelain'], { cwd: repo, stdio: 'pipe' });
    expect(readFileSync(marker, 'utf8')).to.match(/fsmonitor|clean/);
  });
});
