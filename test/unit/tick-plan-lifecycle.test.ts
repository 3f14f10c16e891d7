import { expect } from 'chai';
import { actionsOf, agentFacts, planAt, sessionFacts } from './tick-fixtures.js';
import type { CityAgentConfig } from '../../shared/config/city-config.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import {
  type AgentFacts,
  type SessionFacts,
  type TickInput,
  type TickPlan,
} from '../../controller/agents/tick-facts.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, jitterOf } from '../../controller/agents/tick-plan.js';
import { ROUTED_TO } from '../../controller/beads/work-schema.js';

// The agent keys about a session's life the planner acts on: max_session_age (+ jitter), drain_timeout,
// sleep_after_idle, nudge, and a quarantine that lifts by itself. Time is the `now` each plan is given.

const NOW = Date.parse('2026-11-26T04:00:00Z');
const HOUR = 3_600_000;

function agent(config: Partial<CityAgentConfig> = {}, over: Partial<AgentDefinition> = {}): AgentFacts {
  return agentFacts('worker', config, { workDir: '/city', ...over });
}

function session(over: Partial<SessionFacts> = {}): SessionFacts {
  return sessionFacts(NOW, 'worker', {
    createdAt: new Date(NOW - 10 * HOUR).toISOString(),
    readySince: NOW - HOUR,
    ...over,
  });
}

function plan(input: Partial<TickInput>): TickPlan {
  return planAt(NOW, input);
}

const of = actionsOf;

describe('the tick planner: agent lifecycle keys', () => {
  describe('max_session_age', () => {
    it('leaves a younger session alone and asks for a tick when it comes of age', () => {
      const young = session({ readySince: NOW - HOUR });
      const p = plan({ agents: [agent({ max_session_age_ms: 5 * HOUR })], sessions: [young] });
      expect(p.actions).to.deep.equal([]);
      expect(p.retickInMs).to.equal(4 * HOUR);
    });

    it('restarts an idle session past its age at once, on its agent’s configuration', () => {
      const old = session({ readySince: NOW - 6 * HOUR });
      const p = plan({ agents: [agent({ max_session_age_ms: 5 * HOUR })], sessions: [old] });
      const [restart] = of(p, 'restart');
      expect(restart?.sessionId).to.equal(old.id);
      expect(restart?.reason).to.match(/^restarting: it has run 360m0s, past its max_session_age \(300m0s\)$/);
      expect(restart?.changes).to.deep.equal({ config_hash: 'fp1', provider: 'echo', work_dir: '/city' });
      expect(p.stopped).to.equal(1);
    });

    it('drains a busy session first (no new work), and restarts it once its turn ends', () => {
      const busy = session({ readySince: NOW - 6 * HOUR, idle: false, inTurn: true });
      const worker = agent({ max_session_age_ms: 5 * HOUR });
      const routed = new Map([
        ['worker', [{ id: 'b1', title: 'job', metadata: { [ROUTED_TO]: 'worker' } } as unknown as Bead]],
      ]);
      const p = plan({ agents: [worker], sessions: [busy], routed });
      expect(of(p, 'drain')).to.deep.equal([
        {
          kind: 'drain',
          sessionId: busy.id,
          transition: true,
          reason: 'it has run 360m0s, past its max_session_age (300m0s); it restarts once its turn ends',
        },
      ]);
      expect(of(p, 'restart')).to.deep.equal([]);
      expect(p.memory.draining.get(busy.id)).to.equal('restart');

      // Its turn over: idle, it takes no routed work, and restarts.
      const idle = { ...busy, state: 'draining' as const, idle: true, inTurn: false };
      const after = plan({ now: NOW + 1000, agents: [worker], sessions: [idle], routed, memory: p.memory });
      expect(of(after, 'assign')).to.deep.equal([]);
      expect(of(after, 'restart').map((a) => a.reason)).to.deep.equal(['restarting: it ran past max_session_age']);
      expect(after.memory.draining.size).to.equal(0);
      expect(after.memory.drainSince.size).to.equal(0);
    });

    it('waits for a person attached to an idle session before restarting it', () => {
      const watched = session({ readySince: NOW - 6 * HOUR, attached: true });
      const worker = agent({ max_session_age_ms: 5 * HOUR });
      const p = plan({ agents: [worker], sessions: [watched] });
      expect(of(p, 'restart')).to.deep.equal([]);
      expect(of(p, 'drain')).to.have.length(1);
      const left = plan({
        now: NOW + 1000,
        agents: [worker],
        sessions: [{ ...watched, attached: false }],
        memory: p.memory,
      });
      expect(of(left, 'restart')).to.have.length(1);
    });

    it('adds each session’s own jitter, the same at every tick', () => {
      const jitter = 30 * 60_000;
      const a = jitterOf('s-alpha', jitter);
      const b = jitterOf('s-beta', jitter);
      expect(a).to.be.within(0, jitter - 1);
      expect(b).to.be.within(0, jitter - 1);
      expect(a).to.not.equal(b);
      expect(jitterOf('s-alpha', jitter)).to.equal(a);
      expect(jitterOf('s-alpha', 0)).to.equal(0);

      const worker = agent({ max_session_age_ms: 5 * HOUR, max_session_age_jitter_ms: jitter });
      const s = session({ id: 's-alpha', readySince: NOW - 5 * HOUR });
      const before = plan({ now: NOW + a - 1, agents: [worker], sessions: [s] });
      expect(of(before, 'restart')).to.deep.equal([]);
      expect(before.retickInMs).to.equal(1);
      const due = plan({ now: NOW + a, agents: [worker], sessions: [s] });
      expect(of(due, 'restart')).to.have.length(1);
    });

    it('does not count a session whose program is not running', () => {
      const dormant = session({ state: 'asleep', running: false, idle: false, ready: false, readySince: 0 });
      const p = plan({ agents: [agent({ max_session_age_ms: 1000 })], sessions: [dormant] });
      expect(p.actions.map((a) => a.kind)).to.deep.equal(['wake']);
    });
  });

  describe('drain_timeout', () => {
    it('suspends a draining session whose turn outlasts drain_timeout, and asks for a tick until then', () => {
      const busy = session({ idle: false, inTurn: true });
      const suspended: AgentFacts = { ...agent({ drain_timeout_ms: 60_000 }), suspended: 'the agent is suspended' };
      const p = plan({ agents: [suspended], sessions: [busy] });
      expect(of(p, 'drain')).to.have.length(1);
      expect(p.memory.drainSince.get(busy.id)).to.equal(NOW);

      const draining = { ...busy, state: 'draining' as const };
      const during = plan({ now: NOW + 20_000, agents: [suspended], sessions: [draining], memory: p.memory });
      expect(of(during, 'suspend')).to.deep.equal([]);
      expect(during.retickInMs).to.equal(40_000);

      const late = plan({ now: NOW + 60_000, agents: [suspended], sessions: [draining], memory: during.memory });
      expect(of(late, 'suspend').map((a) => a.reason)).to.deep.equal([
        'suspended with its agent: its drain timed out after 1m0s',
      ]);
      expect(late.memory.draining.size).to.equal(0);
    });

    it('restarts an aged session whose drain times out', () => {
      const busy = session({ readySince: NOW - 6 * HOUR, idle: false, inTurn: true });
      const worker = agent({ max_session_age_ms: 5 * HOUR, drain_timeout_ms: 10_000 });
      const p = plan({ agents: [worker], sessions: [busy] });
      const draining = { ...busy, state: 'draining' as const };
      const late = plan({ now: NOW + 10_000, agents: [worker], sessions: [draining], memory: p.memory });
      expect(of(late, 'restart').map((a) => a.reason)).to.deep.equal([
        'restarting: it ran past max_session_age (its drain timed out after 10s)',
      ]);
    });

    it('closes an orphan’s session after the default drain timeout', () => {
      const busy = session({ template: 'gone', idle: false, inTurn: true });
      const p = plan({ sessions: [busy] });
      expect(p.memory.draining.get(busy.id)).to.equal('close');
      const draining = { ...busy, state: 'draining' as const };
      const before = plan({ now: NOW + DEFAULT_DRAIN_TIMEOUT_MS - 1, sessions: [draining], memory: p.memory });
      expect(of(before, 'close')).to.deep.equal([]);
      const late = plan({ now: NOW + DEFAULT_DRAIN_TIMEOUT_MS, sessions: [draining], memory: before.memory });
      expect(of(late, 'close')).to.deep.equal([{ kind: 'close', sessionId: busy.id }]);
    });
  });

  describe('a quarantine that lifts by itself', () => {
    const crashes = (id: string, until: number) =>
      new Map([[id, { notBefore: NOW - 60_000, why: 'after 5 failures', count: 5, quarantinedUntil: until }]]);

    it('keeps it while its time runs, and asks for a tick when it ends', () => {
      const q = session({ state: 'quarantined', running: false, idle: false, ready: false, readySince: 0 });
      const p = plan({ agents: [agent()], sessions: [q], crashes: crashes(q.id, NOW + 90_000) });
      expect(p.actions).to.deep.equal([]);
      expect(p.retickInMs).to.equal(90_000);
    });

    it('lifts it once its time is up, and wakes the session its agent needs', () => {
      const q = session({ state: 'quarantined', running: false, idle: false, ready: false, readySince: 0 });
      const p = plan({ agents: [agent()], sessions: [q], crashes: crashes(q.id, NOW) });
      expect(p.actions.map((a) => a.kind)).to.deep.equal(['lift-quarantine', 'wake']);
      expect(of(p, 'lift-quarantine')[0]?.reason).to.equal(
        'its quarantine ended at 2026-11-26T04:00:00.000Z: it may start again',
      );
    });

    it('keeps a quarantine with no time (none known yet) as it is', () => {
      const q = session({ state: 'quarantined', running: false, idle: false, ready: false, readySince: 0 });
      expect(plan({ agents: [agent()], sessions: [q] }).actions).to.deep.equal([]);
    });
  });

  describe('sleep_after_idle and nudge', () => {
    it('puts an idle session to sleep after sleep_after_idle when idle_timeout is unset; off never', () => {
      const idle = session({ idleSince: NOW - 120_000 });
      const p = plan({ agents: [agent({ sleep_after_idle_ms: 60_000 })], sessions: [idle] });
      expect(of(p, 'sleep')).to.have.length(1);
      const off = plan({ agents: [agent({ sleep_after_idle_ms: 0 })], sessions: [idle] });
      expect(of(off, 'sleep')).to.deep.equal([]);
      const both = plan({
        agents: [agent({ sleep_after_idle_ms: 60_000, idle_timeout_ms: 600_000 })],
        sessions: [idle],
      });
      expect(of(both, 'sleep')).to.deep.equal([]);
    });

    it('gives the agent’s nudge with the work and the mail a session is told of', () => {
      const idle = session();
      const worker = agent({ nudge: 'Check your hook for work.' });
      const routed = new Map([
        ['worker', [{ id: 'b1', title: 'job', metadata: { [ROUTED_TO]: 'worker' } } as unknown as Bead]],
      ]);
      const work = plan({ agents: [worker], sessions: [idle], routed });
      expect(of(work, 'assign')[0]?.nudge).to.equal('Check your hook for work.');
      const mail = plan({ agents: [worker], sessions: [session()], mail: new Map([['worker', 1]]) });
      expect(of(mail, 'tell-mail')[0]?.nudge).to.equal('Check your hook for work.');
      const plain = plan({ agents: [agent()], sessions: [session()], mail: new Map([['worker', 1]]) });
      expect(of(plain, 'tell-mail')[0]).to.not.have.property('nudge');
    });
  });
});
