import { idleLimitOf } from '../../shared/config/agent-lifecycle.js';
import type { Bead } from '../../shared/dto/beads.js';
import { formatDuration } from '../../shared/duration.js';
import { dependencyOf, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { AgentFacts, SessionFacts, TickAction, TickInput, TickMemory, TickPlan } from './tick-facts.js';
import { ASSIGNED_SESSION, ROUTED_TO } from '../beads/work-schema.js';
import { byRunningThenAge, inDependencyOrder, isOf, wakeable } from './tick-order.js';
import { LOCAL_HOST } from '../hosts/host.js';
import { lacking, placeSession, PlacementLedger, type Placement } from '../hosts/placement.js';

/** A pool session above the agent's minimum closes after being idle this long (unless `idle_timeout` says). */
export const POOL_IDLE_CLOSE_MS = 60_000;

/** A drain waits this long for its turn to end before the session is stopped anyway (the reference's default). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5 * 60_000;

/** How a session the tick suspended with its agent (or city, or rig) says so in its reason. */
export const SUSPENDED_WITH_AGENT = 'suspended with its agent: ';

/**
 * Per agent it keeps open `max(min_active_sessions, wanted)` sessions, where `wanted` is what its work (ready
 * beads routed to it, beads its sessions hold, `work_query` lines) and its `scale_check` ask for, within
 * `max_active_sessions`; starts the missing ones (at most `max_wakes_per_tick` a tick, after the agents it
 * `depends_on` run, and not while its program is missing); hands each idle session the next bead routed to the
 * agent; puts idle sessions to sleep after `idle_timeout` and closes pool sessions nobody needs; restarts
 * sessions whose configuration changed once they are idle and nobody is attached; waits out crash back-offs;
 * drains and stops the sessions of suspended agents (and of a suspended city); drains and closes sessions of
 * agents no longer configured; restarts sessions older than `max_session_age` once idle (drained first); stops a
 * drain anyway after `drain_timeout`; lifts a quarantine once its time is up; and reopens work held by sessions
 * that are gone.
 */
export function planTick(input: TickInput): TickPlan {
  // Pure: no process, no I/O, no timer — what it decides is tested in-process (test/unit/tick-plan.test.ts).
  return new Planner(input).plan();
}

class Planner {
  private readonly actions: TickAction[] = [];
  private readonly memory: TickMemory;
  private readonly waits = new Map<string, string | undefined>();
  private readonly sessions: SessionFacts[];
  private readonly byId: Map<string, SessionFacts>;
  private readonly byName: Map<string, AgentDefinition>;
  private readonly routed = new Map<string, Bead[]>();
  private readonly held = new Map<string, Bead[]>();
  private readonly mail: Map<string, number>;
  /** Sessions placed or woken on each host by this run. */
  private readonly ledger = new PlacementLedger();
  private retickInMs: number | undefined;
  private budget: number;
  private started = 0;
  private woke = 0;
  private stopped = 0;
  private deferred = 0;

  constructor(private readonly input: TickInput) {
    const m = input.memory;
    this.memory = {
      sleptIdle: new Set(m.sleptIdle),
      draining: new Map(m.draining),
      drainSince: new Map(m.drainSince),
      restartPending: new Set(m.restartPending),
      waitReasons: new Map(m.waitReasons),
      unplaceable: new Map(m.unplaceable),
    };
    // Copies: what this run does to a session (a wake, a drain) is seen by the decisions after it.
    this.sessions = input.sessions.map((s) => ({ ...s }));
    this.byId = new Map(this.sessions.map((s) => [s.id, s]));
    this.byName = new Map(input.agents.map((a) => [a.agent.name, a.agent]));
    for (const [agent, beads] of input.routed) this.routed.set(agent, [...beads]);
    for (const [session, beads] of input.held) this.held.set(session, [...beads]);
    this.mail = new Map(input.mail);
    this.budget = input.maxWakesPerTick;
  }

  plan(): TickPlan {
    this.releaseDeadWork();
    this.retireOrphans();
    for (const facts of inDependencyOrder(this.input.agents, this.byName)) this.planAgent(facts);
    return {
      actions: this.actions,
      memory: this.memory,
      waits: this.waits,
      retickInMs: this.retickInMs,
      started: this.started,
      woke: this.woke,
      stopped: this.stopped,
      deferred: this.deferred,
    };
  }

  private planAgent(facts: AgentFacts): void {
    const { agent } = facts;
    this.memory.unplaceable.delete(agent.name);
    // A session being restarted counts, but is left alone until it is back.
    // A lost session runs nothing and is started again only by a person: its agent's pool goes on without it.
    const sessions = this.sessions.filter((s) => isOf(s, agent.name) && s.state !== 'closed' && s.state !== 'lost');
    if (facts.suspended !== undefined) {
      // An age restart under way becomes a suspension: nothing starts while its agent is suspended.
      for (const s of sessions)
        if (this.memory.draining.get(s.id) === 'restart') this.memory.draining.set(s.id, 'suspend');
    }
    this.finishDrains(agent, sessions);
    if (facts.suspended !== undefined) {
      this.suspendAll(facts.suspended, sessions);
      this.memory.waitReasons.set(agent.name, undefined);
      return;
    }
    this.restartDrifted(agent, sessions);
    if (!agent.available) {
      this.memory.waitReasons.set(agent.name, undefined);
      return;
    }
    this.restartAged(agent, sessions);
    this.liftQuarantines(sessions);

    const held = sessions.reduce((n, s) => n + this.heldBy(s.id).length, 0);
    const routed = this.routed.get(agent.name)?.length ?? 0;
    const wanted = Math.min(agent.max, Math.max(facts.scale ?? 0, held + routed + (facts.queryLines ?? 0)));
    const keepOpen = Math.max(agent.min, wanted);
    const mail = this.mail.get(agent.name) ?? 0;
    const ordered = [...sessions].sort(byRunningThenAge);
    const blocker =
      this.dependencyNotRunning(agent) ?? (facts.programMissing ? `cannot start: ${facts.programMissing}` : undefined);

    let waitReason = this.wakeNeeded(agent, ordered, { wanted, keepOpen, mail, blocker });
    // Sessions missing altogether.
    for (let n = ordered.length; n < keepOpen; n++) {
      if (blocker) {
        waitReason = blocker;
        break;
      }
      if (this.budget <= 0) {
        this.deferred++;
        continue;
      }
      const placed = this.place(agent);
      if ('reason' in placed) {
        this.memory.unplaceable.set(agent.name, placed.reason);
        waitReason = `cannot place a session: ${placed.reason}`;
        break;
      }
      this.budget--;
      this.started++;
      const reason =
        n < wanted
          ? facts.scale !== undefined && facts.scale > n
            ? 'scale_check asks for it'
            : 'work is routed to it'
          : 'min_active_sessions';
      this.actions.push({ kind: 'start', agent, reason, ...('host' in placed ? { host: placed.host } : {}) });
    }
    this.waits.set(agent.name, waitReason);
    if (waitReason !== this.memory.waitReasons.get(agent.name)) {
      this.memory.waitReasons.set(agent.name, waitReason);
      if (waitReason !== undefined) this.actions.push({ kind: 'wait', agent: agent.name, reason: waitReason });
    }

    this.handOutWork(agent, ordered);
    this.tellMail(agent, ordered);
    this.sleepOrClose(agent, ordered, keepOpen);
  }

  /**
   * Wakes the dormant sessions that should run now: those the work needs, the minimum ones not asleep for
   * idleness, one to tell the mail to, and those holding work. Returns why one that should run waits.
   */
  private wakeNeeded(
    agent: AgentDefinition,
    ordered: SessionFacts[],
    want: { wanted: number; keepOpen: number; mail: number; blocker?: string },
  ): string | undefined {
    let waitReason: string | undefined;
    for (const [index, session] of ordered.entries()) {
      if (index >= want.keepOpen) break;
      const needed =
        index < want.wanted ||
        (index < agent.min && !this.memory.sleptIdle.has(session.id)) ||
        (index === 0 && want.mail > 0) ||
        this.heldBy(session.id).length > 0;
      if (!needed || !wakeable(session)) continue;
      const crash = this.input.crashes.get(session.id);
      const wait = crash ? Math.max(0, crash.notBefore - this.input.now) : 0;
      if (crash && wait > 0) {
        // The moment, not a countdown: the reason (and its event) stays the same while it waits.
        const at = new Date(crash.notBefore).toISOString();
        waitReason = `restarting ${session.sessionName} at ${at} (${crash.why})`;
        this.retickIn(wait);
        continue;
      }
      if (want.blocker) {
        waitReason = want.blocker;
        continue;
      }
      if (this.budget <= 0) {
        this.deferred++;
        continue;
      }
      const hostWait = this.hostWait(session);
      const moveTo = hostWait ? this.moveTo(agent, session) : undefined;
      if (hostWait && !moveTo) {
        waitReason = `${session.sessionName} waits for its host: ${hostWait}`;
        continue;
      }
      this.budget--;
      this.memory.sleptIdle.delete(session.id);
      this.woke++;
      const reason = this.wakeReason(index, want.wanted, want.mail > 0, session);
      this.actions.push({
        kind: 'wake',
        sessionId: session.id,
        reason: moveTo ? `${reason}, on ${moveTo} (${session.host}: ${hostWait})` : reason,
        ...(moveTo ? { host: moveTo } : {}),
      });
      session.state = 'creating';
      session.suspendedByTick = false;
    }
    return waitReason;
  }

  /** Beads held by a session that is gone (closed, crashed, quarantined) go back to open, still routed. */
  private releaseDeadWork(): void {
    for (const [holder, beads] of [...this.held]) {
      for (const bead of beads) {
        const sessionId = bead.metadata?.[ASSIGNED_SESSION];
        if (!sessionId) continue;
        const session = this.byId.get(sessionId);
        const alive =
          session &&
          session.state !== 'closed' &&
          (session.running || ['creating', 'start-pending', 'draining'].includes(session.state));
        if (alive) continue;
        // Lost with its host: its program there may still be working on the bead until the host's fence has
        // passed (its watchdog ends it by then); handing the bead to another before would run it twice.
        const fence = session?.lostUntil ?? 0;
        if (fence > this.input.now) {
          this.retickIn(fence - this.input.now);
          continue;
        }
        const routedTo = bead.metadata?.[ROUTED_TO];
        const gone =
          session?.lostUntil !== undefined
            ? `${bead.assignee ?? sessionId} was lost with its host`
            : `${bead.assignee ?? sessionId} is gone`;
        this.actions.push({
          kind: 'reopen',
          bead,
          sessionId,
          message: `${gone}; the bead is open again${routedTo && this.byName.has(routedTo) ? ` for ${routedTo}` : ''}`,
        });
        const left = this.held.get(holder)!.filter((b) => b.id !== bead.id);
        if (left.length) this.held.set(holder, left);
        else this.held.delete(holder);
        if (routedTo && !bead.is_blocked) {
          const list = this.routed.get(routedTo) ?? [];
          list.push(bead);
          this.routed.set(routedTo, list);
        }
      }
    }
  }

  /** Sessions the controller started for agents no longer configured drain, then close. */
  private retireOrphans(): void {
    const draining = this.memory.draining;
    for (const session of this.sessions) {
      if (session.kind !== 'agent' || session.managed !== 'tick' || session.state === 'closed') continue;
      if (session.changing) continue;
      if (this.byName.has(session.template) || draining.has(session.id)) continue;
      if (session.running && !session.idle) {
        this.drain(session, 'close', `agent ${session.template} is no longer configured`, session.state === 'active');
        continue;
      }
      this.stopped++;
      this.actions.push({ kind: 'close', sessionId: session.id });
      session.state = 'closed';
    }
    // Drains of orphans finish here too (they have no agent to be looked at with).
    for (const [id, then] of draining) {
      const session = this.byId.get(id);
      if (!session || session.state === 'closed') {
        draining.delete(id);
        continue;
      }
      if (this.byName.has(session.template)) continue;
      if (session.running && session.inTurn && !this.drainTimedOut(id, DEFAULT_DRAIN_TIMEOUT_MS)) continue;
      draining.delete(id);
      this.memory.drainSince.delete(id);
      this.stopped++;
      if (then === 'close') {
        this.actions.push({ kind: 'close', sessionId: id });
        session.state = 'closed';
      }
    }
  }

  /** Starts a drain: the session takes no more work, its turn finishes (or its drain times out), then `then`. */
  private drain(session: SessionFacts, then: 'suspend' | 'close' | 'restart', reason: string, transition: boolean) {
    this.memory.draining.set(session.id, then);
    this.memory.drainSince.set(session.id, this.input.now);
    this.actions.push({ kind: 'drain', sessionId: session.id, transition, reason });
    if (transition) session.state = 'draining';
  }

  /** Whether a drain has waited `limitMs` (a tick is asked for when it will have). */
  private drainTimedOut(id: string, limitMs: number): boolean {
    const since = this.memory.drainSince.get(id) ?? this.input.now;
    this.memory.drainSince.set(id, since);
    const waited = this.input.now - since;
    if (waited >= limitMs) return true;
    this.retickIn(limitMs - waited);
    return false;
  }

  /**
   * Drained sessions (their turn over, and — for an age restart — nobody attached) are suspended, closed or
   * restarted, as asked; after the agent's `drain_timeout` they are, turn or not.
   */
  private finishDrains(agent: AgentDefinition, sessions: SessionFacts[]): void {
    const limit = agent.config.drain_timeout_ms ?? DEFAULT_DRAIN_TIMEOUT_MS;
    for (const session of sessions) {
      const then = this.memory.draining.get(session.id);
      if (!then || session.changing) continue;
      const busy = session.running && (session.inTurn || (then === 'restart' && session.attached));
      const timedOut = busy && this.drainTimedOut(session.id, limit);
      if (busy && !timedOut) continue;
      this.memory.draining.delete(session.id);
      this.memory.drainSince.delete(session.id);
      this.stopped++;
      const late = timedOut ? ` (its drain timed out after ${formatDuration(limit)})` : '';
      if (then === 'close') {
        this.actions.push({ kind: 'close', sessionId: session.id, ...(late ? { note: `closing${late}` } : {}) });
        session.state = 'closed';
      } else if (then === 'restart') {
        this.actions.push({
          kind: 'restart',
          sessionId: session.id,
          reason: `restarting: it ran past max_session_age${late}`,
          changes: changesOf(agent),
        });
        Object.assign(session, { changing: true, state: 'asleep', idle: false, ready: false });
      } else {
        this.actions.push({
          kind: 'suspend',
          sessionId: session.id,
          reason:
            SUSPENDED_WITH_AGENT + (late ? `its drain timed out after ${formatDuration(limit)}` : 'its turn finished'),
        });
        session.state = 'suspended';
        session.suspendedByTick = true;
      }
    }
  }

  /** Suspended agents (or all, when the city is): each running session drains, then is suspended. */
  private suspendAll(why: string, sessions: SessionFacts[]): void {
    for (const session of sessions) {
      if (session.state === 'suspended' || session.state === 'closed') continue;
      if (this.memory.draining.has(session.id) || session.changing) continue;
      const busy = session.running && !session.idle;
      if (busy && session.state !== 'draining') {
        this.drain(session, 'suspend', `${why}; its turn finishes first`, true);
        continue;
      }
      if (busy) continue;
      this.stopped++;
      this.actions.push({ kind: 'suspend', sessionId: session.id, reason: SUSPENDED_WITH_AGENT + why });
      session.state = 'suspended';
      session.suspendedByTick = true;
    }
  }

  /**
   * A session started from another configuration than the agent's now restarts on it — at once when it is
   * idle and nobody is attached, else once it is (the agent shows `restart_pending` meanwhile). A dormant
   * session only takes the new configuration for its next start.
   */
  private restartDrifted(agent: AgentDefinition, sessions: SessionFacts[]): void {
    const pending = this.memory.restartPending;
    for (const session of sessions) {
      if (session.changing) continue;
      if (session.configHash === agent.fingerprint || !agent.available) {
        pending.delete(session.id);
        continue;
      }
      const changes = changesOf(agent);
      if (!session.running && !['creating', 'start-pending'].includes(session.state)) {
        this.actions.push({ kind: 'reconfigure', sessionId: session.id, changes });
        session.configHash = agent.fingerprint;
        continue;
      }
      if (!session.ready) continue; // starting: looked at again once it is ready
      if (session.idle && !session.attached) {
        pending.delete(session.id);
        this.stopped++;
        this.actions.push({
          kind: 'restart',
          sessionId: session.id,
          reason: 'restarting: its agent configuration changed',
          changes,
        });
        // A restart stops the program first: the session is asleep and changing until it is back.
        Object.assign(session, { changing: true, state: 'asleep', idle: false, ready: false });
      } else if (!pending.has(session.id)) {
        pending.add(session.id);
        const why = session.attached ? 'someone is attached' : 'it is in a turn';
        this.actions.push({
          kind: 'restart-pending',
          sessionId: session.id,
          reason: `its agent configuration changed; it restarts once idle (${why})`,
        });
      }
    }
  }

  /**
   * A session whose program has run longer than the agent's `max_session_age` (plus its share of the jitter)
   * restarts: at once when it is idle and nobody is attached, else it drains first (no new work or mail; its
   * turn ends, or its `drain_timeout` passes).
   */
  private restartAged(agent: AgentDefinition, sessions: SessionFacts[]): void {
    const max = agent.config.max_session_age_ms;
    if (!max) return;
    for (const session of sessions) {
      if (!session.ready || session.changing || session.readySince <= 0) continue;
      if (this.memory.draining.has(session.id) || this.memory.restartPending.has(session.id)) continue;
      const limit = max + jitterOf(session.id, agent.config.max_session_age_jitter_ms ?? 0);
      const age = this.input.now - session.readySince;
      if (age < limit) {
        this.retickIn(limit - age);
        continue;
      }
      const why = `it has run ${formatDuration(age)}, past its max_session_age (${formatDuration(limit)})`;
      if (session.idle && !session.attached) {
        this.stopped++;
        this.actions.push({
          kind: 'restart',
          sessionId: session.id,
          reason: `restarting: ${why}`,
          changes: changesOf(agent),
        });
        Object.assign(session, { changing: true, state: 'asleep', idle: false, ready: false });
      } else {
        this.drain(session, 'restart', `${why}; it restarts once its turn ends`, session.state === 'active');
      }
    }
  }

  /** A quarantine whose time is up is lifted (the session may start again); one still running asks for a tick then. */
  private liftQuarantines(sessions: SessionFacts[]): void {
    for (const session of sessions) {
      if (session.state !== 'quarantined' || session.changing) continue;
      const until = this.input.crashes.get(session.id)?.quarantinedUntil;
      if (until === undefined) continue;
      if (this.input.now < until) {
        this.retickIn(until - this.input.now);
        continue;
      }
      this.actions.push({
        kind: 'lift-quarantine',
        sessionId: session.id,
        reason: `its quarantine ended at ${new Date(until).toISOString()}: it may start again`,
      });
      session.state = 'asleep';
    }
  }

  /** Hands each idle session of the agent without a bead the next ready bead routed to it. */
  private handOutWork(agent: AgentDefinition, sessions: SessionFacts[]): void {
    const ready = this.routed.get(agent.name) ?? [];
    for (const session of sessions) {
      if (!session.idle || session.state !== 'active' || this.heldBy(session.id).length > 0) continue;
      if (this.memory.restartPending.has(session.id) || this.memory.draining.has(session.id)) continue;
      const bead = ready.shift();
      if (!bead) break;
      this.actions.push({ kind: 'assign', sessionId: session.id, agent: agent.name, bead, ...nudgeOf(agent) });
      this.held.set(session.id, [bead]);
      session.idle = false; // told its work: it has a turn now
    }
  }

  /** Mail to the agent is told to its first idle session (woken for it when needed). */
  private tellMail(agent: AgentDefinition, sessions: SessionFacts[]): void {
    if (!this.mail.get(agent.name)) return;
    const session = sessions.find((s) => s.idle && s.state === 'active');
    if (!session) return;
    this.mail.delete(agent.name);
    this.actions.push({ kind: 'tell-mail', sessionId: session.id, agent: agent.name, ...nudgeOf(agent) });
    session.idle = false;
  }

  /**
   * Idle sessions go to sleep after the agent's `idle_timeout`; pool sessions beyond what is wanted close once
   * idle (after `idle_timeout`, or a minute), and asleep ones at once.
   */
  private sleepOrClose(agent: AgentDefinition, sessions: SessionFacts[], keepOpen: number): void {
    const now = this.input.now;
    const idleLimit = idleLimitOf(agent.config);
    for (const [index, session] of sessions.entries()) {
      if (this.memory.draining.has(session.id) || this.heldBy(session.id).length > 0 || session.changing) continue;
      const excess = index >= keepOpen && session.managed === 'tick';
      if (excess) {
        const dormant = !session.running && session.state !== 'creating' && session.state !== 'start-pending';
        const idleFor = session.idle && !session.attached ? now - session.idleSince : -1;
        if (dormant || idleFor >= (idleLimit ?? POOL_IDLE_CLOSE_MS)) {
          this.stopped++;
          this.memory.sleptIdle.delete(session.id);
          this.actions.push({ kind: 'close', sessionId: session.id, note: 'no work needs it: its pool shrinks' });
        } else if (idleFor >= 0) {
          this.retickIn((idleLimit ?? POOL_IDLE_CLOSE_MS) - idleFor);
        }
        continue;
      }
      if (idleLimit === undefined || !session.idle || session.attached) continue;
      const idleFor = now - session.idleSince;
      if (idleFor < idleLimit) {
        this.retickIn(idleLimit - idleFor);
        continue;
      }
      this.stopped++;
      this.memory.sleptIdle.add(session.id);
      this.actions.push({
        kind: 'sleep',
        sessionId: session.id,
        reason: `idle for ${Math.round(idleFor / 1000)} s: asleep until work or mail comes`,
      });
    }
  }

  /** Why the agent cannot start now for its dependencies, if it cannot. */
  private dependencyNotRunning(agent: AgentDefinition): string | undefined {
    for (const name of agent.config.depends_on) {
      const dep = dependencyOf(agent, name, this.byName);
      if (!dep) continue;
      const up = this.input.sessions.some((s) => isOf(s, dep.name) && s.ready);
      if (!up) return `waiting for ${dep.name}, which it depends on, to run`;
    }
    return undefined;
  }

  private wakeReason(index: number, wanted: number, mail: boolean, session: SessionFacts): string {
    if (this.heldBy(session.id).length > 0) return 'woken: it holds work';
    if (index < wanted) return 'woken: work is routed to its agent';
    if (mail && index === 0) return 'woken: mail for its agent';
    return (this.input.crashes.get(session.id)?.count ?? 0) > 0
      ? 'restarted after it failed'
      : 'woken: min_active_sessions';
  }

  /** Where a new session of the agent runs: placed on its hosts when the city's hosts are given, else here. */
  private place(agent: AgentDefinition): Placement | { local: true } {
    if (!this.input.hosts) return { local: true };
    const tmux = agent.provider?.runtime === 'tmux';
    return placeSession({ hosts: agent.config.hosts, tmux }, this.input.hosts, this.ledger);
  }

  /**
   * Why a dormant session cannot wake on the host it was placed on now (down, not checked, full, no longer
   * configured), or undefined when it can (its slot then counted for this run). Its work stays with it there.
   */
  private hostWait(session: SessionFacts): string | undefined {
    const name = session.host ?? LOCAL_HOST;
    if (!this.input.hosts || name === LOCAL_HOST) return undefined;
    const host = this.input.hosts.find((h) => h.name === name);
    if (!host) return `${name} is no longer configured ([[host]])`;
    const why = lacking(host, host.used + this.ledger.count(name), false);
    if (why) return why;
    this.ledger.add(name);
    return undefined;
  }

  /**
   * Another host for a session that failed to start on its own and cannot start there now: one that never took
   * a turn has no work of its own there (what it holds is in the store, its branch is the rig's), so it starts
   * wherever its agent's hosts have room, instead of waiting on a full or down host while another has a slot.
   */
  private moveTo(agent: AgentDefinition, session: SessionFacts): string | undefined {
    if (session.state !== 'failed-create' || session.tookTurn) return undefined;
    const placed = this.place(agent);
    return 'host' in placed && placed.host !== session.host ? placed.host : undefined;
  }

  private heldBy(sessionId: string): readonly Bead[] {
    return this.held.get(sessionId) ?? [];
  }

  private retickIn(ms: number): void {
    this.retickInMs = this.retickInMs === undefined ? ms : Math.min(this.retickInMs, ms);
  }
}

/** The agent's `nudge`, given with the work and mail a session is told of. */
function nudgeOf(agent: AgentDefinition): { nudge?: string } {
  return agent.config.nudge ? { nudge: agent.config.nudge } : {};
}

/** What a session restarted on its agent's configuration now takes from it. */
function changesOf(agent: AgentDefinition) {
  return { config_hash: agent.fingerprint, provider: agent.providerName!, work_dir: agent.workDir };
}

/** A session's share of `max_session_age_jitter`: the same for it at every tick, different between sessions. */
export function jitterOf(sessionId: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let hash = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < sessionId.length; i++) hash = Math.imul(hash ^ sessionId.charCodeAt(i), 0x01000193) >>> 0;
  return Math.floor((hash / 2 ** 32) * jitterMs);
}
