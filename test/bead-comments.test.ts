import { userInfo } from 'node:os';
import { expect } from 'chai';
import type { BeadComment, ListBodyBeadComment } from '../shared/dto/beads.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { expectProblem, type CityApi } from './helpers/city-api.js';
import { CSRF, type TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';
import { withWorkCity } from './helpers/work-units.js';

// Comments on beads (docs/bead-comments.md): the API family `/bead/{id}/comments`, who the author is, its
// limits, the `bead.commented` event, deletes by the author only, surviving a controller restart, and
// `ctl bead comment|comments|show`. An agent's own comment (author = its agent) is in agent-commands.test.ts.

const ME = userInfo().username;

describe('bead comments: API, events, restart and CLI', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  withWorkCity((city) => ({ sup, api } = city), 'comment-city');

  async function comment(id: string, text: string, headers: Record<string, string> = {}): Promise<BeadComment> {
    const reply = await api.post<BeadComment>(`/bead/${id}/comments`, { text }, headers);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
    return reply.body;
  }

  async function list(id: string, query = ''): Promise<{ body: ListBodyBeadComment; index: number }> {
    const reply = await api.get<ListBodyBeadComment>(`/bead/${id}/comments${query}`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return { body: reply.body, index: Number(reply.headers.get('x-ctl-index')) };
  }

  it('adds a comment as the requester, records bead.commented, and pages from the newest', async function () {
    const bead = await api.create({ title: 'talked about' });
    const first = await comment(bead.id, '\n\nIt fails on main too.\n  \n');
    expect(first).to.include({ issue_id: bead.id, author: ME, text: 'It fails on main too.' });
    expect(Date.parse(first.created_at)).to.be.closeTo(Date.now(), 60_000);
    const [event] = await api.eventsAbout('bead.commented', bead.id);
    expect(event).to.deep.include({ type: 'bead.commented', actor: ME, subject: bead.id, payload: { comment: first } });
    for (const i of [2, 3, 4]) await comment(bead.id, `note ${i}`);
    const newest = await list(bead.id, '?limit=2');
    expect(newest.body.items.map((c) => c.text)).to.deep.equal(['note 3', 'note 4']);
    expect(newest.body.total).to.equal(4);
    const earlier = await list(bead.id, `?limit=2&cursor=${encodeURIComponent(newest.body.next_cursor!)}`);
    expect(earlier.body.items.map((c) => c.text)).to.deep.equal(['It fails on main too.', 'note 2']);
    expect(earlier.body.next_cursor).to.equal(undefined);
    expectProblem(await api.get(`/bead/${bead.id}/comments?cursor=nonsense`), 400, 'invalid-cursor');
  });

  it('refuses blank or too long text (422 naming body.text) and an unknown bead (404)', async function () {
    const bead = await api.create({ title: 'quiet' });
    for (const text of ['', '  \n\t ']) {
      const reply = await api.post(`/bead/${bead.id}/comments`, { text });
      const problem = expectProblem(reply, 422, 'validation-failed');
      expect(JSON.stringify(problem.errors), text).to.include('body.text');
    }
    expectProblem(await api.post(`/bead/${bead.id}/comments`, { text: 'x'.repeat(10_001) }), 422, 'validation-failed');
    expectProblem(await api.post(`/bead/${bead.id}/comments`, {}), 422, 'validation-failed');
    expect((await comment(bead.id, 'y'.repeat(10_000))).text).to.have.length(10_000);
    expectProblem(await api.post('/bead/cc-404/comments', { text: 'hello' }), 404, 'bead-not-found');
    expectProblem(await api.get('/bead/cc-404/comments'), 404, 'bead-not-found');
    const stranger = await api.post(`/bead/${bead.id}/comments`, { text: 'hi', session: 'no-such-session' });
    expectProblem(stranger, 404, 'session-not-found');
    expect((await list(bead.id)).body.total, 'nothing written by the refused ones').to.equal(1);
  });

  it('answers a blocking list once a comment arrives', async function () {
    const bead = await api.create({ title: 'watched' });
    const { index } = await list(bead.id);
    let answered = false;
    const blocked = api
      .get<ListBodyBeadComment>(`/bead/${bead.id}/comments?index=${index}&wait=20s`)
      .finally(() => (answered = true));
    await list(bead.id);
    expect(answered, 'it waits while nothing changes').to.equal(false);
    await comment(bead.id, 'wake up');
    const reply = await blocked;
    expect(reply.body.items.map((c) => c.text)).to.deep.equal(['wake up']);
    expect(Number(reply.headers.get('x-ctl-index'))).to.be.above(index);
  });

  it('lets only the author delete a comment (403 for anyone else), recording bead.comment_deleted', async function () {
    const bead = await api.create({ title: 'argued about' });
    const made = await fetch(`${sup.base}/v0/tokens`, {
      method: 'POST',
      headers: { ...CSRF, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'reviewer' }),
    });
    expect(made.status).to.equal(201);
    const bearer = { authorization: `Bearer ${((await made.json()) as { token: string }).token}` };
    const theirs = await comment(bead.id, 'from the reviewer', bearer);
    expect(theirs.author).to.equal('token:reviewer');
    const mine = await comment(bead.id, 'from me');
    const refused = expectProblem(await api.del(`/bead/${bead.id}/comments/${theirs.id}`), 403, 'forbidden');
    expect(refused.detail).to.include('token:reviewer');
    expect((await api.call('DELETE', `/bead/${bead.id}/comments/${mine.id}`, undefined, bearer)).status).to.equal(403);
    expect((await api.del(`/bead/${bead.id}/comments/${mine.id}`)).status).to.equal(200);
    expectProblem(await api.del(`/bead/${bead.id}/comments/${mine.id}`), 404, 'bead-not-found');
    const [event] = await api.eventsAbout('bead.comment_deleted', bead.id);
    expect(event).to.deep.include({ actor: ME, payload: { comment: mine } });
    expect((await list(bead.id)).body.items.map((c) => c.id)).to.deep.equal([theirs.id]);
  });

  it('keeps comments across a kill -9 of the controller; a deleted bead takes its comments with it', async function () {
    const kept = await api.create({ title: 'kept' });
    const gone = await api.create({ title: 'gone' });
    const said = await comment(kept.id, 'remember this');
    await comment(gone.id, 'and forget this');
    expect((await api.del(`/bead/${gone.id}`)).status).to.equal(200);
    const before = (await sup.city('comment-city'))!.pid!;
    process.kill(before, 'SIGKILL');
    await waitUntil('the controller to be restarted', async () => {
      const city = await sup.city('comment-city');
      return city?.running && city.pid !== before ? city : undefined;
    });
    const after = await waitUntil('the comments to be served again', async () => {
      const reply = await api.get<ListBodyBeadComment>(`/bead/${kept.id}/comments`);
      return reply.status === 200 ? reply.body : undefined;
    });
    expect(after.items).to.deep.equal([said]);
    expectProblem(await api.get(`/bead/${gone.id}/comments`), 404, 'bead-not-found');
    // Ids never go back: the next comment's is larger than any before the restart.
    expect((await comment(kept.id, 'after')).id).to.be.above(said.id + 1);
  });

  it('ctl bead comment, comments and show (the latest three), with the CLI failure contract', async function () {
    const bead = await api.create({ title: 'from the terminal' });
    const ctl = (args: string[]) =>
      sup.ctl([...args, '--city', 'comment-city'], { env: { CTL_SESSION_ID: undefined } });
    const said = expectSuccess(await ctl(['bead', 'comment', bead.id, 'first\nsecond line']));
    expect(said).to.have.length(1);
    expect(said[0]).to.match(new RegExp(`^Commented on ${bead.id} \\(#\\d+, as ${ME}\\)$`));
    for (const i of [2, 3, 4]) expectSuccess(await ctl(['bead', 'comment', bead.id, `note ${i}`]));
    const all = JSON.parse(expectSuccess(await ctl(['bead', 'comments', bead.id, '--json']))[0]) as ListBodyBeadComment;
    expect(all.total).to.equal(4);
    expect(all.items.map((c) => c.text)).to.deep.equal(['first\nsecond line', 'note 2', 'note 3', 'note 4']);
    const two = expectSuccess(await ctl(['bead', 'comments', bead.id, '--limit', '2']));
    expect(two.filter((l) => l.startsWith('  '))).to.deep.equal(['  note 3', '  note 4']);
    const shown = expectSuccess(await ctl(['bead', 'show', bead.id]));
    const at = shown.indexOf(`Comments (4; 1 earlier: ctl bead comments ${bead.id}):`);
    expect(at, shown.join('\n')).to.be.above(0);
    expect(shown.slice(at + 1).filter((l) => l.startsWith('  '))).to.deep.equal(['  note 2', '  note 3', '  note 4']);
    const removed = expectSuccess(await ctl(['bead', 'comment', bead.id, '--delete', String(all.items[0].id)]));
    expect(removed).to.deep.equal([`Deleted comment ${all.items[0].id} of ${bead.id}`]);
    expectFailure(await ctl(['bead', 'comment', bead.id, '   ']), 'bead comment', /empty comment/);
    expectFailure(await ctl(['bead', 'comment', bead.id]), 'bead comment', /exactly one of TEXT and --delete/);
    expectFailure(await ctl(['bead', 'comment', 'cc-404', 'hi']), 'bead comment', /bead not found: cc-404/);
    expect(expectSuccess(await ctl(['bead', 'comments', (await api.create({ title: 'silent' })).id]))[0]).to.match(
      /^No comments on /,
    );
  });
});
