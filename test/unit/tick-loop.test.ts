import { EventEmitter } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Logger } from 'pino';
import { DEFAULT_DAEMON } from '../../shared/config/city-config-types.js';
import { EventLog } from '../../shared/events/event-log.js';
import { BeadsService } from '../../controller/beads/beads-service.js';
import { ConvoysService } from '../../controller/beads/convoys.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import type { BeadStore } from '../../controller/beads/bead-store.js';
import { sling, type SlingHost } from '../../controller/agents/sling.js';
import { AgentTick } from '../../controller/agents/tick.js';
import { WorkHolding } from '../../controller/agents/work-holding.js';
import { HELD_BEAD_FILE } from '../../controller/sessions/session-environment.js';
import type { Session } from '../../controller/sessions/session.js';
import type { SessionService } from '../../controller/sessions/session-service.js';
import { tempDir } from '../helpers/supervisor.js';
import { agentFacts } from './tick-fixtures.js';

// The tick loop in process: a real bead store and event log, one idle session of one agent (its program a
// stand-in that takes what it is told), and `sling`. What it counts: tick passes and reads of the store's work.

/** An idle, running session of `agent` that keeps what it is told. */
function idleSession(dir: string, agent: string): Session & { told: string[] } {
  const told: string[] = [];
  const session = Object.assign(new EventEmitter(), {
    id: 's-1',
    dir,
    told,
    record: {
      id: 's-1',
      session_name: `${agent}-s-1`,
      template: agent,
      kind: 'agent',
      managed: 'tick',
      state: 'active',
      created_at: new Date().toISOString(),
      config_hash: 'fp1',
    },
    state: 'active',
    running: true,
    changing: false,
    idle: true,
    inTurn: false,
    isReady: true,
    attached: false,
    idleSince: Date.now(),
    readySince: Date.now(),
    enqueue(text: string) {
      told.push(text);
      return `m-${told.length}`;
    },
  });
  return session as unknown as Session & { told: string[] };
}

/** Counts the board's reads of the store: each refresh lists the beads in progress once. */
function countingReads(store: BeadStore): { reads: () => number } {
  let reads = 0;
  const list = store.list.bind(store);
  store.list = (query) => {
    if (query.status === 'in_progress' && query.metadata === undefined) reads++;
    return list(query);
  };
  return { reads: () => reads };
}

const quiet = { warn() {}, error() {}, info() {}, debug() {} } as unknown as Logger;

describe('the tick loop (AgentTick, in process)', () => {
  let dir: string;
  let store: JournalBeadStore;
  let tick: AgentTick;

  beforeEach(() => {
    dir = tempDir('tick-loop-');
  });
  afterEach(() => {
    tick?.stop();
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Resolves once the tick has had nothing left to do for a few turns of the event loop. */
  async function settled(): Promise<void> {
    let runs = -1;
    while (runs !== tick.stats().runs) {
      runs = tick.stats().runs;
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('a sling of one bead reaches an idle session in one pass, and its own write is not read back', async () => {
    store = JournalBeadStore.open(dir, 'tl');
    const log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    const beads = new BeadsService(store, log);
    const convoys = new ConvoysService(beads);
    const holding = new WorkHolding(beads, quiet);
    const agent = agentFacts('worker').agent;
    const session = idleSession(dir, 'worker');
    const sessions = {
      all: () => [session][Symbol.iterator](),
      onOpened: () => () => {},
      openById: (id: string) => (id === session.id ? session : undefined),
      agentSessions: () => [session],
    } as unknown as SessionService;
    tick = new AgentTick({
      cityName: 'c',
      cityRoot: dir,
      log,
      beads,
      sessions,
      holding,
      logger: quiet,
      agents: () => [agent],
      daemon: () => ({ ...DEFAULT_DAEMON, patrolIntervalMs: 3_600_000 }),
      suspension: () => ({ city: false, rigs: new Set<string>() }),
      env: {},
    });
    tick.start();
    await settled();
    const { bead } = await beads.create({ title: 'the job', type: 'task' });
    await settled();
    const reads = countingReads(store);
    const runsBefore = tick.stats().runs;

    const city = {
      agent: (name: string) => (name === 'worker' ? agent : undefined),
      config: { workspace: { suspended: false }, rigs: [] },
      openSession: () => undefined,
      beads,
      holding,
      convoys,
      tick,
    } as unknown as SlingHost;
    await sling(city, { target: 'worker', bead: bead.id });
    await settled();

    expect(tick.activeBead(session)?.id).to.equal(bead.id);
    expect(session.told).to.have.length(1);
    expect(readFileSync(join(dir, HELD_BEAD_FILE), 'utf8')).to.equal(bead.id);
    const passes = tick.stats().runs - runsBefore;
    expect({ passes, reads: reads.reads() }).to.deep.equal({ passes: 1, reads: 1 });

    // What someone else does is still news: the bead closed by its session is read, and its file names nothing.
    await beads.close(bead.id, { reason: 'done' });
    await settled();
    expect(reads.reads()).to.equal(2);
    expect(tick.activeBead(session)).to.equal(undefined);
    expect(readFileSync(join(dir, HELD_BEAD_FILE), 'utf8')).to.equal('');
  });
});
