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
import { suspensionOf, type AgentDefinition, type Suspension } from '../agent-catalog/agent-catalog.js';
import { AgentChecks, type CheckResult } from './agent-checks.js';
import { CrashTracker } from './crash-tracker.js';
import { MailNotices } from './mail-notices.js';
import { applyTickPlan } from './tick-apply.js';
import { emptyMemory, type AgentFacts, type SessionFacts, type TickMemory } from './tick-facts.js';
import { planTick } from './tick-plan.js';
import { queriedWork } from './queried-work.js';
import { WorkBoard } from './work-board.js';
import type { WorkHolding } from './work-holding.js';
import type { PlacementHost } from '../hosts/placement.js';

export interface TickHost {
  cityName: string;
  cityRoot: string;
  log: EventLog;
  beads: BeadsService;
  sessions: SessionService;
  /** Holding and releasing work: the tick's hand-overs and releases, and the sessions' held-bead files. */
  holding: Pick<WorkHolding, 'hold' | 'release' | 'syncFiles'>;
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
  /** The city's hosts as last checked, new sessions placed among them (absent: every session runs here). */
  hosts?(): readonly PlacementHost[];
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
 * This file is the scheduler: it reads what each run needs (agents, sessions, the work board, check answers,
 * mail, crash back-offs), asks `planTick` (tick-plan.ts: every policy, pure) what to do, and has
 * `applyTickPlan` (tick-apply.ts) carry it out. Crash back-off and quarantine are in crash-tracker.ts, mail
 * notices in mail-notices.ts. Every change it makes to a session or a bead is an event.
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
  /** What the planner remembers between runs (drains, idle sleeps, pending restarts, wait reasons). */
  private planMemory: TickMemory = emptyMemory();
  private readonly mail = new MailNotices();
  private patrolMs = 0;
  /** How long its last runs took, for the city status. */
  private readonly runStats = new RunStats();
  private baseEnv: NodeJS.ProcessEnv | undefined;

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
    return this.planMemory.restartPending.has(sessionId);
  }

  /** Why the agent's program cannot run, as the last tick found. */
  programMissing(agent: string): string | undefined {
    return this.memory.get(agent)?.programMissing;
  }

  /** Why an agent does not start a session it wants, if it does not. */
  waitReason(agent: string): string | undefined {
    return this.planMemory.waitReasons.get(agent);
  }

  /** Why a session the agent wants cannot be placed on any of its hosts, as the last tick found. */
  unplaceableReason(agent: string): string | undefined {
    return this.planMemory.unplaceable.get(agent);
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
    const daemon = this.host.daemon();
    if (daemon.patrolIntervalMs !== this.patrolMs) this.schedulePatrol();
    const agents = this.host.agents();
    const suspension = this.host.suspension();
    this.board.refresh(agents.map((a) => a.name));

    const facts: AgentFacts[] = [];
    // Routed beads, with the beads each agent's work_query names added after them.
    const queried = new Map<string, readonly Bead[]>(this.board.allRouted());
    const now = new Date().toISOString();
    for (const agent of agents) {
      const suspended = suspensionOf(agent, suspension);
      const known: AgentFacts = { agent, suspended };
      facts.push(known);
      if (suspended !== undefined) continue;
      this.runChecks(agent, daemon);
      if (!agent.available) continue;
      known.scale = this.scaleOf(agent);
      const lines = this.checkLines(agent, 'work_query');
      if (lines) {
        const found = queriedWork(this.host.beads, lines, this.board.routedReady(agent.name), now);
        known.queryLines = found.otherLines;
        if (found.beads.length) queried.set(agent.name, [...this.board.routedReady(agent.name), ...found.beads]);
      }
      // Its program not installed: every start would fail and crash-loop into quarantine; wait for it instead.
      known.programMissing = await this.host.programMissing?.(agent);
      // Nothing is told when it gets installed: look again soon rather than at the next patrol.
      if (known.programMissing) this.recheckPrograms();
      this.memoryOf(agent.name).programMissing = known.programMissing;
    }

    const sessions = [...this.host.sessions.all()];
    for (const session of sessions) {
      // Quarantined before this controller started: its time counts from now.
      if (session.state === 'quarantined' && !this.crashes.knowsQuarantine(session.id))
        this.crashes.quarantined(session.id, daemon);
    }
    const plan = planTick({
      now: Date.now(),
      maxWakesPerTick: daemon.maxWakesPerTick,
      agents: facts,
      sessions: sessions.map(factsOf),
      routed: queried,
      held: this.board.allHolding(),
      mail: this.mail.counts(),
      crashes: this.crashes.facts(),
      memory: this.planMemory,
      ...(this.host.hosts ? { hosts: this.host.hosts() } : {}),
    });
    this.planMemory = plan.memory;
    if (plan.retickInMs !== undefined) this.retickIn(plan.retickInMs);
    const applied = await applyTickPlan(plan, {
      log: this.host.log,
      sessions: this.host.sessions,
      holding: this.host.holding,
      logger: this.host.logger,
      board: this.board,
      mail: this.mail,
      forgive: (id) => this.crashes.forget(id),
    });
    // After the plan: the board has what others changed (read above) and what this tick handed over or let go.
    this.host.holding.syncFiles(this.host.sessions.all(), (id) => this.board.heldBy(id)[0]?.id);
    return {
      ms: performance.now() - started,
      started: plan.started,
      woke: plan.woke,
      stopped: plan.stopped,
      assigned: applied.assigned,
      released: applied.released,
      deferred: plan.deferred,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // What the tick hears

  private heard(records: EventRecord[]): void {
    let relevant = false;
    for (const record of records) {
      // A `convoy.*` event follows the `bead.*` event of the same change: it is not news twice. The tick's own
      // hand-overs and releases are on its board already (`WorkBoard.heard`): only what others did is news.
      if (record.type.startsWith('bead.')) {
        if (this.board.heard(record)) relevant = true;
      } else if (record.type === 'mail.sent' || record.type === 'mail.replied') {
        const message = (record.payload as { message?: { id: string; to: string; from: string; subject: string } })
          .message;
        if (message) this.mail.arrived(message, this.host.agents(), this.host.sessions);
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
      void this.crashes
        .crashed(session, ran_ms, this.host.daemon())
        .catch((err: unknown) => this.host.logger.warn({ err, session: session.id }, 'could not quarantine a session'))
        .finally(() => this.poke());
    });
  }

  private checkAnswered(key: string, result: CheckResult): void {
    const [agent, check] = splitKey(key);
    const memory = this.memoryOf(agent);
    const error = result.error ? `${check} ${result.error}` : undefined;
    if (error !== memory.checkError) {
      memory.checkError = error;
      if (error) {
        void this.host.log
          .append({
            type: 'agent.check_failed',
            actor: 'ctl',
            subject: agent,
            message: error,
            payload: { agent, reason: error },
          })
          .catch((err: unknown) => this.host.logger.warn({ err, agent }, 'could not record agent.check_failed'));
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

function splitKey(key: string): [string, string] {
  const i = key.lastIndexOf(':');
  return [key.slice(0, i), key.slice(i + 1)];
}

/** What the planner needs of a session, read once per tick. */
function factsOf(session: Session): SessionFacts {
  const record = session.record;
  return {
    id: session.id,
    sessionName: record.session_name,
    template: record.template,
    kind: record.kind,
    managed: record.managed,
    state: session.state,
    createdAt: record.created_at,
    configHash: record.config_hash,
    running: session.running,
    changing: session.changing,
    idle: session.idle,
    inTurn: session.inTurn,
    ready: session.isReady,
    attached: session.attached,
    idleSince: session.idleSince,
    readySince: session.readySince,
    suspendedByTick: record.suspended_by === 'tick',
    tookTurn: record.last_active !== undefined,
    ...(record.host ? { host: record.host } : {}),
    ...(record.lost_until ? { lostUntil: Date.parse(record.lost_until) } : {}),
  };
}
