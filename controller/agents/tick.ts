import type { Logger } from 'pino';
import type { CityDaemonConfig } from '../../shared/config/city-config.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { StatusTick } from '../../shared/dto/health.js';
import { RunStats } from '../run-stats.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import { dependencyOf, suspensionOf, type AgentDefinition, type Suspension } from './agent-catalog.js';
import { AgentChecks, type CheckResult } from './agent-checks.js';
import { CrashTracker } from './crash-tracker.js';
import { ASSIGNED_SESSION, ROUTED_TO, WorkBoard } from './work-board.js';

/** How a session the tick suspended with its agent (or city, or rig) says so: resumed, it wakes again. */
const SUSPENDED_WITH_AGENT = 'suspended with its agent: ';

/** A pool session above the agent's minimum closes after being idle this long (unless `idle_timeout` says). */
const POOL_IDLE_CLOSE_MS = 60_000;

export interface TickHost {
  cityName: string;
  cityRoot: string;
  log: EventLog;
  beads: BeadsService;
  sessions: SessionService;
  logger: Logger;
  /** The agents as the configuration resolves them now. */
  agents(): AgentDefinition[];
  daemon(): CityDaemonConfig;
  /** What is suspended now: the city, and which rigs. */
  suspension(): Suspension;
  /** The environment checks run with. */
  env: NodeJS.ProcessEnv;
  /**
   * Why the program the agent's sessions would run is not there (not installed, not executable), or undefined
   * when it is: starting it would only fail, again and again.
   */
  programMissing?(agent: AgentDefinition): Promise<string | undefined>;
}

/** How soon an agent whose program is missing is looked at again (its probe is cached for 2 s). */
const PROGRAM_RECHECK_MS = 3_000;

/** What one tick did (for tests, the benchmark and the log). */
export interface TickReport {
  ms: number;
  started: number;
  woke: number;
  stopped: number;
  assigned: number;
  released: number;
  /** Starts left for the next tick (the per-tick bound was reached). */
  deferred: number;
}

/** What the tick knows of an agent between ticks (in memory: a new controller starts afresh). */
interface AgentMemory {
  waitReason?: string;
  checkError?: string;
  /** Why its program cannot run (provider readiness says not installed), as the last tick found. */
  programMissing?: string;
}

/**
 * The controller's tick: makes each agent's sessions what its configuration and its work ask for. It runs when
 * something changes (a bead, mail, a session's state, the configuration, a check's answer) and at least every
 * `patrol_interval`. One run only decides and sets things going — a session's start, stop, restart or sleep, a
 * check command — and never waits on a program, so one slow agent delays no other.
 *
 * Per agent it keeps open `max(min_active_sessions, wanted)` sessions, where `wanted` is what its work (ready
 * beads routed to it, beads its sessions hold, `work_query` lines) and its `scale_check` ask for, within
 * `max_active_sessions`; starts the missing ones (at most `max_wakes_per_tick` a tick, after the agents it
 * `depends_on` run); hands each idle session the next bead routed to the agent; puts idle sessions to sleep
 * after `idle_timeout` and closes pool sessions nobody needs; restarts sessions whose configuration changed once
 * they are idle and nobody is attached; restarts crashed ones with back-off and quarantines those that keep
 * failing fast; drains and stops the sessions of suspended agents (and of a suspended city); and reopens work
 * held by sessions that are gone. Every change it makes to a session or a bead is an event.
 */
export class AgentTick {
  private timer: NodeJS.Timeout | undefined;
  private scheduled = false;
  private running = false;
  private again = false;
  private stopped = false;
  private readonly board: WorkBoard;
  private readonly crashes = new CrashTracker();
  private readonly checks: AgentChecks;
  private readonly memory = new Map<string, AgentMemory>();
  private programRecheck: NodeJS.Timeout | undefined;
  /** Sessions put to sleep for idleness: only work or mail wakes them. */
  private readonly sleptIdle = new Set<string>();
  /** Sessions asked to drain, and what follows once their turn ends. */
  private readonly draining = new Map<string, 'suspend' | 'close'>();
  /** Sessions whose restart for a configuration change waits for them to be idle. */
  private readonly restartPending = new Set<string>();
  /** Mail waiting to be told to an agent's session, by agent. */
  private readonly mailNotices = new Map<string, { id: string; from: string; subject: string }[]>();
  private lastReport: TickReport | undefined;
  private patrolMs = 0;
  /** How long its last runs took, for the city status. */
  private readonly runStats = new RunStats();
  private baseEnv: NodeJS.ProcessEnv | undefined;
  /** What is suspended, read once per tick. */
  private suspension: Suspension = { city: false, rigs: new Set() };

  constructor(private readonly host: TickHost) {
    this.board = new WorkBoard(host.beads);
    this.checks = new AgentChecks((key, result) => this.checkAnswered(key, result));
  }

  /** Starts ticking: on every change that matters, and every patrol interval. */
  start(): void {
    this.host.log.onAppend((records) => this.heard(records));
    this.host.sessions.onOpened((session) => this.watchSession(session));
    for (const session of this.host.sessions.all()) this.watchSession(session);
    this.schedulePatrol();
    this.poke();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.programRecheck);
    this.checks.stop();
  }

  /** Asks for a tick soon (many asks in one turn of the event loop make one tick). */
  poke(): void {
    if (this.stopped || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  /** How often the tick ran and how long it takes (its last 256 runs). */
  stats(): StatusTick {
    return this.runStats.stats();
  }

  /** Whether a session's restart for a configuration change is waiting for it to be idle. */
  isRestartPending(sessionId: string): boolean {
    return this.restartPending.has(sessionId);
  }

  /** Why the agent's program cannot run, as the last tick found. */
  programMissing(agent: string): string | undefined {
    return this.memory.get(agent)?.programMissing;
  }

  /** Why an agent does not start a session it wants, if it does not. */
  waitReason(agent: string): string | undefined {
    return this.memory.get(agent)?.waitReason;
  }

  /** Routed ready beads not yet taken, for an agent. */
  queuedWork(agent: string): number {
    return this.board.routedReady(agent).length;
  }

  /** The bead a session holds, if any. */
  activeBead(session: Session): Bead | undefined {
    return this.board.heldBy(session.id)[0];
  }

  /** Forgets an agent's failures (a person resumed it, or woke its quarantined session). */
  forgive(agent: string): void {
    for (const session of this.host.sessions.agentSessions(agent)) this.crashes.forget(session.id);
    this.poke();
  }

  /** One tick, now. Runs again at once when something asked for a tick while it ran. */
  async run(): Promise<TickReport | undefined> {
    if (this.stopped) return undefined;
    if (this.running) {
      this.again = true;
      return undefined;
    }
    this.running = true;
    try {
      const report = await this.once();
      this.lastReport = report;
      this.runStats.record(report.ms);
      if (report.deferred > 0) this.again = true;
      return report;
    } catch (err) {
      this.host.logger.error({ err }, 'tick failed');
      return undefined;
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.poke();
      }
    }
  }

  private async once(): Promise<TickReport> {
    const started = performance.now();
    const report: TickReport = { ms: 0, started: 0, woke: 0, stopped: 0, assigned: 0, released: 0, deferred: 0 };
    const daemon = this.host.daemon();
    if (daemon.patrolIntervalMs !== this.patrolMs) this.schedulePatrol();
    const agents = this.host.agents();
    this.suspension = this.host.suspension();
    const byName = new Map(agents.map((a) => [a.name, a]));
    this.board.refresh(agents.map((a) => a.name));

    report.released = await this.releaseDeadWork(byName);
    await this.retireOrphans(byName, report);

    let budget = daemon.maxWakesPerTick;
    for (const agent of inDependencyOrder(agents, byName)) {
      const memory = this.memoryOf(agent.name);
      // A session being restarted counts, but is left alone until it is back.
      const sessions = this.host.sessions.agentSessions(agent.name).filter((s) => s.state !== 'closed');
      this.applyDrains(sessions, report);
      if (this.suspended(agent)) {
        this.suspendAll(agent, sessions, report);
        memory.waitReason = undefined;
        continue;
      }
      this.runChecks(agent, daemon);
      this.applyDrift(agent, sessions, report);
      if (!agent.available) {
        memory.waitReason = undefined;
        continue;
      }

      const held = sessions.reduce((n, s) => n + this.board.heldBy(s.id).length, 0);
      const routed = this.board.routedReady(agent.name).length;
      const query = this.checkLines(agent, 'work_query');
      const scale = this.scaleOf(agent);
      const wanted = Math.min(agent.max, Math.max(scale ?? 0, held + routed + (query?.length ?? 0)));
      const keepOpen = Math.max(agent.min, wanted);
      const mail = this.mailNotices.get(agent.name) ?? [];

      // Which sessions should run now: those the work needs, the minimum ones not asleep for idleness, and one
      // to tell the mail to.
      const ordered = [...sessions].sort(byRunningThenAge);
      let waitReason: string | undefined;
      // Its program not installed: every start would fail and crash-loop into quarantine; wait for it instead.
      memory.programMissing = await this.host.programMissing?.(agent);
      // Nothing is told when it gets installed: look again soon rather than at the next patrol.
      if (memory.programMissing) this.recheckPrograms();
      const blocker =
        this.dependencyNotRunning(agent, byName) ??
        (memory.programMissing ? `cannot start: ${memory.programMissing}` : undefined);
      for (const [index, session] of ordered.entries()) {
        if (index >= keepOpen) break;
        const needed =
          index < wanted ||
          (index < agent.min && !this.sleptIdle.has(session.id)) ||
          (index === 0 && mail.length > 0) ||
          this.board.heldBy(session.id).length > 0;
        if (!needed || !wakeable(session)) continue;
        const wait = this.crashes.waitFor(session.id);
        if (wait > 0) {
          // The moment, not a countdown: the reason (and its event) stays the same while it waits.
          const at = new Date(this.crashes.notBefore(session.id)).toISOString();
          waitReason = `restarting ${session.record.session_name} at ${at} (${this.crashes.why(session.id)})`;
          this.retickIn(wait);
          continue;
        }
        if (blocker) {
          waitReason = blocker;
          continue;
        }
        if (budget <= 0) {
          report.deferred++;
          continue;
        }
        budget--;
        this.sleptIdle.delete(session.id);
        report.woke++;
        void session.wake('wake', this.wakeReason(index, wanted, mail.length > 0, session)).catch(() => undefined);
      }
      // Sessions missing altogether.
      for (let n = ordered.length; n < keepOpen; n++) {
        if (blocker) {
          waitReason = blocker;
          break;
        }
        if (budget <= 0) {
          report.deferred++;
          continue;
        }
        budget--;
        report.started++;
        const why =
          n < wanted
            ? scale !== undefined && scale > n
              ? 'scale_check asks for it'
              : 'work is routed to it'
            : 'min_active_sessions';
        this.host.sessions.startAgentSession(agent, why);
      }
      await this.reportWait(agent, memory, waitReason);

      report.assigned += await this.handOutWork(agent, ordered);
      this.tellMail(agent, ordered);
      this.sleepOrClose(agent, ordered, keepOpen, report);
    }
    report.ms = performance.now() - started;
    return report;
  }

  // -------------------------------------------------------------------------------------------------------
  // Decisions

  /** Suspended agents (or all, when the city is): each running session drains, then is suspended. */
  private suspendAll(agent: AgentDefinition, sessions: Session[], report: TickReport): void {
    for (const session of sessions) {
      if (session.state === 'suspended' || this.draining.has(session.id) || session.changing) continue;
      const busy = session.running && !session.idle;
      if (busy && session.state !== 'draining') {
        this.draining.set(session.id, 'suspend');
        session.transition('drain');
        void session.recordLifecycle('session.draining', `${this.suspendReason(agent)!}; its turn finishes first`);
        continue;
      }
      if (busy) continue;
      report.stopped++;
      void this.host.sessions
        .suspend(session.id, SUSPENDED_WITH_AGENT + this.suspendReason(agent)!)
        .catch(() => undefined);
    }
  }

  /** Drained sessions (their turn over) are suspended or closed, as asked. */
  private applyDrains(sessions: Session[], report: TickReport): void {
    for (const session of sessions) {
      const then = this.draining.get(session.id);
      if (!then || session.changing) continue;
      if (session.running && session.inTurn) continue;
      this.draining.delete(session.id);
      report.stopped++;
      if (then === 'close') void this.host.sessions.close(session.id, false).catch(() => undefined);
      else
        void this.host.sessions.suspend(session.id, SUSPENDED_WITH_AGENT + 'its turn finished').catch(() => undefined);
    }
  }

  /**
   * A session started from another configuration than the agent's now restarts on it — at once when it is
   * idle and nobody is attached, else once it is (the agent shows `restart_pending` meanwhile). A dormant
   * session only takes the new configuration for its next start.
   */
  private applyDrift(agent: AgentDefinition, sessions: Session[], report: TickReport): void {
    for (const session of sessions) {
      if (session.changing) continue;
      if (session.record.config_hash === agent.fingerprint || !agent.available) {
        this.restartPending.delete(session.id);
        continue;
      }
      const changes = {
        config_hash: agent.fingerprint,
        provider: agent.providerName!,
        work_dir: agent.workDir,
      };
      if (!session.running && !['creating', 'start-pending'].includes(session.state)) {
        Object.assign(session.record, changes);
        this.host.sessions.saveRecord(session, changes);
        continue;
      }
      if (!session.isReady) continue; // starting: looked at again once it is ready
      if (session.idle && !session.attached) {
        this.restartPending.delete(session.id);
        report.stopped++;
        void session.restart('restarting: its agent configuration changed', changes).catch(() => undefined);
      } else if (!this.restartPending.has(session.id)) {
        this.restartPending.add(session.id);
        const why = session.attached ? 'someone is attached' : 'it is in a turn';
        void session.recordLifecycle(
          'session.restart_pending',
          `its agent configuration changed; it restarts once idle (${why})`,
        );
      }
    }
  }

  /** Hands each idle session of the agent without a bead the next ready bead routed to it. */
  private async handOutWork(agent: AgentDefinition, sessions: Session[]): Promise<number> {
    let assigned = 0;
    for (const session of sessions) {
      if (!session.idle || session.state !== 'active' || this.board.heldBy(session.id).length > 0) continue;
      if (this.restartPending.has(session.id) || this.draining.has(session.id)) continue;
      const bead = this.board.takeNext(agent.name);
      if (!bead) break;
      try {
        const taken = await this.host.beads.update(bead.id, {
          assignee: session.record.session_name,
          status: 'in_progress',
          metadata: { [ASSIGNED_SESSION]: session.id },
        });
        this.board.held(session.id, taken);
      } catch (err) {
        this.host.logger.warn({ err, bead: bead.id }, 'could not assign a bead');
        continue;
      }
      session.enqueue(workMessage(bead), 'default');
      assigned++;
    }
    return assigned;
  }

  /** Mail to the agent is told to its first idle session (woken for it when needed). */
  private tellMail(agent: AgentDefinition, sessions: Session[]): void {
    const notices = this.mailNotices.get(agent.name);
    if (!notices?.length) return;
    const session = sessions.find((s) => s.idle && s.state === 'active');
    if (!session) return;
    this.mailNotices.delete(agent.name);
    const list = notices.map((m) => `${m.id} from ${m.from}: ${m.subject.replace(/\s+/g, ' ')}`).join('; ');
    session.enqueue(`New mail: ${list} (read it: ctl mail read <id>)`, 'default');
  }

  /**
   * Idle sessions go to sleep after the agent's `idle_timeout`; pool sessions beyond what is wanted close once
   * idle (after `idle_timeout`, or a minute), and asleep ones at once.
   */
  private sleepOrClose(agent: AgentDefinition, sessions: Session[], keepOpen: number, report: TickReport): void {
    const now = Date.now();
    const idleLimit = agent.config.idle_timeout_ms;
    for (const [index, session] of sessions.entries()) {
      if (this.draining.has(session.id) || this.board.heldBy(session.id).length > 0 || session.changing) continue;
      const excess = index >= keepOpen && session.record.managed === 'tick';
      if (excess) {
        const dormant = !session.running && session.state !== 'creating' && session.state !== 'start-pending';
        const idleFor = session.idle && !session.attached ? now - session.idleSince : -1;
        if (dormant || idleFor >= (idleLimit ?? POOL_IDLE_CLOSE_MS)) {
          report.stopped++;
          this.sleptIdle.delete(session.id);
          void session
            .recordLifecycle('session.draining', 'no work needs it: its pool shrinks')
            .then(() => this.host.sessions.close(session.id, false).catch(() => undefined));
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
      report.stopped++;
      this.sleptIdle.add(session.id);
      void session
        .sleep(`idle for ${Math.round(idleFor / 1000)} s: asleep until work or mail comes`)
        .catch(() => undefined);
    }
  }

  /** Beads held by a session that is gone (closed, crashed, quarantined) go back to open, still routed. */
  private async releaseDeadWork(byName: Map<string, AgentDefinition>): Promise<number> {
    let released = 0;
    for (const bead of this.board.allHeld()) {
      const sessionId = bead.metadata?.[ASSIGNED_SESSION];
      if (!sessionId) continue;
      const session = this.host.sessions.openById(sessionId);
      const alive =
        session &&
        session.state !== 'closed' &&
        (session.running || ['creating', 'start-pending', 'draining'].includes(session.state));
      if (alive) continue;
      try {
        const reopened = await this.host.beads.update(bead.id, {
          status: 'open',
          assignee: '',
          metadata: { [ASSIGNED_SESSION]: '' },
        });
        this.board.released(sessionId, reopened);
        const routedTo = reopened.metadata?.[ROUTED_TO];
        await this.host.log.append({
          type: 'bead.dead_assignee_reopened',
          actor: 'ctl',
          subject: bead.id,
          message: `${bead.assignee ?? sessionId} is gone; the bead is open again${routedTo && byName.has(routedTo) ? ` for ${routedTo}` : ''}`,
          payload: {
            bead_id: bead.id,
            ...(bead.assignee ? { dead_assignee: bead.assignee } : {}),
            ...(routedTo ? { routed_to: routedTo } : {}),
          },
        });
        released++;
      } catch (err) {
        this.host.logger.warn({ err, bead: bead.id }, 'could not reopen a dead assignee’s bead');
      }
    }
    return released;
  }

  /** Sessions the controller started for agents no longer configured drain, then close. */
  private async retireOrphans(byName: Map<string, AgentDefinition>, report: TickReport): Promise<void> {
    for (const session of this.host.sessions.all()) {
      if (session.record.kind !== 'agent' || session.record.managed !== 'tick' || session.state === 'closed') continue;
      if (session.changing) continue;
      if (byName.has(session.record.template) || this.draining.has(session.id)) continue;
      if (session.running && !session.idle) {
        this.draining.set(session.id, 'close');
        if (session.state === 'active') session.transition('drain');
        await session.recordLifecycle('session.draining', `agent ${session.record.template} is no longer configured`);
        continue;
      }
      report.stopped++;
      void this.host.sessions.close(session.id, false).catch(() => undefined);
    }
    // Drains of orphans finish here too (they have no agent to be looked at with).
    for (const [id, then] of this.draining) {
      const session = this.host.sessions.openById(id);
      if (!session || session.state === 'closed') {
        this.draining.delete(id);
        continue;
      }
      if (byName.has(session.record.template)) continue;
      if (session.running && session.inTurn) continue;
      this.draining.delete(id);
      report.stopped++;
      if (then === 'close') void this.host.sessions.close(id, false).catch(() => undefined);
    }
  }

  // -------------------------------------------------------------------------------------------------------
  // What the tick hears

  private heard(records: EventRecord[]): void {
    let relevant = false;
    for (const record of records) {
      if (record.type.startsWith('bead.') || record.type.startsWith('convoy.')) {
        this.board.changed();
        relevant = true;
      } else if (record.type === 'mail.sent' || record.type === 'mail.replied') {
        const message = (record.payload as { message?: { id: string; to: string; from: string; subject: string } })
          .message;
        if (message) this.mailArrived(message);
        this.board.changed();
        relevant = true;
      } else if (
        record.type === 'city.suspended' ||
        record.type === 'city.resumed' ||
        record.type.startsWith('config.')
      ) {
        relevant = true;
      }
    }
    if (relevant) this.poke();
  }

  /** Mail to an agent (by its name, or one of its sessions' names) wakes or nudges one of its sessions. */
  private mailArrived(message: { id: string; to: string; from: string; subject: string }): void {
    const agents = this.host.agents();
    let agent = agents.find((a) => a.name === message.to);
    if (!agent) {
      const session = this.host.sessions.bySessionName(message.to);
      if (session?.record.kind === 'agent') agent = agents.find((a) => a.name === session.record.template);
    }
    if (!agent) return;
    const list = this.mailNotices.get(agent.name) ?? [];
    list.push({ id: message.id, from: message.from, subject: message.subject });
    this.mailNotices.set(agent.name, list);
  }

  private watchSession(session: Session): void {
    session.on('state', () => this.poke());
    session.on('activity', (activity) => {
      if (activity === 'idle') this.poke();
    });
    session.on('ended', ({ crashed, ran_ms }) => {
      if (!crashed || session.record.kind !== 'agent') {
        this.poke();
        return;
      }
      void this.crashed(session, ran_ms);
    });
  }

  /**
   * A session of an agent ended without being asked to. A failure of the provider's service (a rate limit, a
   * refused key) is no crash: it waits and tries again without counting. Otherwise a run shorter than
   * `restart_window` counts as a fast failure: restarts back off (doubling), and after `max_restarts` fast
   * failures in a row the session is quarantined until a person wakes it.
   */
  private async crashed(session: Session, ranMs: number): Promise<void> {
    const daemon = this.host.daemon();
    const failure = session.lastTurnFailure;
    const serviceFailure =
      failure && Date.now() - failure.at < 30_000 && ['rate_limited', 'auth'].includes(failure.category);
    if (serviceFailure) {
      const rateLimited = failure.category === 'rate_limited';
      this.crashes.pause(
        session.id,
        rateLimited ? 30_000 : daemon.restartBackoffMaxMs,
        rateLimited
          ? 'its provider is rate-limited; not counted as a failure'
          : 'its provider refused its credentials; not counted as a failure',
      );
      this.poke();
      return;
    }
    const count = this.crashes.failed(session.id, ranMs < daemon.restartWindowMs, daemon);
    if (count >= daemon.maxRestarts && (session.state === 'asleep' || session.state === 'failed-create')) {
      session.transition('quarantine');
      await session.recordLifecycle(
        'session.quarantined',
        `it failed ${count} times in a row within ${Math.round(daemon.restartWindowMs / 1000)} s of starting; wake it to try again`,
      );
    }
    this.poke();
  }

  private checkAnswered(key: string, result: CheckResult): void {
    const [agent, check] = splitKey(key);
    const memory = this.memoryOf(agent);
    const error = result.error ? `${check} ${result.error}` : undefined;
    if (error !== memory.checkError) {
      memory.checkError = error;
      if (error) {
        void this.host.log.append({
          type: 'agent.check_failed',
          actor: 'ctl',
          subject: agent,
          message: error,
          payload: { agent, reason: error },
        });
      }
    }
    this.poke();
  }

  // -------------------------------------------------------------------------------------------------------
  // Helpers

  private runChecks(agent: AgentDefinition, daemon: CityDaemonConfig): void {
    if (!agent.config.scale_check && !agent.config.work_query) return;
    // process.env is read key by key through the C++ environment: copied once, not per agent per tick.
    this.baseEnv ??= { ...this.host.env };
    const env = { ...this.baseEnv, ...agent.config.env, CTL_CITY: this.host.cityName, CTL_AGENT: agent.name };
    const options = { cwd: agent.workDir, env, timeoutMs: daemon.checkTimeoutMs, everyMs: daemon.patrolIntervalMs };
    if (agent.config.scale_check) this.checks.run(`${agent.name}:scale_check`, agent.config.scale_check, options);
    if (agent.config.work_query) this.checks.run(`${agent.name}:work_query`, agent.config.work_query, options);
  }

  private checkLines(agent: AgentDefinition, check: 'work_query' | 'scale_check'): string[] | undefined {
    if (!agent.config[check]) return undefined;
    return this.checks.result(`${agent.name}:${check}`)?.lines;
  }

  /** The number `scale_check` printed last (its first line), when it has and it is a number. */
  private scaleOf(agent: AgentDefinition): number | undefined {
    const line = this.checkLines(agent, 'scale_check')?.[0];
    if (line === undefined || !/^\d+$/.test(line)) return undefined;
    return Number(line);
  }

  private suspended(agent: AgentDefinition): boolean {
    return this.suspendReason(agent) !== undefined;
  }

  /** Why the agent is suspended (the city, itself, its rig), or undefined. */
  private suspendReason(agent: AgentDefinition): string | undefined {
    return suspensionOf(agent, this.suspension);
  }

  /** Why the agent cannot start now for its dependencies, if it cannot. */
  private dependencyNotRunning(agent: AgentDefinition, byName: Map<string, AgentDefinition>): string | undefined {
    for (const name of agent.config.depends_on) {
      const dep = dependencyOf(agent, name, byName);
      if (!dep) continue;
      const up = this.host.sessions.agentSessions(dep.name).some((s) => s.isReady);
      if (!up) return `waiting for ${dep.name}, which it depends on, to run`;
    }
    return undefined;
  }

  private async reportWait(agent: AgentDefinition, memory: AgentMemory, reason: string | undefined): Promise<void> {
    if (reason === memory.waitReason) return;
    memory.waitReason = reason;
    if (reason === undefined) return;
    await this.host.log.append({
      type: 'agent.waiting',
      actor: 'ctl',
      subject: agent.name,
      message: reason,
      payload: { agent: agent.name, reason },
    });
  }

  private wakeReason(index: number, wanted: number, mail: boolean, session: Session): string {
    if (this.board.heldBy(session.id).length > 0) return 'woken: it holds work';
    if (index < wanted) return 'woken: work is routed to its agent';
    if (mail && index === 0) return 'woken: mail for its agent';
    return this.crashes.count(session.id) > 0 ? 'restarted after it failed' : 'woken: min_active_sessions';
  }

  private memoryOf(agent: string): AgentMemory {
    let memory = this.memory.get(agent);
    if (!memory) {
      memory = {};
      this.memory.set(agent, memory);
    }
    return memory;
  }

  private schedulePatrol(): void {
    clearTimeout(this.timer);
    this.patrolMs = this.host.daemon().patrolIntervalMs;
    const patrol = () => {
      this.poke();
      this.timer = setTimeout(patrol, this.patrolMs);
      this.timer.unref();
    };
    this.timer = setTimeout(patrol, this.patrolMs);
    this.timer.unref();
  }

  /** A tick in `ms` (a back-off or an idle time-out ends then), besides the patrol. */
  /** One pending look at missing programs at a time, however many ticks find one missing. */
  private recheckPrograms(): void {
    if (this.stopped || this.programRecheck) return;
    this.programRecheck = setTimeout(() => {
      this.programRecheck = undefined;
      this.poke();
    }, PROGRAM_RECHECK_MS).unref();
  }

  private retickIn(ms: number): void {
    if (this.stopped) return;
    setTimeout(() => this.poke(), Math.max(ms, 10) + 5).unref();
  }
}

/** Agents in `depends_on` order: an agent comes after those it depends on. */
function inDependencyOrder(agents: AgentDefinition[], byName: Map<string, AgentDefinition>): AgentDefinition[] {
  const out: AgentDefinition[] = [];
  const seen = new Set<string>();
  const visit = (agent: AgentDefinition, depth: number) => {
    if (seen.has(agent.name) || depth > agents.length) return;
    seen.add(agent.name);
    for (const name of agent.config.depends_on) {
      const dep = dependencyOf(agent, name, byName);
      if (dep) visit(dep, depth + 1);
    }
    out.push(agent);
  };
  for (const agent of agents) visit(agent, 0);
  return out;
}

/** Running sessions first, then the others, oldest first within each. */
function byRunningThenAge(a: Session, b: Session): number {
  const rank = (s: Session) => (s.running || s.state === 'creating' || s.state === 'start-pending' ? 0 : 1);
  return (
    rank(a) - rank(b) ||
    (a.record.created_at < b.record.created_at
      ? -1
      : a.record.created_at > b.record.created_at
        ? 1
        : a.id < b.id
          ? -1
          : 1)
  );
}

/**
 * A session the tick may start: dormant, and not kept dormant by a person (suspended through the sessions API)
 * or by quarantine. One the tick suspended with its agent wakes once the agent is resumed.
 */
function wakeable(session: Session): boolean {
  if (session.running || session.changing) return false;
  if (session.state === 'suspended') return session.record.reason?.startsWith(SUSPENDED_WITH_AGENT) === true;
  return ['asleep', 'failed-create', 'drained'].includes(session.state);
}

function splitKey(key: string): [string, string] {
  const i = key.lastIndexOf(':');
  return [key.slice(0, i), key.slice(i + 1)];
}

/** What a session is told when it is handed a bead. */
export function workMessage(bead: Bead): string {
  // One line: a program that reads a line per turn takes it as one turn.
  const title = bead.title.replace(/\s+/g, ' ');
  return `Work on bead ${bead.id}: ${title} (details: ctl bead show ${bead.id}; when it is done: ctl bead close ${bead.id})`;
}
