// One git worktree per session: agents with `isolation = "worktree"` over a real git repository (a rig), their
// sessions' programs (the echo example agent, whose `run` runs a shell command where it works) in their own
// worktrees; closes, bead closes and merges read back from git itself.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Bead, type Envelope } from './helpers/city-api.js';
import { expectSuccess } from './helpers/cli.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive } from './helpers/processes.js';
import { SseStreamReader } from './helpers/sse.js';
import { commitInSession, git, rigRepository, runInSession, type WorktreeView } from './helpers/rigs.js';
import { createSession, startSessionCity, terminalOf, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface View {
  id: string;
  session_name: string;
  state: string;
  running: boolean;
  work_dir?: string;
  worktree?: WorktreeView;
}

/** A repository on `main` with two files, a committer of its own, and a change nobody committed. */
function repository(): string {
  const repo = rigRepository({ README: 'hello\n', 'shared.txt': 'base\n' }, { prefix: 'ctl-worktree-rig-' });
  // A dirty base: worktrees do not need a clean one.
  writeFileSync(join(repo, 'README'), 'hello, not committed\n');
  return repo;
}

const AGENTS = (plain: string) => `
[[rigs]]
name = "web"
path = "RIG"

[[rigs]]
name = "plain"
path = "${plain}"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0

[[agent]]
name = "lander"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "direct"
min_active_sessions = 0

[[agent]]
name = "loner"
dir = "plain"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0

[[agent]]
name = "stale"
dir = "web"
provider = "echo"
isolation = "worktree"
base_branch = "gone"
min_active_sessions = 0

[[agent]]
name = "pool"
dir = "web"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0
max_active_sessions = 2

[[agent]]
name = "careless"
provider = "echo"
merge = "direct"
min_active_sessions = 0
`;

describe('one git worktree per session', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let repo: string;
  /** While it exists, the controller kills itself in a direct merge, right before the fast-forward. */
  const crashFile = join(tempDir('ctl-merge-crash-'), 'crash');

  before(async function () {
    repo = repository();
    const plain = tempDir('ctl-worktree-plain-');
    city = await startSessionCity('isolated', AGENTS(plain).replace('RIG', repo), {
      CTL_TEST_CRASH_MID_MERGE: crashFile,
    });
    // An agent of its own directory, whose prompt is a template naming where it works.
    const home = join(city.dir, 'agents', 'templ');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'prompt.template.md'), 'Work in {{work_dir}} as {{agent}}.');
    writeFileSync(
      join(home, 'agent.toml'),
      'dir = "web"\nprovider = "echo"\nisolation = "worktree"\nmin_active_sessions = 0\n',
    );
    await waitUntil('agent web/templ', async () => (await city.api.get('/agent/web/templ')).status === 200);
  });
  after(async () => city?.sup.cleanup());

  const view = async (id: string) => {
    const reply = await city.api.get<View>(`/session/${id}`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  };
  /**
   * Closes a bead while a subscriber of the city's event stream reads it back as soon as its `bead.closed`
   * arrives (the close request still in flight): the bead the event carried, and the one read.
   */
  const closeWatched = async (beadId: string): Promise<{ event: Bead; read: Bead }> => {
    const stream = await SseStreamReader.open(city.api.url('/events/stream'));
    try {
      const closing = city.api.post(`/bead/${beadId}/close`);
      const frames = await stream.until((frame) => {
        const event = JSON.parse(frame.data) as Envelope;
        return event.type === 'bead.closed' && (event.payload.bead as Bead).id === beadId;
      }, 30_000);
      const read = await city.api.bead(beadId);
      expect((await closing).status).to.equal(200);
      return { event: (JSON.parse(frames.at(-1)!.data) as Envelope).payload.bead as Bead, read };
    } finally {
      stream.close();
    }
  };
  const run = (id: string, command: string) => runInSession(city.api, id, command);
  const commitIn = (id: string, file: string, text: string) => commitInSession(city.api, id, file, `${text}\\n`);
  const workBead = async (sessionId: string, title: string): Promise<Bead> =>
    city.api.create({ title, metadata: { 'ctl.assigned_session': sessionId } });

  it('a session works in its own worktree on ctl/<agent>/<session name>, made before its program starts, from a dirty base', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const shown = await view(id);
    const tree = shown.worktree!;
    expect(tree.path).to.equal(join(city.dir, '.ctl', 'worktrees', shown.session_name));
    expect(tree).to.include({ branch: `ctl/web/coder/${shown.session_name}`, base: 'main', repository: repo });
    expect(tree).to.include({ dirty: false, ahead: 0, behind: 0 });
    expect(tree.head).to.equal(git(repo, 'rev-parse', 'main'));
    expect(shown.work_dir).to.equal(tree.path);
    // Its program's first look around is already in the worktree.
    expect(await run(id, 'pwd')).to.equal(tree.path);
    expect(await run(id, 'git branch --show-current')).to.equal(tree.branch);
    // Its shells know the branch they commit to and the worktree's top.
    expect(await run(id, 'echo "$CTL_BRANCH $CTL_WORKTREE"')).to.equal(`${tree.branch} ${tree.path}`);
    expect(await run(id, 'cat README')).to.equal('hello');
    expect(git(repo, 'worktree', 'list', '--porcelain')).to.include(`worktree ${tree.path}`);
    // The rig's own checkout is as the person left it.
    expect(readFileSync(join(repo, 'README'), 'utf8')).to.equal('hello, not committed\n');
  });

  it('a prompt template’s {{work_dir}} is the session’s worktree, not the rig', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/templ' });
    const tree = (await view(id)).worktree!;
    const prompt = `Work in ${tree.path} as web/templ.`;
    // As its first turn (the echo provider takes no system prompt), and as `ctl prime` reads it.
    await waitForTurn(city.api, id, 'user', prompt);
    const prime = await city.api.get<{ prompt?: string }>(`/session/${id}/prime`);
    expect(prime.body.prompt).to.equal(prompt);
    expect(prime.body.prompt).not.to.contain(repo);
  });

  it('the tick’s own sessions get worktrees too: a bead slung to a pool is worked on in a new one', async function () {
    const bead = await city.api.create({ title: 'pooled work' });
    expect((await city.api.post('/sling', { target: 'web/pool', bead: bead.id })).status).to.equal(200);
    const held = await waitUntil(
      'the tick to hand the bead to a new session',
      async () => (await city.api.bead(bead.id)).metadata?.['ctl.assigned_session'],
      30_000,
    );
    const shown = await view(held);
    expect(shown.worktree).to.include({ branch: `ctl/web/pool/${shown.session_name}`, base: 'main', dirty: false });
    await waitForTurn(city.api, held, 'assistant', new RegExp(`Work on bead ${bead.id}`));
    expect(await run(held, 'pwd')).to.equal(shown.worktree!.path);
  });

  it('kill and wake and a new controller keep the worktree and what is in it; a half-made one is made again', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = (await view(id)).worktree!;
    await run(id, 'echo scratch > notes.txt');
    await commitIn(id, 'kept.txt', 'kept');
    const commit = git(tree.path, 'rev-parse', 'HEAD');

    expect((await city.api.post(`/session/${id}/kill`)).status).to.equal(200);
    expect((await city.api.post(`/session/${id}/wake`)).status).to.equal(200);
    expect(await run(id, 'pwd; cat notes.txt')).to.equal(`${tree.path}\nscratch`);

    const pid = controllerPid(city.dir);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the controller to die', () => !isAlive(pid));
    await waitUntil('a new controller', async () => {
      const info = await city.sup.city('isolated');
      return info?.running === true && info.pid !== pid;
    });
    await waitUntil('the session to run again', async () => (await view(id)).running);
    expect(await run(id, 'pwd; cat notes.txt; git rev-parse HEAD')).to.equal(`${tree.path}\nscratch\n${commit}`);

    // A worktree a dying controller left half-made (git's own "initializing" lock) is made again from its branch.
    expect((await city.api.post(`/session/${id}/kill`)).status).to.equal(200);
    const admin = git(tree.path, 'rev-parse', '--git-dir');
    writeFileSync(join(admin, 'locked'), 'initializing');
    expect((await city.api.post(`/session/${id}/wake`)).status).to.equal(200);
    expect(await run(id, 'git rev-parse HEAD; test -e notes.txt || echo fresh')).to.equal(`${commit}\nfresh`);
  });

  it('close removes a worktree that holds nothing unmerged, with its branch; keeps one with a commit and says why', async function () {
    const clean = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const cleanTree = (await view(clean)).worktree!;
    const closed = await city.api.post<{ status: string; worktree: Record<string, unknown> }>(
      `/session/${clean}/close`,
    );
    expect(closed.status, JSON.stringify(closed.body)).to.equal(200);
    expect(closed.body.worktree).to.deep.equal({ path: cleanTree.path, branch: cleanTree.branch, removed: true });
    expect(existsSync(cleanTree.path)).to.equal(false);
    expect(git(repo, 'branch', '--list', cleanTree.branch)).to.equal('');

    const busy = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const busyTree = (await view(busy)).worktree!;
    await commitIn(busy, 'work.txt', 'work');
    const kept = await city.api.post<{ worktree: Record<string, unknown> }>(`/session/${busy}/close`);
    expect(kept.body.worktree).to.deep.equal({
      path: busyTree.path,
      branch: busyTree.branch,
      removed: false,
      reason: '1 commit not in main',
    });
    expect(readFileSync(join(busyTree.path, 'work.txt'), 'utf8')).to.equal('work\n');
    const event = (await city.api.events('session.closed')).find((e: Envelope) => e.payload.session_id === busy)!;
    expect(event.payload.worktree).to.deep.equal(kept.body.worktree);
  });

  it('a bead finished in a worktree records its branch and commit; merge = "none" leaves the base alone', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = (await view(id)).worktree!;
    const main = git(repo, 'rev-parse', 'main');
    await commitIn(id, 'feature.txt', 'feature');
    const bead = await workBead(id, 'add a feature');
    // Whoever sees it closed sees its branch: the close carries it, in the event and in a read made at once.
    const { event, read: done } = await closeWatched(bead.id);
    const recorded = {
      'ctl.branch': tree.branch,
      'ctl.commit': git(repo, 'rev-parse', tree.branch),
      'ctl.base': 'main',
    };
    expect(event.metadata).to.include(recorded);
    expect(done.status).to.equal('closed');
    expect(done.metadata).to.include(recorded);
    expect(done.metadata!['ctl.merged']).to.equal(undefined);
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
  });

  it('merge = "direct" fast-forwards the base (and the checkout that has it) when the bead closes, rebasing a branch behind it', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    const tree = (await view(id)).worktree!;
    await commitIn(id, 'landed.txt', 'landed');
    const bead = await workBead(id, 'land it');
    const { event, read: done } = await closeWatched(bead.id);
    const head = git(repo, 'rev-parse', tree.branch);
    expect(event.metadata).to.include({ 'ctl.branch': tree.branch, 'ctl.commit': head, 'ctl.merged': head });
    expect(done.metadata).to.include({ 'ctl.branch': tree.branch, 'ctl.commit': head, 'ctl.merged': head });
    expect(git(repo, 'rev-parse', 'main')).to.equal(head);
    // The rig's checkout moved with it, its uncommitted README left as it was.
    expect(readFileSync(join(repo, 'landed.txt'), 'utf8')).to.equal('landed\n');
    expect(readFileSync(join(repo, 'README'), 'utf8')).to.equal('hello, not committed\n');

    // Main moves on elsewhere; the next branch has no conflict with it: rebased, then fast-forwarded.
    const next = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await commitIn(next, 'second.txt', 'second');
    writeFileSync(join(repo, 'elsewhere.txt'), 'elsewhere\n');
    git(repo, 'add', 'elsewhere.txt');
    git(repo, 'commit', '-q', '-m', 'elsewhere');
    const again = await workBead(next, 'land after main moved');
    await city.api.post(`/bead/${again.id}/close`);
    const landed = await city.api.bead(again.id);
    expect(landed.status).to.equal('closed');
    expect(landed.metadata!['ctl.merged']).to.equal(git(repo, 'rev-parse', 'main'));
    expect(git(repo, 'log', '--format=%s', '-3', 'main').split('\n')).to.deep.equal([
      'edit second.txt',
      'elsewhere',
      'edit landed.txt',
    ]);
    // Nothing unmerged is left: closing removes it.
    const closed = await city.api.post<{ worktree: { removed: boolean } }>(`/session/${next}/close`);
    expect(closed.body.worktree.removed).to.equal(true);
  });

  it('a conflicting merge is never forced: the bead is reopened for its session with the reason', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    const tree = (await view(id)).worktree!;
    await commitIn(id, 'shared.txt', 'from the session');
    writeFileSync(join(repo, 'shared.txt'), 'from main\n');
    git(repo, 'commit', '-q', '-am', 'main edits shared.txt');
    const main = git(repo, 'rev-parse', 'main');
    const bead = await workBead(id, 'edit shared');
    await city.api.update(bead.id, { status: 'in_progress', assignee: (await view(id)).session_name });
    // Its close says why it goes back (and names the branch), then it is reopened.
    const { event } = await closeWatched(bead.id);
    expect(event.metadata).to.include({
      'ctl.branch': tree.branch,
      'ctl.merge_conflict': 'it conflicts with main in shared.txt',
    });
    expect(event.metadata!['ctl.merged']).to.equal(undefined);
    const reopened = await waitUntil('the bead to be reopened', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' ? b : undefined;
    });
    expect(reopened.metadata!['ctl.merge_conflict']).to.equal('it conflicts with main in shared.txt');
    expect(reopened.metadata!['ctl.branch']).to.equal(tree.branch);
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).to.equal('from main\n');
    // Its session is told, and its branch is as it was.
    await waitForTurn(city.api, id, 'assistant', new RegExp(`Bead ${bead.id} was reopened: .*conflicts with main`));
    expect(git(tree.path, 'status', '--porcelain')).to.equal('');
  });

  it('kill -9 in a direct merge: the next controller finishes the close — merged, recorded — and tells the session', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    const tree = (await view(id)).worktree!;
    await commitIn(id, 'across.txt', 'across');
    // Main moves on: the merge rebases the branch first, then dies before the fast-forward.
    writeFileSync(join(repo, 'before-crash.txt'), 'before\n');
    git(repo, 'add', 'before-crash.txt');
    git(repo, 'commit', '-q', '-m', 'before the crash');
    const bead = await workBead(id, 'land across a crash');
    await city.api.update(bead.id, { status: 'in_progress' });
    const controller = (await city.sup.city('isolated'))!.pid;
    writeFileSync(crashFile, 'crash');
    const asked = Date.now();
    // The controller dies under the request: whatever it answers, the close is not done yet.
    await city.api.post(`/bead/${bead.id}/close`).catch(() => undefined);
    expect(existsSync(crashFile), 'the crash point was reached').to.equal(false);
    const done = await waitUntil('the next controller to finish the close', async () => {
      const info = await city.sup.city('isolated');
      if (!info?.running || info.pid === controller) return undefined;
      const reply = await city.api.get<Bead>(`/bead/${bead.id}`);
      return reply.status === 200 && reply.body.status === 'closed' ? reply.body : undefined;
    });
    // Figures for the report, not a timed assertion.
    console.log(`      the close was finished ${Date.now() - asked} ms after the kill`);
    const main = git(repo, 'rev-parse', 'main');
    expect(done.metadata).to.include({ 'ctl.branch': tree.branch, 'ctl.merged': main, 'ctl.commit': main });
    expect(git(repo, 'log', '--format=%s', '-2', 'main').split('\n')).to.deep.equal([
      'edit across.txt',
      'before the crash',
    ]);
    await waitForTurn(
      city.api,
      id,
      'assistant',
      new RegExp(
        `Bead ${bead.id} was closed after the controller restarted: its branch \\S+ went into main at ${main}`,
      ),
    );
    expect(readdirSync(join(city.dir, '.ctl', 'merges'))).to.deep.equal([]);
  });

  it('GET /rigs?git=true and the session view show each session’s branch: dirty, ahead, behind', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const name = (await view(id)).session_name;
    await commitIn(id, 'one.txt', 'one');
    await run(id, 'echo draft > draft.txt');
    writeFileSync(join(repo, 'README.more'), 'x\n');
    git(repo, 'add', 'README.more');
    git(repo, 'commit', '-q', '-m', 'main moves');
    const rigs = await city.api.get<{
      items: { name: string; worktrees?: (WorktreeView & { session_id: string })[] }[];
    }>('/rigs?git=true');
    const web = rigs.body.items.find((r) => r.name === 'web')!;
    const mine = web.worktrees!.find((w) => w.session_id === id)!;
    expect(mine).to.include({
      session_name: name,
      agent: 'web/coder',
      branch: `ctl/web/coder/${name}`,
      dirty: true,
      ahead: 1,
      behind: 1,
    });
    expect((await view(id)).worktree).to.include({ dirty: true, ahead: 1, behind: 1 });
    const shown = expectSuccess(await city.sup.ctl(['--city', 'isolated', 'rig', 'status', 'web']));
    expect(shown).to.include('Worktrees:');
    expect(shown).to.include(`  ${name}  ctl/web/coder/${name}  dirty ↑1 ↓1  ${mine.path}`);
    // Without git=true, no git runs.
    const quick = await city.api.get<{ items: { name: string; worktrees?: unknown }[] }>('/rigs');
    expect(quick.body.items.find((r) => r.name === 'web')!.worktrees).to.equal(undefined);
  });

  it('a rig that is not a git repository: a validate error naming the agent, and its sessions are refused', async function () {
    const report = await city.api.get<{ errors: { key?: string; message: string }[]; warnings: { message: string }[] }>(
      '/config/validate',
    );
    const error = report.body.errors.find((e) => e.key === 'agent.plain/loner');
    expect(error?.message).to.match(
      /^agent plain\/loner: isolation = "worktree" needs a git repository, and rig plain \(.*\) is not in one$/,
    );
    expect(report.body.warnings.map((w) => w.message)).to.include(
      'agent careless: merge does nothing without isolation = "worktree"',
    );
    const refused = await city.api.post('/sessions', { kind: 'agent', name: 'plain/loner' });
    expectProblem(refused, 409, 'conflict-wrong-state');
    expect((refused.body as { detail: string }).detail).to.include('needs a git repository');
  });

  it('a git failure is a clear reason, never a 500: a base branch that does not exist fails the start saying so', async function () {
    const reply = await city.api.post<{ request_id: string; session_id: string }>('/sessions', {
      kind: 'agent',
      name: 'web/stale',
    });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
    const result = await terminalOf(city.api, reply.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload.error_message).to.equal(`git worktree add: the base branch gone does not exist in ${repo}`);
    const shown = await view(reply.body.session_id);
    expect(shown.running).to.equal(false);
    expect(shown.worktree!.error).to.equal('the worktree is not made yet (or was removed)');
    const closed = await city.api.post<{ worktree: Record<string, unknown> }>(
      `/session/${reply.body.session_id}/close`,
    );
    expect(closed.status).to.equal(200);
    expect(closed.body.worktree).to.include({ removed: true });
  });

  it('a bad isolation or merge value is a configuration error naming the key', async function () {
    const file = join(city.dir, 'city.toml');
    const good = readFileSync(file, 'utf8');
    try {
      writeFileSync(file, good.replace('merge = "direct"\nmin', 'merge = "squash"\nmin'));
      const report = await waitUntil('the reload to fail', async () => {
        const body = (await city.api.get<{ errors: { message: string }[] }>('/config/validate')).body;
        return body.errors.find((e) => e.message.includes('merge must be'));
      });
      expect(report.message).to.include(
        'agent[1].merge must be "none" or "direct" or "review" or "push" (got "squash")',
      );
    } finally {
      writeFileSync(file, good);
      await waitUntil('the good configuration back', async () => {
        const body = (await city.api.get<{ errors: { message: string }[] }>('/config/validate')).body;
        return !body.errors.some((e) => e.message.includes('merge must be'));
      });
    }
  });

  it('a controller that starts prunes what a dead one left: half-made worktrees removed, a closed session’s clean one released', async function () {
    const root = join(city.dir, '.ctl', 'worktrees');
    const junk = join(root, 'left-half-made');
    mkdirSync(junk, { recursive: true });
    writeFileSync(join(junk, 'partial'), 'x');
    // A closed session whose worktree a dying controller did not get to remove (made back by hand here).
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = (await view(id)).worktree!;
    await city.api.post(`/session/${id}/close`);
    git(repo, 'worktree', 'add', '-q', '-b', tree.branch, tree.path, 'main');
    const pid = controllerPid(city.dir);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the controller to die', () => !isAlive(pid));
    await waitUntil('a new controller', async () => {
      const info = await city.sup.city('isolated');
      return info?.running === true && info.pid !== pid;
    });
    await waitUntil('the left worktrees to go', () => !existsSync(junk) && !existsSync(tree.path));
    expect(git(repo, 'branch', '--list', tree.branch)).to.equal('');
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.to.include(tree.path);
    rmSync(junk, { recursive: true, force: true });
  });
});
