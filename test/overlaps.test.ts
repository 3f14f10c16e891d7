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
  total: number;
  next_cursor?: string;
  problems?: unknown[];
  computed_at: string;
}

/** A repository on `main` with two files and a committer of its own. */
const repository = (name: string) =>
  rigRepository({ README: 'hello\n', 'shared.txt': 'base\n' }, { prefix: 'ctl-overlap-rig-', name });

const CITY = (web: string, api: string) => `
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
    city = await startSessionCity('overlaps', CITY(repository('web'), repository('api')));
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
    expect(read).to.include({ sessions_checked: 2, total: 1 });
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

  it('an unknown rig is a 404 rig-not-found, and one stderr line from ctl', async function () {
    expectProblem(await city.api.get('/rigs/nope/overlaps'), 404, 'rig-not-found');
    expectProblem(await city.api.get('/rigs/web/overlaps?cursor=nonsense'), 400);
    expectProblem(await city.api.get('/rigs/web/overlaps?limit=1001'), 422);
    expectFailure(await city.sup.ctl(['--city', 'overlaps', 'rig', 'overlaps', 'nope']), 'rig overlaps', /nope/);
  });
});
