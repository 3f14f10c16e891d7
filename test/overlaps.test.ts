// Collisions seen before they happen: sessions of a pool with `isolation = "worktree"` over a real git repository
// (a rig), their programs (the echo example agent, whose `run` runs a shell command in its worktree) committing;
// what the rig's overlaps say at each turn end, through the API, the event log and `ctl rig overlaps`.
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { commitInSession, rigRepository, runInSession } from './helpers/rigs.js';
import { createSession, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Overlaps {
  rig: string;
  items: { parties: unknown[]; sessions: string[]; session_ids: string[]; files: string[] }[];
  sessions_checked: number;
  reviews_checked: number;
  total: number;
  next_cursor?: string;
  problems?: unknown[];
  computed_at: string;
}

/** A repository on `main` with two files and a committer of its own. */
const repository = (name: string) =>
  rigRepository({ README: 'hello\n', 'shared.txt': 'base\n' }, { prefix: 'ctl-overlap-rig-', name });

const CITY = (web: string, api: string, lib: string) => `
[[rigs]]
name = "lib"
path = "${lib}"

[[agent]]
name = "coder"
dir = "lib"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0

[[rigs]]
name = "web"
path = "${web}"

[[rigs]]
name = "api"
path = "${api}"

[[agent]]
name = "pool"
dir = "web"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0
max_active_sessions = 2

[[agent]]
name = "pool"
dir = "api"
provider = "echo"
isolation = "worktree"
min_active_sessions = 0
max_active_sessions = 2
`;

describe('overlapping worktrees of a rig', function () {
  this.timeout(90_000);
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('overlaps', CITY(repository('web'), repository('api'), repository('lib')));
  });
  after(async () => city?.sup.cleanup());

  const run = (id: string, command: string) => runInSession(city.api, id, command);
  const commitIn = (id: string, file: string, text: string) => commitInSession(city.api, id, file, `${text}\\n`);
  const nameOf = async (id: string) =>
    (await city.api.get<{ session_name: string }>(`/session/${id}`)).body.session_name;
  const overlaps = async (rig: string) => {
    const reply = await city.api.get<Overlaps>(`/rigs/${rig}/overlaps`);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body;
  };

  it('two sessions that commit the same file are an overlap at the turn’s end: listed, one rig.overlap, shown by ctl', async function () {
    const a = await createSession(city.api, { kind: 'agent', name: 'web/pool' });
    const b = await createSession(city.api, { kind: 'agent', name: 'web/pool' });
    const [nameA, nameB] = [await nameOf(a), await nameOf(b)];
    await commitIn(a, 'shared.txt', 'from a');
    await commitIn(b, 'shared.txt', 'from b');
    await commitIn(b, 'only-b.txt', 'b alone');
    // Heard at the turn's end, with nobody asking.
    const events = await waitUntil('a rig.overlap for web', async () => {
      const found = await city.api.eventsAbout('rig.overlap', 'web');
      return found.length ? found : undefined;
    });
    expect(events).to.have.length(1);
    expect(events[0].payload).to.deep.equal({
      rig: 'web',
      parties: [
        { kind: 'session', session: nameA, session_id: a },
        { kind: 'session', session: nameB, session_id: b },
      ],
      sessions: [nameA, nameB],
      session_ids: [a, b],
      files: ['shared.txt'],
    });
    const asked = Date.now();
    const read = await overlaps('web');
    expect(read.items).to.deep.equal([
      {
        parties: [
          { kind: 'session', session: nameA, session_id: a },
          { kind: 'session', session: nameB, session_id: b },
        ],
        sessions: [nameA, nameB],
        session_ids: [a, b],
        files: ['shared.txt'],
      },
    ]);
    expect(read).to.include({ sessions_checked: 2, reviews_checked: 0, total: 1 });
    expect(read).to.not.have.any.keys('problems', 'next_cursor');
    // Read for this request, not a read of an earlier turn end handed back.
    expect(Date.parse(read.computed_at)).to.be.at.least(asked);

    // More of the same pair (an uncommitted edit of b's file by a) widens it, and is no second event.
    await run(a, 'echo draft > only-b.txt');
    const wider = await overlaps('web');
    expect(wider.items[0].files).to.deep.equal(['only-b.txt', 'shared.txt']);
    expect(await city.api.eventsAbout('rig.overlap', 'web')).to.have.length(1);

    const shown = expectSuccess(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'web']));
    expect(shown.join('\n')).to.match(new RegExp(`${nameA} ↔ ${nameB}\\s+only-b\\.txt, shared\\.txt`));
    const json = JSON.parse(
      expectSuccess(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'web', '--json'])).join('\n'),
    ) as Overlaps;
    expect(json.items).to.deep.equal(wider.items);
  });

  it('sessions on different files overlap in nothing, and no event is recorded', async function () {
    const a = await createSession(city.api, { kind: 'agent', name: 'api/pool' });
    const b = await createSession(city.api, { kind: 'agent', name: 'api/pool' });
    await commitIn(a, 'one.txt', 'one');
    await commitIn(b, 'two.txt', 'two');
    await run(b, 'echo uncommitted > three.txt');
    // Read after the turn ends' own reads (one rig's reads run in order): any event they made is recorded by now.
    const read = await overlaps('api');
    expect(read.items).to.deep.equal([]);
    expect(read.sessions_checked).to.equal(2);
    expect(await city.api.eventsAbout('rig.overlap', 'api')).to.deep.equal([]);
    const shown = expectSuccess(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'api']));
    expect(shown).to.deep.equal(['No overlaps in rig api (2 worktrees read).']);
  });

  it('a pending review and a session working on its files are an overlap: on the rig, the review, the session, ctl', async function () {
    const a = await createSession(city.api, { kind: 'agent', name: 'lib/coder' });
    const b = await createSession(city.api, { kind: 'agent', name: 'lib/coder' });
    const [nameA, nameB] = [await nameOf(a), await nameOf(b)];
    await commitIn(b, 'shared.txt', 'b works on it');
    await commitIn(a, 'shared.txt', 'a finished it');
    // Two sessions at work on one file, first.
    await waitUntil('the sessions’ rig.overlap', async () =>
      (await city.api.eventsAbout('rig.overlap', 'lib')).length === 1 ? true : undefined,
    );
    const bead = (await city.api.create({ title: 'finish shared', metadata: { 'ctl.assigned_session': a } })).id;
    expect((await city.api.post(`/bead/${bead}/close`)).status).to.equal(200);

    // The close holds a's branch for review: a's work is now the review's side, and that pair begins with no turn.
    const reviewSide = { kind: 'review', session: nameA, session_id: a, bead };
    const sessionB = { kind: 'session', session: nameB, session_id: b };
    const events = await waitUntil('the review’s rig.overlap', async () => {
      const found = await city.api.eventsAbout('rig.overlap', 'lib');
      return found.length === 2 ? found : undefined;
    });
    expect(events.map((e) => e.payload)).to.deep.include({
      rig: 'lib',
      parties: [sessionB, reviewSide],
      sessions: [nameB, nameA],
      session_ids: [b, a],
      files: ['shared.txt'],
    });
    const read = await overlaps('lib');
    expect(read.items).to.deep.equal([
      { parties: [sessionB, reviewSide], sessions: [nameB, nameA], session_ids: [b, a], files: ['shared.txt'] },
    ]);
    expect(read).to.include({ sessions_checked: 2, reviews_checked: 1 });

    const review = await city.api.get<{ state: string; overlaps?: unknown[] }>(`/reviews/${bead}`);
    expect(review.body.state).to.equal('pending');
    expect(review.body.overlaps).to.deep.equal([{ party: sessionB, files: ['shared.txt'] }]);
    type Session = { worktree: { overlaps?: unknown[] } };
    expect((await city.api.get<Session>(`/session/${b}`)).body.worktree.overlaps).to.deep.equal([
      { party: reviewSide, files: ['shared.txt'] },
    ]);
    // a's own review is the same work as a: no overlap of its own.
    expect((await city.api.get<Session>(`/session/${a}`)).body.worktree.overlaps).to.deep.equal([]);

    const shown = expectSuccess(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'lib']));
    expect(shown.join('\n')).to.match(new RegExp(`${nameB} ↔ review of ${bead} \\(${nameA}\\)\\s+shared\\.txt`));

    // Merged, it waits no more: the pair ends, and the review shows no overlaps.
    expect((await city.api.post<{ state: string }>(`/reviews/${bead}/approve`)).body.state).to.equal('approved');
    await waitUntil(
      'the review to merge',
      async () => (await city.api.get<{ state: string }>(`/reviews/${bead}`)).body.state === 'merged',
    );
    expect((await overlaps('lib')).items).to.deep.equal([]);
    expect((await city.api.get<{ overlaps?: unknown[] }>(`/reviews/${bead}`)).body).to.not.have.property('overlaps');
  });

  it('an unknown rig is a 404 rig-not-found, and one stderr line from ctl', async function () {
    expectProblem(await city.api.get('/rigs/nope/overlaps'), 404, 'rig-not-found');
    expectProblem(await city.api.get('/rigs/web/overlaps?cursor=nonsense'), 400);
    expectProblem(await city.api.get('/rigs/web/overlaps?limit=1001'), 422);
    expectFailure(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'nope']), 'rig overlaps', /nope/);
  });
});
