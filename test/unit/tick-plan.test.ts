import { expect } from 'chai';
import { actionsOf, agentFacts, planAt, sessionFacts } from './tick-fixtures.js';
import type { CityAgentConfig } from '../../shared/config/city-config.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import {
  emptyMemory,
  type AgentFacts,
  type CrashFacts,
  type SessionFacts,
  type TickInput,
  type TickPlan,
} from '../../controller/agents/tick-facts.js';
import { POOL_IDLE_CLOSE_MS } from '../../controller/agents/tick-plan.js';
import { ASSIGNED_SESSION, ROUTED_TO } from '../../controller/beads/work-schema.js';

const NOW = Date.parse('2026-11-25T12:00:00Z');

function agent(name: string, over: Partial<AgentDefinition> = {}, config: Partial<CityAgentConfig> = {}): AgentFacts {
  return agentFacts(name, config, over);
}

function pool(name: string, min: number, max: number, config: Partial<CityAgentConfig> = {}): AgentFacts {
  return agent(name, { min, max, isPool: true }, config);
}

function session(template: string, over: Partial<SessionFacts> = {}): SessionFacts {
  return sessionFacts(NOW, template, over);
}

/** Dormant: asleep, no program. */
function asleep(template: string, over: Partial<SessionFacts> = {}): SessionFacts {
  return session(template, { state: 'asleep', running: false, idle: false, ready: false, ...over });
}

function bead(id: string, routedTo: string, over: Partial<Bead> = {}): Bead {
  return {
    id,
    title: `job ${id}`,
    status: 'open',
    metadata: { [ROUTED_TO]: routedTo },
    ...over,
  } as Bead;
}

function plan(input: Partial<TickInput>): TickPlan {
  return planAt(NOW, input);
}

function kinds(p: TickPlan): string[] {
  return p.actions.map((a) => a.kind);
}

const of = actionsOf;

describe('the tick planner (planTick)', () => {
  describe('pool scaling', () => {
    it('starts a session per routed ready bead, up to max_active_sessions', () => {
      const routed = new Map([
        ['pool', [bead('b1', 'pool'), bead('b2', 'pool'), bead('b3', 'pool'), bead('b4', 'pool')]],
      ]);
      const p = plan({ agents: [pool('pool', 0, 3)], routed });
      expect(of(p, 'start').map((a) => a.reason)).to.deep.equal(Array(3).fill('work is routed to it'));
      expect(p.started).to.equal(3);
      expect(p.deferred).to.equal(0);
    });

    it('with nothing to do and min 0, starts nothing and stops nothing', () => {
      const p = plan({ agents: [pool('pool', 0, 3)] });
      expect(p.actions).to.deep.equal([]);
    });

    it('follows scale_check within min and max', () => {
      const scaled = { ...pool('scaled', 1, 5), scale: 2 };
      expect(of(plan({ agents: [scaled] }), 'start').map((a) => a.reason)).to.deep.equal([
        'scale_check asks for it',
        'scale_check asks for it',
      ]);
      const capped = { ...pool('capped', 0, 3), scale: 9 };
      expect(plan({ agents: [capped] }).started).to.equal(3);
      const floor = { ...pool('floor', 2, 5), scale: 0 };
      expect(of(plan({ agents: [floor] }), 'start').map((a) => a.reason)).to.deep.equal([
        'min_active_sessions',
        'min_active_sessions',
      ]);
    });

    it('counts each work_query line as work that wants a session', () => {
      const queried = { ...pool('queried', 0, 3), queryLines: 2 };
      expect(plan({ agents: [queried] }).started).to.equal(2);
    });

    it('counts beads its sessions hold as wanted: a holder is not closed as excess', () => {
      const holder = session('pool', { idleSince: NOW - 2 * POOL_IDLE_CLOSE_MS });
      const held = new Map([[holder.id, [bead('b1', 'pool', { metadata: { [ASSIGNED_SESSION]: holder.id } })]]]);
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [holder], held });
      expect(p.actions).to.deep.equal([]);
    });

    it('closes excess pool sessions once idle past idle_timeout (or a minute), dormant ones at once', () => {
      const idleLong = session('pool', { idleSince: NOW - POOL_IDLE_CLOSE_MS });
      const idleShort = session('pool', { idleSince: NOW - 10_000 });
      const dormant = asleep('pool');
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [idleLong, idleShort, dormant] });
      expect(of(p, 'close')).to.deep.equal([
        { kind: 'close', sessionId: idleLong.id, note: 'no work needs it: its pool shrinks' },
        { kind: 'close', sessionId: dormant.id, note: 'no work needs it: its pool shrinks' },
      ]);
      expect(p.retickInMs).to.equal(POOL_IDLE_CLOSE_MS - 10_000);
    });

    it('hands each idle session of the agent the next routed bead, oldest session first', () => {
      const a = session('pool');
      const b = session('pool');
      const busy = session('pool', { idle: false, inTurn: true });
      const routed = new Map([['pool', [bead('b1', 'pool'), bead('b2', 'pool'), bead('b3', 'pool')]]]);
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [a, b, busy], routed });
      expect(of(p, 'assign').map((x) => [x.sessionId, x.bead.id])).to.deep.equal([
        [a.id, 'b1'],
        [b.id, 'b2'],
      ]);
      expect(p.started).to.equal(0);
    });
  });

  describe('sessions a person started (not managed by the tick)', () => {
    it('are never closed as excess, and count toward what is kept open', () => {
      const named = session('pool', { managed: undefined, idleSince: NOW - 2 * POOL_IDLE_CLOSE_MS });
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [named] });
      expect(p.actions).to.deep.equal([]);
      expect(
        plan({ agents: [pool('one', 1, 1)], sessions: [session('one', { managed: undefined })] }).actions,
      ).to.deep.equal([]);
    });

    it('a session suspended by a person is not woken; one the tick suspended with its agent is', () => {
      const byPerson = session('mayor', { state: 'suspended', running: false, idle: false, ready: false });
      expect(plan({ agents: [agent('mayor')], sessions: [byPerson] }).actions).to.deep.equal([]);
      const byTick = { ...byPerson, id: 'other', suspendedByTick: true };
      expect(of(plan({ agents: [agent('mayor')], sessions: [byTick] }), 'wake')).to.deep.equal([
        { kind: 'wake', sessionId: 'other', reason: 'woken: min_active_sessions' },
      ]);
    });
  });

  describe('bounded starts in depends_on order', () => {
    it('starts at most max_wakes_per_tick, deferring the rest', () => {
      const p = plan({ agents: [pool('pool', 3, 3), agent('mayor')], maxWakesPerTick: 2 });
      expect(p.started).to.equal(2);
      expect(p.deferred).to.equal(2);
    });

    it('plans an agent after those it depends on, and it waits until they run', () => {
      const second = agent('second', {}, { depends_on: ['first'] });
      const p = plan({ agents: [second, agent('first')] });
      expect(of(p, 'start').map((a) => a.agent.name)).to.deep.equal(['first']);
      expect(of(p, 'wait')).to.deep.equal([
        { kind: 'wait', agent: 'second', reason: 'waiting for first, which it depends on, to run' },
      ]);
      expect(p.waits.get('second')).to.equal('waiting for first, which it depends on, to run');
      // Once first is ready, second starts, and its wait is over.
      const after = plan({ agents: [second, agent('first')], sessions: [session('first')], memory: p.memory });
      expect(of(after, 'start').map((a) => a.agent.name)).to.deep.equal(['second']);
      expect(after.waits.get('second')).to.equal(undefined);
    });

    it('the budget goes to agents in dependency order', () => {
      const p = plan({ agents: [agent('b', {}, { depends_on: ['a'] }), agent('a'), agent('c')], maxWakesPerTick: 1 });
      expect(of(p, 'start').map((a) => a.agent.name)).to.deep.equal(['a']);
      expect(p.deferred).to.equal(1); // c (b waits for a)
    });
  });

  describe('suspension: drain before stop', () => {
    it('a busy session drains first, and is suspended (marked as the tick’s) once its turn is over', () => {
      const busy = session('mayor', { idle: false, inTurn: true });
      const suspended = { ...agent('mayor'), suspended: 'agent mayor is suspended' };
      const p = plan({ agents: [suspended], sessions: [busy] });
      expect(p.actions).to.deep.equal([
        {
          kind: 'drain',
          sessionId: busy.id,
          transition: true,
          reason: 'agent mayor is suspended; its turn finishes first',
        },
      ]);
      expect(p.memory.draining.get(busy.id)).to.equal('suspend');
      // Still in its turn: nothing more.
      const during = plan({ agents: [suspended], sessions: [{ ...busy, state: 'draining' }], memory: p.memory });
      expect(during.actions).to.deep.equal([]);
      const done = plan({
        agents: [suspended],
        sessions: [{ ...busy, state: 'draining', inTurn: false, idle: true }],
        memory: p.memory,
      });
      expect(done.actions).to.deep.equal([
        { kind: 'suspend', sessionId: busy.id, reason: 'suspended with its agent: its turn finished' },
      ]);
      expect(done.memory.draining.size).to.equal(0);
    });

    it('an idle session is suspended at once; nothing starts for a suspended agent', () => {
      const idle = session('mayor');
      const p = plan({ agents: [{ ...pool('mayor', 2, 2), suspended: 'the city is suspended' }], sessions: [idle] });
      expect(p.actions).to.deep.equal([
        { kind: 'suspend', sessionId: idle.id, reason: 'suspended with its agent: the city is suspended' },
      ]);
      expect(p.stopped).to.equal(1);
    });

    it('sessions of an agent no longer configured drain, then close', () => {
      const busy = session('gone', { idle: false, inTurn: true });
      const idle = session('gone');
      const p = plan({ sessions: [busy, idle] });
      expect(p.actions).to.deep.equal([
        { kind: 'drain', sessionId: busy.id, transition: true, reason: 'agent gone is no longer configured' },
        { kind: 'close', sessionId: idle.id },
      ]);
      const done = plan({ sessions: [{ ...busy, state: 'draining', inTurn: false }], memory: p.memory });
      expect(done.actions).to.deep.equal([{ kind: 'close', sessionId: busy.id }]);
    });
  });

  describe('configuration drift', () => {
    const changed = agent('mayor', { fingerprint: 'fp2' });
    const changes = { config_hash: 'fp2', provider: 'echo', work_dir: '/city/mayor' };

    it('restarts an idle session nobody is attached to at once', () => {
      const idle = session('mayor');
      expect(plan({ agents: [changed], sessions: [idle] }).actions).to.deep.equal([
        { kind: 'restart', sessionId: idle.id, reason: 'restarting: its agent configuration changed', changes },
      ]);
    });

    it('waits for a turn to end, or for whoever is attached to leave, saying so once', () => {
      const inTurn = session('mayor', { idle: false, inTurn: true });
      const p = plan({ agents: [changed], sessions: [inTurn] });
      expect(p.actions).to.deep.equal([
        {
          kind: 'restart-pending',
          sessionId: inTurn.id,
          reason: 'its agent configuration changed; it restarts once idle (it is in a turn)',
        },
      ]);
      expect(p.memory.restartPending.has(inTurn.id)).to.equal(true);
      expect(plan({ agents: [changed], sessions: [inTurn], memory: p.memory }).actions).to.deep.equal([]);
      const attached = session('mayor', { attached: true });
      expect(of(plan({ agents: [changed], sessions: [attached] }), 'restart-pending')[0].reason).to.match(
        /\(someone is attached\)$/,
      );
      // Idle and alone at last: it restarts, and is no longer pending.
      const after = plan({ agents: [changed], sessions: [{ ...inTurn, idle: true, inTurn: false }], memory: p.memory });
      expect(kinds(after)).to.deep.equal(['restart']);
      expect(after.memory.restartPending.size).to.equal(0);
    });

    it('a dormant session only takes the new configuration for its next start', () => {
      const dormant = asleep('mayor', { suspendedByTick: false, state: 'suspended' });
      expect(plan({ agents: [changed], sessions: [dormant] }).actions).to.deep.equal([
        { kind: 'reconfigure', sessionId: dormant.id, changes },
      ]);
    });

    it('a session being restarted is left alone', () => {
      const restarting = asleep('mayor', { changing: true, configHash: 'fp0' });
      expect(plan({ agents: [changed], sessions: [restarting] }).actions).to.deep.equal([]);
    });
  });

  describe('idle sleep, and waking for work or mail', () => {
    const sleepy = agent('sleepy', {}, { idle_timeout_ms: 1000 });

    it('puts a session idle past idle_timeout to sleep, and asks for a tick when one will be', () => {
      const idle = session('sleepy', { idleSince: NOW - 1500 });
      const p = plan({ agents: [sleepy], sessions: [idle] });
      expect(p.actions).to.deep.equal([
        { kind: 'sleep', sessionId: idle.id, reason: 'idle for 2 s: asleep until work or mail comes' },
      ]);
      expect(p.memory.sleptIdle.has(idle.id)).to.equal(true);
      const soon = plan({ agents: [sleepy], sessions: [session('sleepy', { idleSince: NOW - 400 })] });
      expect(soon.actions).to.deep.equal([]);
      expect(soon.retickInMs).to.equal(600);
    });

    it('does not sleep a session someone is attached to', () => {
      const watched = session('sleepy', { idleSince: NOW - 5000, attached: true });
      expect(plan({ agents: [sleepy], sessions: [watched] }).actions).to.deep.equal([]);
    });

    it('a session asleep for idleness stays asleep (min_active_sessions does not wake it) until work or mail', () => {
      const slept = asleep('sleepy');
      const memory = emptyMemory();
      memory.sleptIdle.add(slept.id);
      expect(plan({ agents: [sleepy], sessions: [slept], memory }).actions).to.deep.equal([]);
      const work = plan({
        agents: [sleepy],
        sessions: [slept],
        memory,
        routed: new Map([['sleepy', [bead('b1', 'sleepy')]]]),
      });
      expect(work.actions).to.deep.equal([
        { kind: 'wake', sessionId: slept.id, reason: 'woken: work is routed to its agent' },
      ]);
      expect(work.memory.sleptIdle.has(slept.id)).to.equal(false);
      const mail = plan({ agents: [sleepy], sessions: [slept], memory, mail: new Map([['sleepy', 1]]) });
      expect(mail.actions).to.deep.equal([{ kind: 'wake', sessionId: slept.id, reason: 'woken: mail for its agent' }]);
    });

    it('tells mail to the first idle session (which is then not put to sleep)', () => {
      const idle = session('sleepy', { idleSince: NOW - 5000 });
      const p = plan({ agents: [sleepy], sessions: [idle], mail: new Map([['sleepy', 2]]) });
      expect(p.actions).to.deep.equal([{ kind: 'tell-mail', sessionId: idle.id, agent: 'sleepy' }]);
    });
  });

  it('tells mail to an idle session other than the one just handed work', () => {
    const first = session('pool');
    const second = session('pool');
    const p = plan({
      agents: [pool('pool', 0, 3)],
      sessions: [first, second],
      routed: new Map([['pool', [bead('b1', 'pool')]]]),
      mail: new Map([['pool', 1]]),
    });
    expect(p.actions.map((a) => [a.kind, 'sessionId' in a ? a.sessionId : ''])).to.deep.equal([
      ['assign', first.id],
      ['tell-mail', second.id],
    ]);
  });

  describe('work held by a session that is gone', () => {
    it('is reopened, still routed, and handed to another idle session in the same tick', () => {
      const other = session('pool');
      const held = bead('b1', 'pool', {
        status: 'in_progress',
        assignee: 'pool-gone',
        metadata: { [ROUTED_TO]: 'pool', [ASSIGNED_SESSION]: 'gone' },
      });
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [other], held: new Map([['gone', [held]]]) });
      expect(p.actions).to.deep.equal([
        {
          kind: 'reopen',
          bead: held,
          sessionId: 'gone',
          message: 'pool-gone is gone; the bead is open again for pool',
        },
        { kind: 'assign', sessionId: other.id, agent: 'pool', bead: held },
      ]);
    });

    it('a crashed (asleep) holder counts as gone; a starting one does not', () => {
      const crashed = asleep('pool');
      const starting = session('pool', { state: 'creating', running: true, idle: false, ready: false });
      const held = new Map([
        [crashed.id, [bead('b1', 'pool', { metadata: { [ROUTED_TO]: 'pool', [ASSIGNED_SESSION]: crashed.id } })]],
        [starting.id, [bead('b2', 'pool', { metadata: { [ROUTED_TO]: 'pool', [ASSIGNED_SESSION]: starting.id } })]],
      ]);
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [crashed, starting], held });
      expect(of(p, 'reopen').map((a) => a.bead.id)).to.deep.equal(['b1']);
    });
  });

  describe('work held by a session lost with its host', () => {
    const lostHolder = (until: number) =>
      session('pool', { state: 'lost', running: false, idle: false, ready: false, host: 'far', lostUntil: until });
    const heldBy = (holder: SessionFacts) =>
      new Map([
        [holder.id, [bead('b1', 'pool', { metadata: { [ROUTED_TO]: 'pool', [ASSIGNED_SESSION]: holder.id } })]],
      ]);

    it('stays held until the host’s fence has passed, with a tick asked for then', () => {
      const lost = lostHolder(NOW + 4000);
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [lost], held: heldBy(lost) });
      expect(of(p, 'reopen')).to.deep.equal([]);
      expect(p.retickInMs).to.be.at.most(4000);
    });

    it('goes back to the pool once the fence has passed, saying the holder was lost with its host', () => {
      const lost = lostHolder(NOW - 1);
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [lost], held: heldBy(lost) });
      expect(of(p, 'reopen').map((a) => [a.bead.id, a.message])).to.deep.equal([
        ['b1', `${lost.id} was lost with its host; the bead is open again for pool`],
      ]);
    });

    it('is never woken by the tick, and its pool goes on without it: a new session takes its place', () => {
      const lost = lostHolder(NOW - 1);
      const p = plan({ agents: [pool('pool', 1, 1)], sessions: [lost] });
      expect(of(p, 'wake')).to.deep.equal([]);
      expect(of(p, 'start')).to.have.length(1);
    });

    it('closed since it was lost, its bead still waits for the fence', () => {
      const closed = { ...lostHolder(NOW + 4000), state: 'closed' as const };
      const p = plan({ agents: [pool('pool', 0, 3)], sessions: [closed], held: heldBy(closed) });
      expect(of(p, 'reopen')).to.deep.equal([]);
    });
  });

  describe('crash back-off', () => {
    it('waits out a back-off, saying until when, and asks for a tick then; restarts after it', () => {
      const crashed = asleep('crasher');
      const crashes = new Map<string, CrashFacts>([
        [crashed.id, { notBefore: NOW + 300, why: 'after 2 failures', count: 2 }],
      ]);
      const p = plan({ agents: [agent('crasher')], sessions: [crashed], crashes });
      expect(p.actions).to.deep.equal([
        {
          kind: 'wait',
          agent: 'crasher',
          reason: `restarting ${crashed.sessionName} at 2026-11-25T12:00:00.300Z (after 2 failures)`,
        },
      ]);
      expect(p.retickInMs).to.equal(300);
      const later = plan({
        now: NOW + 300,
        agents: [agent('crasher')],
        sessions: [crashed],
        crashes,
        memory: p.memory,
      });
      expect(later.actions).to.deep.equal([
        { kind: 'wake', sessionId: crashed.id, reason: 'restarted after it failed' },
      ]);
    });

    it('never wakes a quarantined session by itself', () => {
      const quarantined = asleep('crasher', { state: 'quarantined' });
      expect(plan({ agents: [agent('crasher')], sessions: [quarantined] }).actions).to.deep.equal([]);
    });
  });

  describe('a missing program', () => {
    it('starts nothing and says why once, until the program is there', () => {
      const missing = { ...agent('coder'), programMissing: 'claude is not installed' };
      const p = plan({ agents: [missing] });
      expect(p.actions).to.deep.equal([
        { kind: 'wait', agent: 'coder', reason: 'cannot start: claude is not installed' },
      ]);
      expect(plan({ agents: [missing], memory: p.memory }).actions).to.deep.equal([]);
      const slept = asleep('coder');
      expect(kinds(plan({ agents: [missing], sessions: [slept], memory: p.memory }))).to.deep.equal([]);
      const installed = plan({ agents: [agent('coder')], memory: p.memory });
      expect(kinds(installed)).to.deep.equal(['start']);
      expect(installed.waits.get('coder')).to.equal(undefined);
    });
  });

  it('an unavailable agent starts nothing, and its sessions keep their configuration', () => {
    const broken = agent('broken', { available: false, fingerprint: 'fp9' });
    expect(plan({ agents: [broken], sessions: [session('broken')] }).actions).to.deep.equal([]);
  });

  it('leaves the memory it was given untouched (a plan is a value)', () => {
    const memory = emptyMemory();
    plan({ agents: [{ ...agent('x'), programMissing: 'nope' }], memory });
    expect(memory.waitReasons.size).to.equal(0);
  });
});
