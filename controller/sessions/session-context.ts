import type { Logger } from 'pino';
import type { PendingInteraction, SessionState } from '../../shared/dto/sessions.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { Host } from '../hosts/host.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { UsageFact } from '../usage/usage-log.js';
import type { RuntimeOptions, RuntimeSink, SessionRuntime } from './runtime.js';
import type { SessionWorktrees } from '../worktrees/session-worktrees.js';
import type { SessionRecord, SessionStore } from './session-store.js';
import type { MessageRequest } from './turns.js';
import type { Session } from './session.js';

/** What every session of a city shares. */
export interface SessionContext {
  cityName: string;
  cityRoot: string;
  /** `<city>/.ctl/sessions`: one directory per session. */
  sessionsDir: string;
  store: SessionStore;
  /** The city's event log. */
  log: EventLog;
  logger: Logger;
  /** The provider called `name` as the city's configuration resolves it now. */
  provider(name: string): ResolvedProvider | undefined;
  env: NodeJS.ProcessEnv;
  /** The directory of the controller's `ctl` launcher, first on every program's PATH. */
  ctlBin?: string;
  /**
   * A session starting: the bead it holds now (`CTL_BEAD`, the `{{bead}}` of its prompt), if any, its held-bead
   * file written to say so by whoever owns holding (controller/agents/work-holding.ts).
   */
  heldBead?(session: { id: string; dir: string }): string | undefined;
  /** An agent's session: its agent's prompt as it is now, its template filled in (the bead it holds now). */
  agentPrompt?(record: SessionRecord, bead: string | undefined): string | undefined;
  /** An agent's session: its agent's `env` as it is now. */
  agentEnv?(record: SessionRecord): Record<string, string> | undefined;
  /** An agent's session: its agent's `option_defaults` as they are now. */
  agentOptions?(record: SessionRecord): Record<string, string> | undefined;
  /**
   * Makes the runtime each start of a program runs in: `createRuntime` (runtimes.ts), which spawns it, in a
   * city; an in-memory program in the unit tests that drive a session without any process.
   */
  runtimes(options: RuntimeOptions, sink: RuntimeSink): SessionRuntime;
  /** The host a session's programs run on (this machine when it names none, or in a unit test). */
  hostOf?(record: SessionRecord): Host;
  /**
   * A session's program starting on a host over ssh: a credential minted for it alone, what its `ctl` there acts
   * with; `credentialEnded` when that program has ended (session-credentials.ts).
   */
  credentialFor?(record: SessionRecord, host: Host): string;
  credentialEnded?(record: SessionRecord): void;
  /** How long a program gets between SIGTERM and SIGKILL. */
  stopGraceMs: number;
  /** A program that is not ready this long after it started is taken to have failed. */
  startTimeoutMs: number;
  /** Keeps what a turn used, as its provider reported it. */
  usage?: (fact: UsageFact) => void;
  /** The sessions' git worktrees (agents with `isolation = "worktree"`). */
  worktrees: SessionWorktrees;
  /** Before each start of its program, in `programDir` (an agent's overlay and `pre_start`); throws why not. */
  beforeProgram?(session: Session, programDir: string): Promise<void>;
}

/** What the session stream hears, besides transcript entries. */
export interface SessionEvents {
  entry: [EventRecord];
  activity: ['idle' | 'in-turn'];
  pending: [PendingInteraction];
  pending_cleared: [string];
  state: [SessionState];
  /** Its program ended: `crashed` when nobody asked (or it never became ready); `ran_ms` since it was ready. */
  ended: [{ crashed: boolean; ran_ms: number }];
}

/** How a message is queued: `wake` wakes a sleeping session for it (the reason recorded); `request` ends with it. */
export interface EnqueueOptions {
  wake?: string;
  request?: MessageRequest;
}
