import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Envelope } from './helpers/city-api.js';
import { isAlive } from './helpers/processes.js';
import {
  ECHO_AGENT,
  send,
  session,
  startSessionCity,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { SseStreamReader } from './helpers/sse.js';
import { waitUntil } from './helpers/wait.js';

const RATE_LIMITED_AGENT = join(import.meta.dirname, 'fixtures', 'rate-limited-agent.mjs');

const TICK_CITY = `
[daemon]
patrol_interval = "500ms"
restart_backoff = "150ms"
restart_window = "10s"
max_restarts = 3
check_timeout = "1s"

[providers.crashy]
command = "/bin/sh -c 'sleep 0.5; exit 3'"

[providers.moded]
command = "${ECHO_AGENT}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }
permission_modes = { careful = [], bold = [] }

[providers.rate-limited]
base = "builtin:claude"
command = "${process.execPath} ${RATE_LIMITED_AGENT}"

[[agent]]
name = "mayor"
provider = "echo"

[[agent]]
name = "pool"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 3
idle_timeout = "1s"

[[agent]]
name = "sleepy"
provider = "echo"
idle_timeout = "1s"

[[agent]]
name = "crasher"
provider = "crashy"

[[agent]]
name = "limited"
provider = "rate-limited"

[[agent]]
name = "slowscale"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 3
scale_check = "sleep 30; echo 3"

[[agent]]
name = "scaled"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 5
scale_check = "echo 2"

[[agent]]
name = "queried"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 3
work_query = "printf 'job-a\\njob-b\\n'; cat queried-work.txt 2>/dev/null || true"

[[agent]]
name = "held"
provider = "moded"

[[agent]]
name = "first"
provider = "slow-echo"

[[agent]]
name = "second"
provider = "echo"
depends_on = ["first"]
`;

interface SessionItem {
  id: string;
  template: string;
  state: string;
  running: boolean;
  pid?: number;
  session_name: string;
}

async function sessionsOf(city: SessionCity, agent: string): Promise<SessionItem[]> {
  const reply = await city.api.get<{ items: SessionItem[] }>(`/sessions?template=${agent}`);
  return reply.body.items;
}

async function running(city: SessionCity, agent: string): Promise<SessionItem[]> {
  return (await sessionsOf(city, agent)).filter((s) => s.running && s.state === 'active');
}

function about(events: Envelope[], id: string): Envelope[] {
  return events.filter((e) => e.payload.session_id === id);
}

/** Waits until the tick has run `n` more times (each run sees the city as it is now). */
async function afterTicks(city: SessionCity, n: number): Promise<void> {
  const runs = async () => (await city.api.get<{ tick?: { runs: number } }>('/status')).body.tick?.runs ?? 0;
  const from = await runs();
  await waitUntil(`${n} more ticks`, async () => (await runs()) >= from + n);
}

/** Gives the mayor agent `env = { EDITED = value }` in city.toml, whatever it had before: a drift of its configuration. */
function editMayor(city: SessionCity, value: string): void {
  const path = join(city.dir, 'city.toml');
  writeFileSync(
    path,
    readFileSync(path, 'utf8').replace(
      /name = "mayor"\nprovider = "echo"(\nenv = \{ EDITED = "[^"]*" \})?/,
      `name = "mayor"\nprovider = "echo"\nenv = { EDITED = "${value}" }`,
    ),
  );
}

describe("the controller's tick (real controller, real programs)", function () {
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('tick', TICK_CITY);
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('scales a pool up for routed ready work (to its max), hands each session a bead, then back down to none', async function () {
    const beads = [];
    for (let i = 0; i < 4; i++) beads.push(await city.api.create({ title: `job ${i}` }));
    for (const bead of beads)
      expect((await city.api.post('/sling', { target: 'pool', bead: bead.id })).status).to.equal(200);
    // Three sessions (its max), each holding one bead; the fourth waits.
    const held = await waitUntil('three beads in progress', async () => {
      const list = await city.api.list({ status: 'in_progress' });
      const mine = list.items.filter((b) => b.metadata?.['ctl.routed_to'] === 'pool');
      return mine.length === 3 ? mine : undefined;
    });
    expect(new Set(held.map((b) => b.assignee)).size).to.equal(3);
    expect(await running(city, 'pool')).to.have.length(3);
    const agent = await city.api.get<{ queued_work: number; state: string }>('/agent/pool');
    expect(agent.body).to.include({ queued_work: 1, state: 'working' });
    // Each session was told its bead (one line, naming it).
    const first = held[0];
    const holder = (await sessionsOf(city, 'pool')).find((s) => s.session_name === first.assignee)!;
    await waitForTurn(
      city.api,
      holder.id,
      'user',
      new RegExp(`^Work on bead ${first.id}: job \\d \\(details: ctl bead show`),
    );
    // Closing the work: the fourth bead goes to a session, then the pool shrinks to nothing.
    for (const bead of held) await city.api.close(bead.id);
    const last = beads.find((b) => !held.some((h) => h.id === b.id))!;
    await waitUntil('the fourth bead to be taken', async () => (await city.api.bead(last.id)).status === 'in_progress');
    await city.api.close(last.id);
    await waitUntil('the pool to close every session', async () => (await sessionsOf(city, 'pool')).length === 0);
    // A closed session leaves the list at once; its session.closed follows once its program has stopped.
    await waitUntil(
      'three session.closed of the pool',
      async () => (await city.api.events('session.closed')).filter((e) => e.payload.template === 'pool').length === 3,
    );
  });

  it('does not churn: with nothing to do, no session of a pool starts (ten ticks)', async function () {
    const created = async () =>
      (await city.api.events('session.created')).filter((e) => e.payload.template === 'pool').length;
    await waitUntil('the pool to have no session', async () => (await sessionsOf(city, 'pool')).length === 0);
    const before = await created();
    await afterTicks(city, 10);
    expect(await created()).to.equal(before);
    expect(await sessionsOf(city, 'pool')).to.have.length(0);
  });

  it('puts an idle session to sleep after idle_timeout, and wakes it for mail (telling it)', async function () {
    const [sleepy] = await waitUntil('sleepy to have a session', async () => {
      const s = await sessionsOf(city, 'sleepy');
      return s.length ? s : undefined;
    });
    await waitUntil('sleepy to sleep', async () => (await session(city.api, sleepy.id)).state === 'asleep');
    const stopped = await city.api.events('session.stopped');
    expect(about(stopped, sleepy.id).at(-1)?.payload.reason).to.match(
      /^idle for \d+ s: asleep until work or mail comes/,
    );
    const mail = await city.api.post<{ id: string }>('/mail', { to: 'sleepy', subject: 'wake up', body: 'please' });
    expect(mail.status).to.equal(201);
    await waitForTurn(city.api, sleepy.id, 'user', new RegExp(`^New mail: ${mail.body.id} from human: wake up`));
    expect(about(await city.api.events('session.woke'), sleepy.id).length).to.be.at.least(2);
  });

  it('a config edit mid-turn does not kill the session: it restarts once the turn is over', async function () {
    const [mayor] = await waitUntil('mayor to run', async () => {
      const s = await running(city, 'mayor');
      return s.length ? s : undefined;
    });
    await send(city.api, mayor.id, 'sleep 2');
    await waitUntil('mayor to be in its turn', async () => (await session(city.api, mayor.id)).activity === 'in-turn');
    editMayor(city, 'mid-turn');
    const pending = await waitUntil('session.restart_pending', async () =>
      about(await city.api.events('session.restart_pending'), mayor.id).find((e) =>
        /it is in a turn/.test(String(e.payload.reason)),
      ),
    );
    expect(pending.payload.reason).to.match(/restarts once idle \(it is in a turn\)/);
    expect((await city.api.get<{ restart_pending: boolean }>('/agent/mayor')).body.restart_pending).to.equal(true);
    // Still the same program, still in its turn.
    expect(isAlive(mayor.pid!)).to.equal(true);
    await waitForTurn(city.api, mayor.id, 'assistant', 'slept 2');
    const restarted = await waitUntil('a new program', async () => {
      const s = await session(city.api, mayor.id);
      return s.running && s.pid !== mayor.pid && s.state === 'active' ? s : undefined;
    });
    expect(isAlive(mayor.pid!)).to.equal(false);
    expect(restarted.activity).to.equal('idle');
    const stops = about(await city.api.events('session.stopped'), mayor.id);
    expect(stops.at(-1)?.payload.reason).to.equal('restarting: its agent configuration changed');
    // The stop came after the turn's reply.
    const conversation = await turns(city.api, mayor.id);
    expect(conversation.some((t) => t.text === 'slept 2')).to.equal(true);
  });

  it('a config edit while someone is attached waits for them to leave', async function () {
    const [mayor] = await waitUntil('mayor to run', async () => {
      const s = await running(city, 'mayor');
      return s.length ? s : undefined;
    });
    const stream = await SseStreamReader.open(city.api.url(`/session/${mayor.id}/stream`));
    expect(stream.response.status).to.equal(200);
    await waitUntil('attached', async () => (await session(city.api, mayor.id)).attached);
    editMayor(city, 'attached');
    await waitUntil('session.restart_pending (attached)', async () =>
      about(await city.api.events('session.restart_pending'), mayor.id).some((e) =>
        /someone is attached/.test(String(e.payload.reason)),
      ),
    );
    // The ticks after that leave it running.
    await afterTicks(city, 3);
    expect((await session(city.api, mayor.id)).pid).to.equal(mayor.pid);
    stream.close();
    await waitUntil('the restart once they left', async () => (await session(city.api, mayor.id)).pid !== mayor.pid);
  });

  it('reopens work held by a session that is gone (bead.dead_assignee_reopened) and hands it to another', async function () {
    const bead = await city.api.create({ title: 'survive me' });
    await city.api.post('/sling', { target: 'pool', bead: bead.id, no_convoy: true });
    const taken = await waitUntil('taken', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' ? b : undefined;
    });
    const holder = (await sessionsOf(city, 'pool')).find((s) => s.session_name === taken.assignee)!;
    expect((await city.api.post(`/session/${holder.id}/close`)).status).to.equal(200);
    const reopened = await waitUntil(
      'bead.dead_assignee_reopened',
      async () => (await city.api.eventsAbout('bead.dead_assignee_reopened', bead.id))[0],
    );
    expect(reopened.payload).to.deep.equal({ bead_id: bead.id, dead_assignee: taken.assignee, routed_to: 'pool' });
    const again = await waitUntil('taken by another session', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' && b.assignee !== taken.assignee ? b : undefined;
    });
    expect(again.metadata?.['ctl.routed_to']).to.equal('pool');
    await city.api.close(bead.id);
  });

  it('restarts a crashing session with back-off, then quarantines it; resume gives it another try', async function () {
    const quarantined = await waitUntil('session.quarantined', async () =>
      (await city.api.events('session.quarantined')).find((e) => e.payload.template === 'crasher'),
    );
    expect(quarantined.payload.reason).to.match(/failed 3 times in a row/);
    const id = String(quarantined.payload.session_id);
    const starts = about(await city.api.events('session.woke'), id).map((e) => Date.parse(e.ts));
    const crashes = about(await city.api.events('session.crashed'), id).map((e) => Date.parse(e.ts));
    expect(starts).to.have.length(3);
    expect(crashes).to.have.length(3);
    // Each restart came after the crash before it (how long it waited is the planner's and tracker's unit tests').
    expect(starts[1]).to.be.at.least(crashes[0]);
    expect(starts[2]).to.be.at.least(crashes[1]);
    const agent = await city.api.get<{ state: string; running: boolean }>('/agent/crasher');
    expect(agent.body).to.include({ state: 'quarantined', running: false });
    // Quarantined, nothing starts it again by itself.
    await afterTicks(city, 3);
    expect(about(await city.api.events('session.woke'), id)).to.have.length(3);
    await city.api.post('/agent/crasher/resume');
    await waitUntil('woken after resume', async () => about(await city.api.events('session.woke'), id).length > 3);
  });

  it('does not count a rate-limited provider as a crash: no quarantine, the turn failure recorded', async function () {
    const [limited] = await waitUntil('limited to have a session', async () => {
      const s = await running(city, 'limited');
      return s.length ? s : undefined;
    });
    // Each try: a message (which wakes it when it sleeps) fails its turn, and the program exits.
    for (let i = 0; i < 4; i++) {
      await send(city.api, limited.id, `try ${i}`);
      await waitUntil(
        'its turn to fail',
        async () => about(await city.api.events('session.turn_failed'), limited.id).length > i,
      );
      await waitUntil('its program to exit', async () => !(await session(city.api, limited.id)).running);
    }
    const waiting = await city.api.eventsAbout('agent.waiting', 'limited');
    expect(waiting.at(-1)?.payload.reason).to.match(/its provider is rate-limited; not counted as a failure/);
    const failures = about(await city.api.events('session.turn_failed'), limited.id);
    expect(failures.every((e) => e.payload.category === 'rate_limited')).to.equal(true);
    expect(about(await city.api.events('session.quarantined'), limited.id)).to.have.length(0);
    expect((await session(city.api, limited.id)).state).not.to.equal('quarantined');
  });

  it('never waits on a slow scale_check: it times out on its own while other work is routed at once', async function () {
    const failed = await waitUntil(
      'agent.check_failed',
      async () => (await city.api.eventsAbout('agent.check_failed', 'slowscale'))[0],
    );
    expect(failed.payload.reason).to.match(/scale_check timed out after 1000 ms/);
    // A quick scale_check is followed: two sessions.
    await waitUntil('scaled to run two sessions', async () => (await running(city, 'scaled')).length === 2);
    const bead = await city.api.create({ title: 'quick one' });
    await city.api.post('/sling', { target: 'pool', bead: bead.id, no_convoy: true });
    await waitUntil('taken', async () => (await city.api.bead(bead.id)).status === 'in_progress');
    await city.api.close(bead.id);
  });

  it('wakes a session it suspended with its agent once resumed, even after its permission mode changed', async function () {
    const [held] = await waitUntil('held to run', async () => {
      const s = await running(city, 'held');
      return s.length ? s : undefined;
    });
    expect((await city.api.post('/agent/held/suspend')).status).to.equal(200);
    await waitUntil('held to be suspended', async () => (await session(city.api, held.id)).state === 'suspended');
    // A person changes its permission mode meanwhile: the session's reason now says so.
    const moded = await city.api.post<{ reason?: string }>(`/session/${held.id}/permission-mode`, {
      permission_mode: 'bold',
    });
    expect(moded.status).to.equal(200);
    expect(moded.body.reason).to.match(/^permission mode bold/);
    expect((await city.api.post('/agent/held/resume')).status).to.equal(200);
    const bead = await city.api.create({ title: 'for held' });
    await city.api.post('/sling', { target: 'held', bead: bead.id, no_convoy: true });
    const taken = await waitUntil('the suspended session to wake and take the work', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' ? b : undefined;
    });
    expect(taken.assignee).to.equal(held.session_name);
    await city.api.close(bead.id);
  });

  it('starts agents in depends_on order, saying why one waits (agent.waiting)', async function () {
    const [first] = await waitUntil('first to run', async () => {
      const s = await running(city, 'first');
      return s.length ? s : undefined;
    });
    const [second] = await waitUntil('second to run', async () => {
      const s = await running(city, 'second');
      return s.length ? s : undefined;
    });
    const firstWoke = about(await city.api.events('session.woke'), first.id)[0];
    const secondCreated = about(await city.api.events('session.created'), second.id)[0];
    expect(secondCreated.seq).to.be.above(firstWoke.seq);
    const waiting = await city.api.eventsAbout('agent.waiting', 'second');
    expect(waiting[0]?.payload.reason).to.equal('waiting for first, which it depends on, to run');
  });

  it('follows work_query: each line it prints is work that wants a session; a line naming a bead hands it out', async function () {
    await waitUntil('queried to run two sessions', async () => (await running(city, 'queried')).length === 2);
    const agent = await city.api.get<{ pool?: string; session_count: number }>('/agent/queried');
    expect(agent.body).to.include({ pool: 'queried', session_count: 2 });
    // A bead nobody routed: the query naming it (with a word after its id, as `bd ready` prints) hands it out.
    const bead = await city.api.create({ title: 'found by the query' });
    writeFileSync(join(city.dir, 'queried-work.txt'), `${bead.id}  found by the query\n`);
    const taken = await waitUntil('the queried bead handed to a session', async () => {
      const b = await city.api.bead(bead.id);
      return b.status === 'in_progress' ? b : undefined;
    });
    const sessions = await running(city, 'queried');
    expect(sessions.map((s) => s.session_name)).to.include(taken.assignee);
    // Two lines of other work and one bead held: three sessions, and the held bead is not handed out again.
    await waitUntil('queried to run three sessions', async () => (await running(city, 'queried')).length === 3);
    expect((await city.api.bead(bead.id)).assignee).to.equal(taken.assignee);
    await city.api.close(bead.id);
  });
});
