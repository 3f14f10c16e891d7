// Branches that leave the machine (`merge = "push"`, `[review] land = "push"`): an agent with
// `isolation = "worktree"` over a real git repository (a rig) whose `origin` is a real git server on loopback —
// git's own `git http-backend` behind a small HTTP server asking basic auth (helpers/git-http-server.ts). The
// credentials are only in the person's git configuration (the test HOME's `credential.helper store`): ctl is
// given none. What was pushed is read back from the server's bare repository.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Bead } from './helpers/city-api.js';
import { expectSuccess } from './helpers/cli.js';
import { GitHttpServer, personsGitConfig } from './helpers/git-http-server.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

/** How long a push may take before it is stopped, in this test (a hanging remote is one of its cases). */
const PUSH_TIMEOUT_MS = 8_000;

const AGENTS = `
[review]
land = "push"

[[rigs]]
name = "web"
path = "RIG"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "push"
min_active_sessions = 0

[[agent]]
name = "reviewed"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`;

interface Review {
  state: string;
  branch: string;
  base: string;
  merged?: string;
  pushed_remote?: string;
  pushed_ref?: string;
  pushed_commit?: string;
}

describe('branches pushed to the rig’s remote (merge = "push")', function () {
  this.timeout(120_000);
  let server: GitHttpServer;
  let city: SessionCity;
  let repo: string;
  let credentials: string;
  let marker: string;

  before(async function () {
    server = await GitHttpServer.start();
    repo = join(tempDir('ctl-push-rig-'), 'web');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'user.email', 'dev@example.invalid');
    git(repo, 'config', 'user.name', 'dev');
    writeFileSync(join(repo, 'shared.txt'), 'base\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'first');
    server.create('web', { repo, branch: 'main' });
    // The remote's URL carries no credentials: they are the person's, in HOME's git configuration.
    git(repo, 'remote', 'add', 'origin', server.url('web'));
    // The repository's own programs — a pre-push hook, a credential helper of its own — are never run by ctl's push.
    marker = join(repo, '..', 'ran-a-program-of-the-repository');
    writeFileSync(join(repo, '.git', 'hooks', 'pre-push'), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    git(repo, 'config', 'credential.helper', `!f() { touch '${marker}'; }; f`);
    const root = tempDir('ctl-push-');
    credentials = personsGitConfig(root, server.credentialLine());
    city = await startSessionCity(
      'pushing',
      AGENTS.replace('RIG', repo),
      { CTL_TEST_PUSH_TIMEOUT_MS: String(PUSH_TIMEOUT_MS) },
      root,
    );
  });
  after(async () => {
    const ran = marker !== undefined && existsSync(marker);
    await city?.sup.cleanup();
    await server?.cleanup();
    expect(ran, 'a program of the repository ran').to.equal(false);
  });

  const run = async (id: string, command: string): Promise<void> => {
    const mark = `${Date.now()}-${Math.random()}`;
    await city.api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
    await waitForTurn(city.api, id, 'assistant', new RegExp(`done-${mark}`));
  };
  const commitIn = (id: string, file: string, text: string) =>
    run(id, `printf '${text}' > ${file} && git add ${file} && git commit -q -m 'edit ${file}'`);
  const workBead = (sessionId: string, title: string): Promise<Bead> =>
    city.api.create({ title, metadata: { 'ctl.assigned_session': sessionId } });
  const worktreeOf = async (id: string) =>
    (await city.api.get<{ worktree: { path: string; branch: string } }>(`/session/${id}`)).body.worktree;
  const close = async (bead: string): Promise<Bead> => {
    expect((await city.api.post(`/bead/${bead}/close`)).status).to.equal(200);
    return city.api.bead(bead);
  };
  const trailerOf = (ref: string) =>
    server.git('web', 'log', '-1', '--format=%(trailers:key=Ctl-Bead,valueonly,separator=)', ref);

  it('pushes the branch at close with the bead’s trailer, and pushes it again when it comes back', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = await worktreeOf(id);
    await commitIn(id, 'feature.txt', 'one\\n');
    const main = git(repo, 'rev-parse', 'main');
    const bead = await workBead(id, 'a feature');

    const closed = await close(bead.id);
    const ref = `refs/heads/${tree.branch}`;
    const pushed = server.refOf('web', ref);
    expect(pushed, 'the remote has the branch').to.be.a('string');
    expect(trailerOf(ref)).to.equal(bead.id);
    expect(server.git('web', 'log', '-1', '--format=%s', ref)).to.equal('edit feature.txt');
    expect(closed.status).to.equal('closed');
    expect(closed.metadata).to.include({
      'ctl.pushed': pushed,
      'ctl.pushed_remote': 'origin',
      'ctl.pushed_ref': ref,
      'ctl.commit': pushed,
      'ctl.branch': tree.branch,
    });
    expect(closed.metadata!['ctl.push_error'] ?? '').to.equal('');
    // Its own branch carries the trailer too, its worktree unchanged; the base is where it was.
    expect(git(repo, 'rev-parse', tree.branch)).to.equal(pushed);
    expect(git(tree.path, 'status', '--porcelain')).to.equal('');
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    const [event] = await city.api.eventsAbout('bead.pushed', bead.id);
    expect(event?.payload).to.deep.include({
      bead: bead.id,
      session: id,
      branch: tree.branch,
      remote: 'origin',
      ref,
      commit: pushed,
      forced: false,
      stamped: 1,
    });
    // Credentials came from the person's helper: the server asked for them, and got them.
    expect(server.refused).to.be.greaterThan(0);

    // Sent back: one more commit, closed again — a fast-forward of the remote's ref.
    await city.api.update(bead.id, { status: 'in_progress' });
    await commitIn(id, 'more.txt', 'two\\n');
    const again = await close(bead.id);
    const second = server.refOf('web', ref)!;
    expect(second).to.not.equal(pushed);
    expect(git(repo, 'rev-parse', `${second}~1`)).to.equal(pushed);
    expect(trailerOf(ref)).to.equal(bead.id);
    expect(again.metadata!['ctl.pushed']).to.equal(second);

    // Sent back and rewritten (the agent amended what was pushed): the ref is moved with a lease on the last push.
    await city.api.update(bead.id, { status: 'in_progress' });
    await run(id, `printf 'deux\\n' > more.txt && git commit -q -a --amend -m 'edit more.txt, better'`);
    const third = await close(bead.id);
    const rewritten = server.refOf('web', ref)!;
    expect(rewritten).to.equal(third.metadata!['ctl.pushed']);
    expect(server.git('web', 'log', '-1', '--format=%s', ref)).to.equal('edit more.txt, better');
    expect(trailerOf(ref)).to.equal(bead.id);
    const events = await city.api.eventsAbout('bead.pushed', bead.id);
    expect(events.map((e) => (e.payload as { forced: boolean }).forced)).to.deep.equal([false, false, true]);
  });

  it('a bead slung with --merge push is pushed though its agent says review', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/reviewed' });
    const tree = await worktreeOf(id);
    await commitIn(id, 'slung.txt', 'slung\\n');
    const bead = await city.api.create({ title: 'slung work' });
    const slung = await city.sup.ctl(['sling', id, bead.id, '--merge', 'push', '--no-convoy'], {
      env: { CTL_CITY: 'pushing' },
    });
    expect(slung.code, slung.stderr).to.equal(0);
    await waitUntil('the bead to be held by the session', async () => {
      const held = await city.api.bead(bead.id);
      return held.metadata?.['ctl.assigned_session'] === id && held.metadata?.merge_strategy === 'push';
    });
    const closed = await close(bead.id);
    const ref = `refs/heads/${tree.branch}`;
    expect(closed.metadata).to.include({ 'ctl.pushed': server.refOf('web', ref), 'ctl.pushed_ref': ref });
    expect(closed.metadata!['ctl.review']).to.equal(undefined);
    expect(trailerOf(ref)).to.equal(bead.id);
  });

  it('a refused push is on the bead and told to its session, its branch and worktree kept', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = await worktreeOf(id);
    await commitIn(id, 'refused.txt', 'no\\n');
    const head = git(repo, 'rev-parse', tree.branch);
    const bead = await workBead(id, 'refused work');
    // The person's credentials go stale: the server refuses them.
    writeFileSync(credentials, server.credentialLine('a wrong password'));
    try {
      const closed = await close(bead.id);
      expect(closed.status).to.equal('closed');
      expect(closed.metadata!['ctl.push_error']).to.match(
        /Authentication failed for 'http:\/\/127\.0\.0\.1:\d+\/web\.git\/'/,
      );
      expect(closed.metadata!['ctl.pushed'] ?? '').to.equal('');
      expect(server.refOf('web', `refs/heads/${tree.branch}`)).to.equal(undefined);
      const [failed] = await city.api.eventsAbout('bead.push_failed', bead.id);
      expect(failed?.payload).to.deep.include({ bead: bead.id, remote: 'origin', ref: `refs/heads/${tree.branch}` });
      await waitForTurn(
        city.api,
        id,
        'assistant',
        new RegExp(`Bead ${bead.id} was closed, but its branch ${tree.branch} could not be pushed to origin`),
      );
      // Nothing lost: the work is on the branch (its commit given the trailer, its tree the same) and in the worktree.
      expect(git(repo, 'rev-parse', `${tree.branch}^{tree}`)).to.equal(git(repo, 'rev-parse', `${head}^{tree}`));
      expect(git(tree.path, 'show', 'HEAD:refused.txt')).to.equal('no');
    } finally {
      writeFileSync(credentials, server.credentialLine());
    }
  });

  it('a branch of the same name someone else pushed is never overwritten: the push is rejected', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = await worktreeOf(id);
    await commitIn(id, 'mine.txt', 'mine\\n');
    // Someone's commit on the remote's branch of that name, that the rig has never seen.
    const tree0 = server.git('web', 'rev-parse', 'main^{tree}');
    const theirs = execFileSync('git', ['commit-tree', tree0, '-p', 'main', '-m', 'theirs'], {
      cwd: join(server.root, 'web.git'),
      encoding: 'utf8',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'x',
        GIT_AUTHOR_EMAIL: 'x@x',
        GIT_COMMITTER_NAME: 'x',
        GIT_COMMITTER_EMAIL: 'x@x',
      },
    }).trim();
    server.git('web', 'update-ref', `refs/heads/${tree.branch}`, theirs);
    const bead = await workBead(id, 'rejected work');
    const closed = await close(bead.id);
    expect(closed.metadata!['ctl.push_error']).to.match(
      /^the remote refused it: \[rejected\] \((fetch first|non-fast-forward)\)$/,
    );
    expect(server.refOf('web', `refs/heads/${tree.branch}`)).to.equal(theirs);
    await waitForTurn(city.api, id, 'assistant', new RegExp(`Bead ${bead.id} was closed, but .*refused it`));
  });

  it('a remote that hangs fails the push in bounded time, the controller answering meanwhile', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await commitIn(id, 'hang.txt', 'wait\\n');
    const bead = await workBead(id, 'hung push');
    server.hang = true;
    try {
      const started = Date.now();
      const closing = city.api.post(`/bead/${bead.id}/close`);
      // While git waits on the remote, the controller answers.
      await waitUntil('the server to hang a request', () => server.hanging > 0);
      expect((await city.api.get(`/bead/${bead.id}`)).status).to.equal(200);
      expect((await closing).status).to.equal(200);
      const elapsed = Date.now() - started;
      expect(elapsed).to.be.within(PUSH_TIMEOUT_MS - 500, PUSH_TIMEOUT_MS + 20_000);
      expect((await city.api.bead(bead.id)).metadata!['ctl.push_error']).to.match(/timed out after 8 s/);
    } finally {
      server.hang = false;
    }
  });

  it('a review approved with [review] land = "push" is pushed, and records the pushed ref', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/reviewed' });
    const tree = await worktreeOf(id);
    await commitIn(id, 'reviewed.txt', 'ok\\n');
    const main = git(repo, 'rev-parse', 'main');
    const bead = await workBead(id, 'reviewed work');
    await close(bead.id);
    await waitUntil('the review to be pending', async () => {
      const r = await city.api.get<Review>(`/reviews/${bead.id}`);
      return r.status === 200 && r.body.state === 'pending';
    });
    // Held for review: nothing pushed yet.
    expect(server.refOf('web', `refs/heads/${tree.branch}`)).to.equal(undefined);

    // Through the merge queue, the way a person approves: the CLI waits for the outcome and says where it went.
    const ref = `refs/heads/${tree.branch}`;
    const said = expectSuccess(await city.sup.ctl(['--city', 'pushing', 'review', 'approve', bead.id]));
    const pushed = server.refOf('web', ref);
    expect(said).to.deep.equal([`Pushed ${tree.branch} to origin ${ref} at ${pushed}`]);
    const approved = await city.api.get<Review>(`/reviews/${bead.id}`);
    expect(approved.body).to.include({
      state: 'merged',
      pushed_remote: 'origin',
      pushed_ref: ref,
      pushed_commit: pushed,
    });
    expect(approved.body.merged).to.equal(undefined);
    expect(trailerOf(ref)).to.equal(bead.id);
    // Pushed, not merged: the base is where it was.
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    expect((await city.api.bead(bead.id)).metadata).to.include({ 'ctl.review': 'merged', 'ctl.pushed': pushed });
    const [merged] = await city.api.eventsAbout('review.merged', bead.id);
    expect(merged?.payload).to.deep.include({ pushed_ref: ref, pushed_commit: pushed });
    expect(await city.api.eventsAbout('bead.pushed', bead.id)).to.have.length(1);
  });

  it('a rig remote that is no remote of its repository is a configuration error naming the remotes', async function () {
    const file = join(city.dir, 'city.toml');
    const good = readFileSync(file, 'utf8');
    const validate = async () =>
      (await city.api.get<{ errors: { message: string }[] }>('/config/validate')).body.errors.map((e) => e.message);
    try {
      writeFileSync(file, good.replace('name = "web"\n', 'name = "web"\nremote = "fork"\n'));
      const message = await waitUntil('the remote to be refused', async () =>
        (await validate()).find((m) => m.startsWith('agent web/coder:')),
      );
      expect(message).to.equal(
        `agent web/coder: its rig's remote = "fork", which is not a remote of ${repo} (its remotes are origin): ` +
          `add it (git remote add fork URL) or set the rig's remote`,
      );
    } finally {
      writeFileSync(file, good);
      await waitUntil('the good configuration back', async () => (await validate()).length === 0);
    }
  });
});
