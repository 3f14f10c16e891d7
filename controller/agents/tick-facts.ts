import type { Bead } from '../../shared/dto/beads.js';
import type { SessionState } from '../../shared/dto/sessions.js';
import type { SessionRecord } from '../sessions/session-store.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { PlacementHost } from '../hosts/placement.js';

/*
 * What the tick's planner (tick-plan.ts) takes and gives: facts of agents and sessions, the memory it keeps
 * between runs, and the actions the apply step (tick-apply.ts) carries out.
 */

/** What the tick sees of a session when it plans. */
export interface SessionFacts {
  id: string;
  sessionName: string;
  template: string;
  kind: 'agent' | 'provider';
  managed?: string;
  state: SessionState;
  createdAt: string;
  configHash?: string;
  running: boolean;
  /** A restart is under way (between its stop and its start it only looks asleep). */
  changing: boolean;
  idle: boolean;
  inTurn: boolean;
  /** Ready to take a turn. */
  ready: boolean;
  attached: boolean;
  /** When it last became idle (ms since the epoch). */
  idleSince: number;
  /** When its program last became ready (ms since the epoch; 0 while none runs): its age counts from then. */
  readySince: number;
  /** The tick suspended it with its agent (city, rig): resumed, it wakes again. A person's suspend does not. */
  suspendedByTick: boolean;
  /** The host it was placed on (`local` when it names none). */
  host?: string;
  /** It has taken a turn (it may have work of its own where it runs); one that never did may move to another host. */
  tookTurn: boolean;
  /**
   * Lost with its host (and closed since, or not): until when its program there may still run (ms since the
   * epoch); its beads wait for it.
   */
  lostUntil?: number;
}

/** What the tick sees of an agent when it plans. */
export interface AgentFacts {
  agent: AgentDefinition;
  /** Why it is suspended (the city, itself, its rig), or undefined. */
  suspended?: string;
  /** The number `scale_check` printed last, when it did. */
  scale?: number;
  /** How many lines `work_query` printed last that name no bead ready to hand out (undefined: it has none, or it has not answered yet). */
  queryLines?: number;
  /** Why its program cannot run (not installed), or undefined. */
  programMissing?: string;
}

/** A session's crash back-off, as the crash tracker holds it. */
export interface CrashFacts {
  /** No start before this (ms since the epoch). */
  notBefore: number;
  why: string;
  /** Failures in a row. */
  count: number;
  /** It is quarantined until then (ms since the epoch): then it may start again. */
  quarantinedUntil?: number;
}

/** What the tick remembers between runs (in memory: a new controller starts afresh). */
export interface TickMemory {
  /** Sessions put to sleep for idleness: only work or mail wakes them. */
  sleptIdle: Set<string>;
  /** Sessions asked to drain, and what follows once their turn ends (or their drain times out). */
  draining: Map<string, 'suspend' | 'close' | 'restart'>;
  /** When each drain began (ms since the epoch): `drain_timeout` after it, the session stops anyway. */
  drainSince: Map<string, number>;
  /** Sessions whose restart for a configuration change waits for them to be idle. */
  restartPending: Set<string>;
  /** Why each agent last waited (an `agent.waiting` is recorded only when it changes). */
  waitReasons: Map<string, string | undefined>;
  /** Why a session each agent wants could not be placed on any of its hosts, as the last run found. */
  unplaceable: Map<string, string>;
}

export function emptyMemory(): TickMemory {
  return {
    sleptIdle: new Set(),
    draining: new Map(),
    drainSince: new Map(),
    restartPending: new Set(),
    waitReasons: new Map(),
    unplaceable: new Map(),
  };
}

export interface TickInput {
  /** ms since the epoch. */
  now: number;
  maxWakesPerTick: number;
  agents: AgentFacts[];
  /** Every open session (of agents configured or not, and of providers). */
  sessions: SessionFacts[];
  /** Ready beads routed to each agent and not taken, oldest first. */
  routed: ReadonlyMap<string, readonly Bead[]>;
  /** The beads each session holds, by session id. */
  held: ReadonlyMap<string, readonly Bead[]>;
  /** Mail not yet told, by agent (how many messages). */
  mail: ReadonlyMap<string, number>;
  crashes: ReadonlyMap<string, CrashFacts>;
  memory: TickMemory;
  /**
   * The city's hosts (`local` and each `[[host]]`), for placing new sessions and waking placed ones; absent:
   * every session runs here, unplaced.
   */
  hosts?: readonly PlacementHost[];
}

type ConfigChanges = Pick<SessionRecord, 'config_hash' | 'provider' | 'work_dir'>;

/** One thing the tick does; `tick-apply.ts` carries each out, in order. */
export type TickAction =
  /** A bead held by a session that is gone goes back to open (still routed). */
  | { kind: 'reopen'; bead: Bead; sessionId: string; message: string }
  /** A busy session drains (its turn finishes first); `transition` moves it to `draining` now. */
  | { kind: 'drain'; sessionId: string; transition: boolean; reason: string }
  /** The session closes; `note` is recorded (`session.draining`) first. */
  | { kind: 'close'; sessionId: string; note?: string }
  /** The session is suspended with its agent (marked so: resumed, it wakes again). */
  | { kind: 'suspend'; sessionId: string; reason: string }
  /** A dormant session takes its agent's new configuration for its next start. */
  | { kind: 'reconfigure'; sessionId: string; changes: ConfigChanges }
  /** An idle session restarts on its agent's new configuration. */
  | { kind: 'restart'; sessionId: string; reason: string; changes: ConfigChanges }
  /** A busy or attached session restarts once it is idle: recorded once. */
  | { kind: 'restart-pending'; sessionId: string; reason: string }
  /** A dormant session started again; on `host` when it moves there (it never took a turn where it was). */
  | { kind: 'wake'; sessionId: string; reason: string; host?: string }
  /** A new session of the agent, on `host` (placed; absent: this machine). */
  | { kind: 'start'; agent: AgentDefinition; reason: string; host?: string }
  /** The agent waits for something (recorded as `agent.waiting` when the reason changes). */
  | { kind: 'wait'; agent: string; reason: string }
  /** The bead is handed to the session, which is told so (and its agent's `nudge`, when it has one). */
  | { kind: 'assign'; sessionId: string; agent: string; bead: Bead; nudge?: string }
  /** The agent's mail is told to this session (and its agent's `nudge`, when it has one). */
  | { kind: 'tell-mail'; sessionId: string; agent: string; nudge?: string }
  | { kind: 'sleep'; sessionId: string; reason: string }
  /** A quarantined session's quarantine has run its time: it is asleep again, its failures forgotten. */
  | { kind: 'lift-quarantine'; sessionId: string; reason: string };

export interface TickPlan {
  actions: TickAction[];
  /** What the tick remembers for its next run. */
  memory: TickMemory;
  /** Why each agent does not start a session it wants (undefined: it does not wait). */
  waits: Map<string, string | undefined>;
  /** A tick is wanted this soon (a back-off or an idle time-out ends then), besides the patrol. */
  retickInMs?: number;
  started: number;
  woke: number;
  stopped: number;
  /** Starts left for the next tick (the per-tick bound was reached). */
  deferred: number;
}
