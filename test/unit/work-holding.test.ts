import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Logger } from 'pino';
import { EventLog } from '../../shared/events/event-log.js';
import { BeadsService } from '../../controller/beads/beads-service.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { WorkBoard } from '../../controller/agents/work-board.js';
import { ASSIGNED_SESSION, MERGE_STRATEGY, ROUTED_TO } from '../../controller/beads/work-schema.js';
import { WorkHolding } from '../../controller/agents/work-holding.js';
import { HELD_BEAD_FILE } from '../../controller/sessions/session-environment.js';
import type { EnqueueOptions, Session } from '../../controller/sessions/session.js';
import type { Bead } from '../../shared/dto/beads.js';
import { tempDir } from '../helpers/supervisor.js';

interface Told {
  text: string;
  options: EnqueueOptions;
}

/** A session that keeps what it is told, its directory in `root`. */
function sessionIn(root: string, id: string): Session & { told: Told[] } {
  const dir = join(root, id);
  mkdirSync(dir, { recursive: true });
  const told: Told[] = [];
  return {
    id,
    dir,
    told,
    record: { id, session_name: `worker-${id}` },
    enqueue: (text: string, _intent: string, options: EnqueueOptions = {}) => {
      told.push({ text, options });
      return `m-${told.length}`;
    },
  } as unknown as Session & { told: Told[] };
}

const warnings: string[] = [];
const logger = { warn: (_f: unknown, message: string) => warnings.push(message) } as unknown as Logger;
const fileOf = (session: Session) => readFileSync(join(session.dir, HELD_BEAD_FILE), 'utf8');

describe('holding work (WorkHolding)', () => {
  let dir: string;
  let store: JournalBeadStore;
  let beads: BeadsService;
  let holding: WorkHolding;

  beforeEach(() => {
    dir = tempDir('work-holding-');
    store = JournalBeadStore.open(dir, 'wh');
    beads = new BeadsService(store, EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock')));
    holding = new WorkHolding(beads, logger);
    warnings.length = 0;
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands a bead over: taken by the session, its file naming it, then the work line told', async () => {
    const { bead } = await beads.create({ title: 'fix  the\nbuild', type: 'task' });
    const session = sessionIn(dir, 's-1');
    let fileWhenTold: string | undefined;
    const enqueue = session.enqueue.bind(session);
    session.enqueue = (text, intent, options) => ((fileWhenTold = fileOf(session)), enqueue(text, intent, options));

    const taken = await holding.hold(session, bead, { nudge: 'Go.', routedTo: 'worker', merge: 'direct' });

    expect(store.get(bead.id)).to.deep.include({ status: 'in_progress', assignee: 'worker-s-1' });
    expect(store.get(bead.id)!.metadata).to.deep.include({
      [ASSIGNED_SESSION]: 's-1',
      [ROUTED_TO]: 'worker',
      [MERGE_STRATEGY]: 'direct',
    });
    expect(taken.status).to.equal('in_progress');
    expect(fileWhenTold).to.equal(bead.id);
    expect(session.told).to.have.length(1);
    expect(session.told[0].text).to.match(new RegExp(`^Work on bead ${bead.id}: fix the build \\(details: `));
    expect(session.told[0].text).to.match(/ Go\.$/);
    expect(session.told[0].options).to.deep.equal({});
  });

  it('wakes a sleeping session for the work only when asked (sling), not for the tick', async () => {
    const { bead } = await beads.create({ title: 'job', type: 'task' });
    const session = sessionIn(dir, 's-1');
    await holding.hold(session, bead, { wake: `slung ${bead.id}` });
    expect(session.told[0].options).to.deep.equal({ wake: `slung ${bead.id}` });
  });

  it('applies a hand-over and a release to the board it is given, and the release reopens the bead', async () => {
    const { bead } = await beads.create({ title: 'job', type: 'task', metadata: { [ROUTED_TO]: 'worker' } });
    const board = new WorkBoard(beads);
    board.refresh(['worker']);
    const session = sessionIn(dir, 's-1');
    board.taken('worker', bead.id); // as the tick does, before the hand-over
    const taken = await holding.hold(session, bead, { board });
    expect(board.heldBy('s-1').map((b) => b.id)).to.deep.equal([bead.id]);

    await holding.release(taken, 's-1', board);
    expect(store.get(bead.id)!.status).to.equal('open');
    expect(store.get(bead.id)!.assignee ?? '').to.equal('');
    expect(store.get(bead.id)!.metadata?.[ASSIGNED_SESSION] ?? '').to.equal('');
    expect(store.get(bead.id)!.metadata?.[ROUTED_TO]).to.equal('worker');
    expect(board.heldBy('s-1')).to.deep.equal([]);
    expect(board.routedReady('worker').map((b) => b.id)).to.deep.equal([bead.id]);
  });

  it("a session's start finds the bead it holds in the store and writes its file (none: empty)", async () => {
    const { bead } = await beads.create({ title: 'job', type: 'task' });
    const holder = sessionIn(dir, 's-1');
    const idle = sessionIn(dir, 's-2');
    await beads.update(bead.id, { status: 'in_progress', metadata: { [ASSIGNED_SESSION]: 's-1' } });
    expect(holding.atStart(holder)).to.equal(bead.id);
    expect(fileOf(holder)).to.equal(bead.id);
    expect(holding.atStart(idle)).to.equal(undefined);
    expect(fileOf(idle)).to.equal('');
  });

  it('syncs files to what sessions hold, writing only the ones that change, and logs a file it cannot write', async () => {
    const one = sessionIn(dir, 's-1');
    const two = sessionIn(dir, 's-2');
    const held = new Map<string, string>([['s-1', 'wh-1']]);
    holding.syncFiles([one, two], (id) => held.get(id));
    expect([fileOf(one), fileOf(two)]).to.deep.equal(['wh-1', '']);

    // Unchanged: not written again (a file changed behind its back stays as it is).
    rmSync(join(two.dir, HELD_BEAD_FILE));
    holding.syncFiles([one, two], (id) => held.get(id));
    expect(() => fileOf(two)).to.throw(/ENOENT/);

    held.delete('s-1');
    holding.syncFiles([one, two], (id) => held.get(id));
    expect(fileOf(one)).to.equal('');

    const gone = { id: 's-3', dir: join(dir, 'no', 'such') };
    holding.syncFiles([gone], () => 'wh-1');
    expect(warnings).to.deep.equal(['could not record the bead a session holds']);
  });

  it("the board takes the event of its own write as no news, and anyone else's as news", async () => {
    const { bead } = await beads.create({ title: 'job', type: 'task', metadata: { [ROUTED_TO]: 'worker' } });
    const board = new WorkBoard(beads);
    const event = (type: string, b: Bead) => ({ seq: 1, ts: '', actor: 'ctl', type, payload: { bead: b } });
    const session = sessionIn(dir, 's-1');
    const news: boolean[] = [];
    const log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    const stop = log.onAppend((records) => news.push(...records.map((r) => board.heard(r))));
    await holding.hold(session, bead, { board });
    await beads.update(bead.id, { title: 'job, renamed' });
    stop();
    expect(news).to.deep.equal([false, true]);

    // Someone else's write before the echo: news; the echo after it still matches only what the tick wrote.
    const held = store.get(bead.id)!;
    board.writing(bead.id, '');
    expect(board.heard(event('bead.updated', held))).to.equal(true);
    expect(board.heard(event('bead.updated', { ...held, metadata: { [ASSIGNED_SESSION]: '' } }))).to.equal(false);
    // A write that failed leaves nothing to match, and the board reads again.
    board.writing(bead.id, 's-1');
    board.notWritten(bead.id, 's-1');
    expect(board.heard(event('bead.updated', held))).to.equal(true);
    expect(board.heard({ seq: 2, ts: '', actor: 'ctl', type: 'bead.dead_assignee_reopened', payload: {} })).to.equal(
      false,
    );
    // A convoy made (sling makes one each time) changes no work; one made routed somewhere is news.
    const convoy = { ...held, id: 'wh-9', issue_type: 'convoy', metadata: {} };
    expect(board.heard(event('bead.created', convoy))).to.equal(false);
    expect(board.heard(event('bead.created', { ...convoy, metadata: { [ROUTED_TO]: 'worker' } }))).to.equal(true);
  });
});
