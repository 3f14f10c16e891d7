// The merge queue of approved reviews and the city's `[review] check`: an agent with `isolation = "worktree"` and
// `merge = "review"` over a real git repository (a rig), its sessions the echo example agent (whose `run` runs a
// shell command in its worktree); the check a shell script whose behaviour a file in the test's directory picks.
// What lands is read back from git, what runs from the process table.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Bead } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

interface Check {
  command: string;
  passed: boolean;
  exit_code?: number;
  timed_out: boolean;
  duration_ms: number;
  commit: string;
}

interface Review {
  bead: string;
  state: string;
  agent: string;
  session: string;
  branch: string;
  base: string;
  commit: string;
  merged?: string;
  conflict?: string;
  conflict_files?: string[];
  queue_position?: number;
  queue_step?: string;
  check?: Check;
  check_output?: string;
}

/** A number no other process on the machine sleeps for: the hanging check's, found again in the process table. */
const HANG_MARK = '987654';
const CHECK_TIMEOUT_S = 6;

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

describe('the merge queue of approved reviews and [review] check', function () {
  this.timeout(180_000);
  let city: SessionCity;
  let repo: string;
  let dir: string;

  const mode = (m: 'pass' | 'fail-once' | 'hang' | 'block') => {
    rmSync(join(dir, 'release'), { force: true });
    rmSync(join(dir, 'failed-once'), { force: true });
    writeFileSync(join(dir, 'mode'), m);
  };

  before(async function () {
    dir = tempDir('ctl-review-queue-');
    repo = join(dir, 'web');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'user.email', 'dev@example.invalid');
    git(repo, 'config', 'user.name', 'dev');
    writeFileSync(join(repo, 'shared.txt'), 'base\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'first');
    // What each run saw is appended to `runs`: the bead, the commit it ran on, and that commit's parent.
    writeFileSync(
      join(dir, 'check.sh'),
      `#!/bin/sh
D="${dir}"
echo "$CTL_REVIEW_BEAD $(git rev-parse HEAD) $(git rev-parse HEAD^)" >> "$D/runs"
echo "checking $CTL_REVIEW_BEAD"
case "$(cat "$D/mode")" in
  pass) exit 0 ;;
  fail-once)
    if [ ! -e "$D/failed-once" ]; then touch "$D/failed-once"; echo "FAILED test_answer: expected 42, got 41"; exit 3; fi
    exit 0 ;;
  hang)
    sleep ${HANG_MARK}1 &
    exec sleep ${HANG_MARK}2 ;;
  block)
    echo $$ > "$D/started.$CTL_REVIEW_BEAD.$$"
    while [ ! -e "$D/release" ]; do sleep 0.1; done
    exit 0 ;;
esac
`,
      { mode: 0o755 },
    );
    mode('pass');
    city = await startSessionCity(
      'queued',
      `
[review]
check = "${join(dir, 'check.sh')}"
check_timeout = "${CHECK_TIMEOUT_S}s"

[[rigs]]
name = "web"
path = "${repo}"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`,
    );
  });
  after(async () => city?.sup.cleanup());

  const run = async (id: string, command: string): Promise<void> => {
    const mark = `${Date.now()}-${Math.random()}`;
    await city.api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
    await waitForTurn(city.api, id, 'assistant', new RegExp(`done-${mark}`));
  };
  const commitIn = (id: string, file: string, text: string) =>
    run(id, `printf '${text}' > ${file} && git add ${file} && git commit -q -m 'edit ${file}'`);
  const treeOf = async (id: string) =>
    (await city.api.get<{ worktree: { path: string; branch: string } }>(`/session/${id}`)).body.worktree;
  const review = async (bead: string): Promise<Review> => {
    const reply = await city.api.get<Review>(`/reviews/${bead}`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  };
  const settled = (bead: string, state: string): Promise<Review> =>
    waitUntil(`the review of ${bead} to be ${state}`, async () => {
      const r = await review(bead);
      return r.state === state ? r : undefined;
    });
  /** A session that committed `file`, its bead closed for review; the review, pending. */
  const pendingReview = async (file: string, text = `${file}\\n`): Promise<{ id: string; bead: Bead }> => {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await commitIn(id, file, text);
    const bead = await city.api.create({ title: `edit ${file}`, metadata: { 'ctl.assigned_session': id } });
    expect((await city.api.post(`/bead/${bead.id}/close`)).status).to.equal(200);
    await settled(bead.id, 'pending');
    return { id, bead };
  };
  const approve = async (bead: string): Promise<Review> => {
    const reply = await city.api.post<Review>(`/reviews/${bead}/approve`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  };
  const startedChecks = (bead: string) => readdirSync(dir).filter((f) => f.startsWith(`started.${bead}.`));

  it('lands three approved reviews one at a time in approval order, each rebased on the one before', async function () {
    const a = await pendingReview('a.txt');
    const b = await pendingReview('b.txt');
    const c = await pendingReview('c.txt');
    // The session of `a` goes on committing on its branch after its close: that is not what was reviewed.
    await commitIn(a.id, 'later.txt', 'not reviewed\\n');
    // A person's commit on main meanwhile: every branch is behind it.
    writeFileSync(join(repo, 'person.txt'), 'by hand\n');
    git(repo, 'add', 'person.txt');
    git(repo, 'commit', '-q', '-m', 'by a person');
    const start = git(repo, 'rev-parse', 'main');
    rmSync(join(dir, 'runs'), { force: true });
    mode('block');

    const asked = Date.now();
    const answers = [await approve(a.bead.id), await approve(b.bead.id), await approve(c.bead.id)];
    // Answered while the first check is held: approved, each with its place, none merged.
    expect(answers.map((r) => [r.state, r.queue_position])).to.deep.equal([
      ['approved', 1],
      ['approved', 2],
      ['approved', 3],
    ]);
    await waitUntil('the first check to start', () => startedChecks(a.bead.id).length === 1);
    const listed = (await city.api.get<{ items: Review[] }>('/reviews?state=approved')).body.items;
    expect(listed.map((r) => [r.bead, r.queue_position, r.queue_step])).to.deep.equal([
      [a.bead.id, 1, 'checking'],
      [b.bead.id, 2, 'waiting'],
      [c.bead.id, 3, 'waiting'],
    ]);
    expect(git(repo, 'rev-parse', 'main')).to.equal(start);
    writeFileSync(join(dir, 'release'), '');

    const merged = [
      await settled(a.bead.id, 'merged'),
      await settled(b.bead.id, 'merged'),
      await settled(c.bead.id, 'merged'),
    ];
    console.log(`      three reviews landed ${Date.now() - asked} ms after the first approval`);
    // One line of history, in approval order, each on the one before.
    expect(git(repo, 'log', '--format=%s', '-4', 'main').split('\n')).to.deep.equal([
      'edit c.txt',
      'edit b.txt',
      'edit a.txt',
      'by a person',
    ]);
    expect(git(repo, 'rev-parse', 'main')).to.equal(merged[2].merged);
    expect(git(repo, 'rev-parse', `${merged[0].merged}^`)).to.equal(start);
    expect(git(repo, 'rev-parse', `${merged[1].merged}^`)).to.equal(merged[0].merged);
    expect(git(repo, 'rev-parse', `${merged[2].merged}^`)).to.equal(merged[1].merged);
    // Each check ran on what landed: the reviewed commit rebased onto the one before it.
    const runs = readFileSync(join(dir, 'runs'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    expect(runs).to.deep.equal([
      [a.bead.id, merged[0].merged, start],
      [b.bead.id, merged[1].merged, merged[0].merged],
      [c.bead.id, merged[2].merged, merged[1].merged],
    ]);
    for (const r of merged) expect(r.check).to.include({ passed: true, exit_code: 0, timed_out: false });
    // Exactly the reviewed commit: the commit a's session made after its close did not come in.
    expect(git(repo, 'ls-tree', '--name-only', 'main')).not.to.contain('later.txt');
    expect(git(repo, 'log', '--format=%s', '-1', (await treeOf(a.id)).branch)).to.equal('edit later.txt');
    const events = await city.api.eventsAbout('review.checked', b.bead.id);
    expect(events.map((e) => (e.payload as { check: Check }).check.passed)).to.deep.equal([true]);
    // No review tree is left behind.
    expect(readdirSync(join(city.dir, '.ctl', 'reviews', 'trees'))).to.deep.equal([]);
  });

  it('a failing check sends the review back with its output to the same session; passing, it merges', async function () {
    const ctl = (...args: string[]) => city.sup.ctl(['--city', 'queued', 'review', ...args]);
    mode('fail-once');
    const { id, bead } = await pendingReview('answer.txt', '41\\n');
    const before = git(repo, 'rev-parse', 'main');

    expectFailure(
      await ctl('approve', bead.id),
      'review approve',
      /the check exited 3 after .* sent back to web\/coder/,
    );
    const back = await review(bead.id);
    expect(back.state).to.equal('changes_requested');
    expect(back.check).to.include({ passed: false, exit_code: 3, timed_out: false });
    expect(back.check_output).to.contain('FAILED test_answer: expected 42, got 41');
    expect(readFileSync(join(city.dir, '.ctl', 'reviews', `${bead.id}.check.log`), 'utf8')).to.contain(
      'expected 42, got 41',
    );
    expect(git(repo, 'rev-parse', 'main')).to.equal(before);
    expect((await city.api.bead(bead.id)).status).to.equal('in_progress');
    const told = await waitForTurn(city.api, id, 'assistant', /The check of bead \S+ failed/);
    expect(told.text).to.contain('FAILED test_answer: expected 42, got 41');
    expect(told.text).to.contain(`ctl bead close ${bead.id}`);
    expect(expectSuccess(await ctl('show', bead.id)).join('\n')).to.contain('failed, exit 3');

    // The agent mends it; the check passes the second time.
    await commitIn(id, 'answer.txt', '42\\n');
    expect((await city.api.post(`/bead/${bead.id}/close`)).status).to.equal(200);
    await settled(bead.id, 'pending');
    const done = expectSuccess(await ctl('approve', bead.id));
    expect(done[0]).to.match(/^Merged ctl\/web\/coder\/\S+ into main at [0-9a-f]{40}$/);
    expect(git(repo, 'show', 'main:answer.txt')).to.equal('42');
    expect((await review(bead.id)).check).to.include({ passed: true });
  });

  it('a check that hangs is killed at its time-out with everything it started, and the review sent back', async function () {
    mode('hang');
    const { bead } = await pendingReview('hang.txt');
    const asked = Date.now();
    await approve(bead.id);
    await waitUntil('the hanging check to run', () => processesMentioning(HANG_MARK).length === 2);
    const back = await settled(bead.id, 'changes_requested');
    const took = Date.now() - asked;
    console.log(`      the hanging check was ended ${took} ms after the approval (time-out ${CHECK_TIMEOUT_S} s)`);
    expect(back.check).to.include({ passed: false, timed_out: true });
    expect(back.check!.exit_code).to.equal(undefined);
    expect(back.check!.duration_ms).to.be.within(CHECK_TIMEOUT_S * 1000, CHECK_TIMEOUT_S * 1000 + 5000);
    // Nothing it started is left: the sleep it exec'd and the one it left in the background.
    expect(processesMentioning(HANG_MARK)).to.deep.equal([]);
    expect(readdirSync(join(city.dir, '.ctl', 'reviews', 'trees'))).to.deep.equal([]);
  });

  it('a controller killed mid-queue: the next one resumes the queue from the store', async function () {
    mode('block');
    const first = await pendingReview('resume-1.txt');
    const second = await pendingReview('resume-2.txt');
    await approve(first.bead.id);
    const noWait = await city.sup.ctl(['--city', 'queued', 'review', 'approve', second.bead.id, '--no-wait']);
    expect(expectSuccess(noWait)).to.deep.equal([`Approved ${second.bead.id}: place 2 in the merge queue of web`]);
    await waitUntil('the first check to start', () => startedChecks(first.bead.id).length === 1);
    const checkPid = Number(readFileSync(join(dir, startedChecks(first.bead.id)[0]), 'utf8'));
    const pid = controllerPid(city.dir);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the controller and its check to die', () => !isAlive(pid) && !isAlive(checkPid));
    await waitUntil('a new controller to run the check again', () => startedChecks(first.bead.id).length === 2);
    // Still approved, in order, while it runs again.
    const waiting = await review(second.bead.id);
    expect([waiting.state, waiting.queue_position]).to.deep.equal(['approved', 2]);
    writeFileSync(join(dir, 'release'), '');
    const one = await settled(first.bead.id, 'merged');
    const two = await settled(second.bead.id, 'merged');
    expect(git(repo, 'rev-parse', `${two.merged}^`)).to.equal(one.merged);
    expect(git(repo, 'rev-parse', 'main')).to.equal(two.merged);
    expect(readdirSync(join(city.dir, '.ctl', 'reviews', 'trees'))).to.deep.equal([]);
  });

  it('refuses a branch that vanished or was force-moved; a base that moved in the way is conflicted, files named', async function () {
    mode('pass');
    // Force-moved: the reviewed commit is no longer on the branch.
    const moved = await pendingReview('moved.txt');
    const movedTree = await treeOf(moved.id);
    await run(
      moved.id,
      `git reset -q --hard HEAD~1 && printf 'other\\n' > other.txt && git add other.txt && git commit -q -m other`,
    );
    const main = git(repo, 'rev-parse', 'main');
    const refused = expectProblem(
      await city.api.post(`/reviews/${moved.bead.id}/approve`),
      409,
      'conflict-wrong-state',
    );
    expect(refused.detail).to.match(
      /force-moved since the review: the reviewed commit [0-9a-f]{12} is no longer on it/,
    );
    expect((await review(moved.bead.id)).state).to.equal('pending');
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    expect(git(repo, 'rev-parse', movedTree.branch)).not.to.equal((await review(moved.bead.id)).commit);

    // Vanished before the approval: refused; after it, while another review is checked: conflicted, nothing merged.
    const gone = await pendingReview('gone.txt');
    git(repo, 'update-ref', '-d', `refs/heads/${(await treeOf(gone.id)).branch}`);
    const vanished = expectProblem(
      await city.api.post(`/reviews/${gone.bead.id}/approve`),
      409,
      'conflict-wrong-state',
    );
    expect(vanished.detail).to.contain('no longer exists');
    mode('block');
    const ahead = await pendingReview('ahead.txt');
    const later = await pendingReview('vanishing.txt');
    await approve(ahead.bead.id);
    await approve(later.bead.id);
    await waitUntil('the check of the first to start', () => startedChecks(ahead.bead.id).length === 1);
    git(repo, 'update-ref', '-d', `refs/heads/${(await treeOf(later.id)).branch}`);
    writeFileSync(join(dir, 'release'), '');
    const landed = await settled(ahead.bead.id, 'merged');
    const lost = await settled(later.bead.id, 'conflicted');
    expect(lost.conflict).to.match(/its branch \S+ no longer exists/);
    expect(git(repo, 'rev-parse', 'main')).to.equal(landed.merged);

    // A base that moved in the way of the branch: conflicted, with the file; the base as it was.
    mode('pass');
    const clash = await pendingReview('shared.txt', 'from the session\\n');
    writeFileSync(join(repo, 'shared.txt'), 'from main\n');
    git(repo, 'commit', '-q', '-am', 'main edits shared.txt');
    const before = git(repo, 'rev-parse', 'main');
    await approve(clash.bead.id);
    const conflicted = await settled(clash.bead.id, 'conflicted');
    expect(conflicted.conflict).to.equal('it conflicts with main in shared.txt');
    expect(conflicted.conflict_files).to.deep.equal(['shared.txt']);
    expect(git(repo, 'rev-parse', 'main')).to.equal(before);
    const event = (await city.api.eventsAbout('review.conflicted', clash.bead.id))[0];
    expect(event.payload).to.include({ reason: 'it conflicts with main in shared.txt' });
    expect(readdirSync(join(city.dir, '.ctl', 'reviews', 'trees'))).to.deep.equal([]);
  });

  it('a merged or abandoned review releases the worktree of a closed session (an abandoned one keeps its branch)', async function () {
    mode('pass');
    const kept = await pendingReview('released.txt');
    const keptTree = await treeOf(kept.id);
    const dropped = await pendingReview('dropped.txt');
    const droppedTree = await treeOf(dropped.id);
    for (const id of [kept.id, dropped.id]) {
      const closed = await city.api.post<{ worktree: { removed: boolean } }>(`/session/${id}/close`);
      expect(closed.body.worktree.removed).to.equal(false);
    }
    await approve(kept.bead.id);
    await settled(kept.bead.id, 'merged');
    // Its worktree first, then its branch (which holds nothing main lacks once moved to what landed).
    await waitUntil(
      'the merged review’s worktree and branch to go',
      () => !existsSync(keptTree.path) && git(repo, 'branch', '--list', keptTree.branch) === '',
    );
    expect(git(repo, 'show', 'main:released.txt')).to.equal('released.txt');

    expect((await city.api.post<Review>(`/reviews/${dropped.bead.id}/abandon`)).body.state).to.equal('abandoned');
    expect(existsSync(droppedTree.path)).to.equal(false);
    expect(git(repo, 'log', '--format=%s', '-1', droppedTree.branch)).to.equal('edit dropped.txt');
  });
});
