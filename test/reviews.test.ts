// Review before merge: an agent with `isolation = "worktree"` and `merge = "review"` over a real git repository
// (a rig); its session's program is the echo example agent, whose `run` runs a shell command in its worktree.
// What a review shows and what approving merges are read back from git itself.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem, type Bead } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { commitInSession, git, rigRepository } from './helpers/rigs.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Review {
  bead: string;
  state: string;
  agent: string;
  session: string;
  branch: string;
  base: string;
  commit: string;
  base_commit: string;
  commits: { sha: string; subject: string }[];
  files: { path: string; insertions: number; deletions: number }[];
  round: number;
  decided_by?: string;
  decided_at?: string;
  merged?: string;
  conflict?: string;
  conflict_files?: string[];
  queue_position?: number;
  comments?: { id: number; text: string; path?: string; line?: number }[];
  diff?: { path: string; diff: string; truncated: boolean }[];
  diff_since_previous?: { path: string; diff: string; truncated: boolean }[];
  previous_commit?: string;
  truncated?: boolean;
}

const repository = () => rigRepository({ 'shared.txt': 'base\n' }, { prefix: 'ctl-review-rig-' });

const AGENTS = `
[[rigs]]
name = "web"
path = "RIG"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`;

describe('reviews of finished work (merge = "review")', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let repo: string;

  before(async function () {
    repo = repository();
    city = await startSessionCity('reviewed', AGENTS.replace('RIG', repo));
  });
  after(async () => city?.sup.cleanup());

  const commitIn = (id: string, file: string, text: string) => commitInSession(city.api, id, file, text);
  const workBead = (sessionId: string, title: string): Promise<Bead> =>
    city.api.create({ title, metadata: { 'ctl.assigned_session': sessionId } });
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
  const closeForReview = async (bead: string): Promise<Review> => {
    expect((await city.api.post(`/bead/${bead}/close`)).status).to.equal(200);
    return waitUntil('the review to be pending', async () => {
      const r = await city.api.get<Review>(`/reviews/${bead}`);
      return r.status === 200 && r.body.state === 'pending' ? r.body : undefined;
    });
  };

  it('holds the branch for review, sends it back with line comments, and merges it once approved', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const tree = (await city.api.get<{ worktree: { path: string; branch: string } }>(`/session/${id}`)).body.worktree;
    await commitIn(id, 'feature.txt', 'one\\ntwo\\nthree\\n');
    const main = git(repo, 'rev-parse', 'main');
    const bead = await workBead(id, 'a feature');

    const pending = await closeForReview(bead.id);
    // Not merged: the base is where it was, the bead closed and saying its branch waits.
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    const closed = await city.api.bead(bead.id);
    expect(closed.status).to.equal('closed');
    expect(closed.metadata).to.include({ 'ctl.review': 'pending', 'ctl.branch': tree.branch });
    expect(pending).to.include({ agent: 'web/coder', session: id, branch: tree.branch, base: 'main', round: 1 });
    expect(pending.commit).to.equal(git(repo, 'rev-parse', tree.branch));
    expect(pending.base_commit).to.equal(main);
    expect(pending.commits).to.deep.equal([{ sha: pending.commit, subject: 'edit feature.txt' }]);
    expect(pending.files).to.deep.equal([{ path: 'feature.txt', insertions: 3, deletions: 0 }]);
    expect(pending.truncated).to.equal(false);
    expect(pending.diff!.map((f) => f.path)).to.deep.equal(['feature.txt']);
    expect(pending.diff![0].diff).to.contain('+two\n');
    expect(existsSync(tree.path)).to.equal(true);
    const listed = await city.api.get<{ items: Review[]; total: number }>('/reviews?state=pending&agent=web/coder');
    expect(listed.body.items.map((r) => r.bead)).to.deep.equal([bead.id]);
    expect((await city.api.get<{ items: Review[] }>('/reviews?state=merged')).body.items).to.deep.equal([]);
    expect((await city.api.eventsAbout('review.requested', bead.id)).length).to.equal(1);

    // Comments: on a line of the diff, on the whole; a line or a file outside it is a 422.
    const onLine = await city.api.post(`/reviews/${bead.id}/comments`, {
      text: 'say deux here',
      path: 'feature.txt',
      line: 2,
    });
    expect(onLine.status, JSON.stringify(onLine.body)).to.equal(201);
    expect((await city.api.post(`/reviews/${bead.id}/comments`, { text: 'otherwise fine' })).status).to.equal(201);
    expectProblem(
      await city.api.post(`/reviews/${bead.id}/comments`, { text: 'x', path: 'feature.txt', line: 40 }),
      422,
      'validation-failed',
    );
    expectProblem(
      await city.api.post(`/reviews/${bead.id}/comments`, { text: 'x', path: 'shared.txt', line: 1 }),
      422,
      'validation-failed',
    );
    expectProblem(await city.api.post(`/reviews/${bead.id}/comments`, { text: '  ' }), 422, 'validation-failed');

    // Sent back: the same session is told every comment with its file:line, the bead reopened for it.
    const sent = await city.api.post<Review>(`/reviews/${bead.id}/request-changes`, { text: 'see the comments' });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(200);
    expect(sent.body.state).to.equal('changes_requested');
    expect((await city.api.bead(bead.id)).status).to.equal('in_progress');
    const told = await waitForTurn(city.api, id, 'assistant', /Changes were requested on bead/);
    expect(told.text).to.contain('see the comments');
    expect(told.text).to.contain('feature.txt:2: say deux here');
    expect(told.text).to.contain('otherwise fine');
    // Only a pending review is approved.
    expectProblem(await city.api.post(`/reviews/${bead.id}/approve`), 409, 'conflict-wrong-state');

    // The agent mends it and closes again: the same review, a round later, its comments kept.
    await commitIn(id, 'feature.txt', 'one\\ndeux\\nthree\\n');
    const again = await closeForReview(bead.id);
    expect(again.round).to.equal(2);
    expect(again.commits.map((c) => c.subject)).to.deep.equal(['edit feature.txt', 'edit feature.txt']);
    expect(again.comments!.map((c) => c.text)).to.deep.equal(['say deux here', 'otherwise fine']);
    // What changed since the person last looked, and the whole.
    expect(again.previous_commit).to.equal(pending.commit);
    expect(again.diff_since_previous!.map((f) => f.path)).to.deep.equal(['feature.txt']);
    expect(again.diff_since_previous![0].diff).to.contain('-two\n+deux\n');
    expect(again.diff![0].diff).to.contain('+deux\n');
    expect(again.diff![0].diff).not.to.contain('two');

    // Approved at once, in its rig's merge queue; merged by the queue.
    const approved = await city.api.post<Review>(`/reviews/${bead.id}/approve`);
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    expect(approved.body).to.include({ state: 'approved', queue_position: 1 });
    expect(approved.body.decided_by).to.be.a('string');
    const merged = await settled(bead.id, 'merged');
    const head = git(repo, 'rev-parse', tree.branch);
    expect(git(repo, 'rev-parse', 'main')).to.equal(head);
    expect(merged.merged).to.equal(head);
    expect(readFileSync(join(repo, 'feature.txt'), 'utf8')).to.equal('one\ndeux\nthree\n');
    expect((await city.api.bead(bead.id)).metadata).to.include({ 'ctl.review': 'merged', 'ctl.merged': head });
    expect((await city.api.eventsAbout('review.merged', bead.id)).length).to.equal(1);
    const read = await review(bead.id);
    expect(read).to.include({ state: 'merged', merged: head });
    expect(read.decided_at).to.be.a('string');
    expectProblem(await city.api.post(`/reviews/${bead.id}/approve`), 409, 'conflict-wrong-state');
  });

  it('approving a branch that conflicts with its base is never forced: conflicted, with the files', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await commitIn(id, 'shared.txt', 'from the session\\n');
    const bead = await workBead(id, 'edit shared');
    await closeForReview(bead.id);
    writeFileSync(join(repo, 'shared.txt'), 'from main\n');
    git(repo, 'commit', '-q', '-am', 'main edits shared.txt');
    const main = git(repo, 'rev-parse', 'main');

    const approved = await city.api.post<Review>(`/reviews/${bead.id}/approve`);
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    expect(approved.body.state).to.equal('approved');
    const conflicted = await settled(bead.id, 'conflicted');
    expect(conflicted).to.include({ conflict: 'it conflicts with main in shared.txt' });
    expect(conflicted.conflict_files).to.deep.equal(['shared.txt']);
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);
    expect((await city.api.eventsAbout('review.conflicted', bead.id)).length).to.equal(1);

    const abandoned = await city.api.post<Review>(`/reviews/${bead.id}/abandon`);
    expect(abandoned.body.state).to.equal('abandoned');
    expectProblem(await city.api.post(`/reviews/${bead.id}/abandon`), 409, 'conflict-wrong-state');
    expectProblem(await city.api.get('/reviews/nope-1'), 404, 'review-not-found');

    // A bead closed with nothing committed has nothing to review.
    const idle = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const empty = await workBead(idle, 'nothing done');
    expect((await city.api.post(`/bead/${empty.id}/close`)).status).to.equal(200);
    expect((await city.api.bead(empty.id)).metadata?.['ctl.review']).to.equal(undefined);
    expectProblem(await city.api.get(`/reviews/${empty.id}`), 404, 'review-not-found');
  });

  it('changes asked after the session is gone send the bead back to its agent, the request on it', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await commitIn(id, 'later.txt', 'later\\n');
    const bead = await workBead(id, 'done, then left');
    await closeForReview(bead.id);
    const closed = await city.api.post<{ worktree: { removed: boolean; reason?: string } }>(`/session/${id}/close`);
    // The branch waits for review: its worktree stays.
    expect(closed.body.worktree).to.include({ removed: false, reason: '1 commit not in main' });
    expect(
      (await city.api.post(`/reviews/${bead.id}/comments`, { text: 'rename it', path: 'later.txt', line: 1 })).status,
    ).to.equal(201);

    const sent = await city.api.post<Review>(`/reviews/${bead.id}/request-changes`, { text: 'one more thing' });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(200);
    const back = await city.api.bead(bead.id);
    expect(back.status).to.equal('open');
    expect(back.metadata?.['ctl.assigned_session'] ?? '').to.equal('');
    const comments = await city.api.get<{ items: { text: string }[] }>(`/bead/${bead.id}/comments`);
    const told = comments.body.items.map((c) => c.text).join('\n');
    expect(told).to.contain('one more thing');
    expect(told).to.contain('later.txt:1: rename it');
  });

  it('ctl review lists, shows, comments on a line and approves; a bad line or a second approval fails in one line', async function () {
    const ctl = (...args: string[]) => city.sup.ctl(['--city', 'reviewed', 'review', ...args]);
    const id = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await commitIn(id, 'cli.txt', 'alpha\\nbeta\\n');
    const bead = await workBead(id, 'from the CLI');
    await closeForReview(bead.id);

    const listed = expectSuccess(await ctl('list', '--state', 'pending'));
    expect(listed[0]).to.match(/^BEAD\s+STATE/);
    expect(listed.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).to.deep.equal([[bead.id, 'pending']]);
    const shown = expectSuccess(await ctl('show', bead.id));
    expect(shown).to.include('+beta');
    expect(shown.some((l) => l.endsWith(' edit cli.txt'))).to.equal(true);

    expect(expectSuccess(await ctl('comment', bead.id, '--file', 'cli.txt', '--line', '2', 'beta?'))[0]).to.match(
      new RegExp(`^Commented on the review of ${bead.id} \\(#1\\)$`),
    );
    expectFailure(await ctl('comment', bead.id, '--file', 'cli.txt', '--line', '9', 'no'), 'review comment', 'line 9');
    expectFailure(await ctl('comment', bead.id, '--line', '2', 'no'), 'review comment', '--line goes with --file');
    expectFailure(await ctl('list', '--state', 'done'), 'review list', '--state is one of');
    expect(expectSuccess(await ctl('show', bead.id)).some((l) => l.includes('cli.txt:2 beta?'))).to.equal(true);

    expect(expectSuccess(await ctl('approve', bead.id))[0]).to.match(
      /^Merged ctl\/web\/coder\/\S+ into main at [0-9a-f]{40}$/,
    );
    expect(readFileSync(join(repo, 'cli.txt'), 'utf8')).to.equal('alpha\nbeta\n');
    expectFailure(await ctl('approve', bead.id), 'review approve', 'is merged, not pending');
    expectFailure(await ctl('show', 'nope-9'), 'review show', 'no review of bead nope-9');
  });
});
