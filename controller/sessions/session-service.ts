import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type {
  AsyncAcceptedBody,
  CityPendingListBody,
  ListBodySessionResponse,
  SessionCloseResponse,
  SessionCreateBody,
  SessionHookEvent,
  SessionHookResponse,
  SessionPendingResponse,
  SessionWorktreeRelease,
  SessionResetResponse,
  SessionResponse,
  SessionTranscriptResponse,
  SubmitIntent,
} from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { takesSystemPrompt } from './priming.js';
import { programHook } from './program-hooks.js';
import { ClosedSessions } from './closed-sessions.js';
import { Session, type SessionContext } from './session.js';
import { planCreate } from './session-create.js';
import { namesSession, requireFreeName, sessionNameOf, titleOf } from './session-names.js';
import { pendingPage, sessionsPage, type SessionListQuery } from './session-pages.js';
import { resetSession } from './session-reset.js';
import { wakesOnMessage } from './session-states.js';
import { programDir, type SessionRecord } from './session-store.js';
import { transcriptPage, type TranscriptQuery } from './transcript-page.js';
import type { SessionWorktrees } from '../worktrees/session-worktrees.js';
import { workDirOnHost } from '../worktrees/remote-worktree.js';
import { LOCAL_HOST } from '../hosts/host.js';
import type { Placement } from '../hosts/placement.js';

/** `req-` + 24 lowercase hex characters, as every asynchronous request's id. */
function newRequestId(): string {
  return `req-${randomBytes(12).toString('hex')}`;
}

/** Whether sessions of this provider can ask questions or request permissions (and so have `pending`). */
function canAsk(provider: ResolvedProvider | undefined): boolean {
  if (!provider) return false;
  return (
    provider.protocol === 'stream-json' ||
    provider.protocol === 'acp' ||
    provider.pending_pattern !== undefined ||
    provider.runtime === 'tmux'
  );
}

export interface SessionServiceOptions {
  /** The city's agent called `name` now (qualified: `dir/base` for a rig's agent). */
  agent(name: string): AgentDefinition | undefined;
  /** The prompt a new session of an agent starts with. */
  promptOf(agent: AgentDefinition, record: SessionRecord): string | undefined;
  /** The city's default template: its `[workspace] provider`, or `default` for its start command. */
  defaultProvider(): string | undefined;
  /**
   * Where a new session of an agent a person asked for runs (placement.ts over the city's hosts, as the tick
   * places its own); absent: this machine.
   */
  place?(agent: AgentDefinition): Placement;
}

/**
 * A city's sessions: creating them, talking to them, their lifecycle commands, their transcripts. The controller
 * holds every open session; a closed one is read from its bead and transcript when asked for.
 */
export class SessionService {
  private readonly sessions = new Map<string, Session>();
  /** Told of every session the service takes on (created, or found open at start). */
  private readonly openedListeners: ((session: Session) => void)[] = [];
  /** Closed sessions lately asked about (closed-sessions.ts). */
  private readonly closed: ClosedSessions;

  constructor(
    private readonly ctx: SessionContext,
    private readonly options: SessionServiceOptions,
  ) {
    this.closed = new ClosedSessions((record) => new Session(record, this.ctx));
  }

  /**
   * Takes charge of the city's open sessions as a controller starts: whatever a previous controller left running
   * is ended, and the sessions that were running start again — resuming their conversations where the provider
   * can — with their undelivered messages and unfinished creates.
   */
  async start(): Promise<void> {
    const starting: Promise<void>[] = [];
    const open = this.ctx.store.open();
    // What a controller that died half-way left of worktrees: released or removed before anything starts.
    await this.ctx.worktrees
      .prune(open, (name) => this.ctx.store.findByName(name))
      .catch((err: unknown) => this.ctx.logger.error({ err }, 'could not prune the sessions’ worktrees'));
    for (const record of open) {
      const session = new Session(record, this.ctx);
      this.track(session);
      const state = record.state;
      if (state === 'active' || state === 'creating' || state === 'start-pending' || state === 'draining') {
        starting.push(session.wake('restart', 'restarted by a new controller'));
      } else if (wakesOnMessage(state) && session.view().queued > 0) {
        starting.push(session.wake('wake', 'woken by a message'));
      }
    }
    await Promise.all(starting);
  }

  /**
   * Ends every running program; the sessions keep their state, queues and waiting creates: the next controller
   * starts them again and delivers what waited.
   */
  async shutdown(graceMs?: number): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.stopWithController(graceMs)));
  }

  list(query: SessionListQuery): ListBodySessionResponse {
    return sessionsPage(this.ctx.store, query, (record) => this.viewOf(record));
  }

  /** An open session by id, alias or session name. */
  findOpen(idOrName: string): Session | undefined {
    const open =
      this.sessions.get(idOrName) ?? [...this.sessions.values()].find((s) => namesSession(s.record, idOrName));
    return open && open.state !== 'closed' ? open : undefined;
  }

  /** A session by id, alias or session name, open or closed; a 404 otherwise. */
  find(idOrName: string): Session {
    const open =
      this.sessions.get(idOrName) ?? [...this.sessions.values()].find((s) => namesSession(s.record, idOrName));
    if (open) return open;
    const record = this.ctx.store.get(idOrName) ?? this.ctx.store.findByName(idOrName);
    if (!record) throw new Problem('session-not-found', `not_found: session not found: ${idOrName}`);
    return this.closed.of(record);
  }

  /** One session's view; with a worktree, its branch's state read with git. */
  async view(idOrName: string): Promise<SessionResponse> {
    const session = this.find(idOrName);
    return this.withWorktreeState(session, session.view());
  }

  /** The view with what the program shows now, its last `lines` lines. */
  async peek(idOrName: string, lines: number): Promise<SessionResponse> {
    const session = this.find(idOrName);
    return this.withWorktreeState(session, await session.peekView(lines));
  }

  /** The views with what each running program shows now (its screen, or its latest output's last lines). */
  peekAll(views: SessionResponse[], lines: number): Promise<SessionResponse[]> {
    return Promise.all(
      views.map(async (view) => {
        const session = this.sessions.get(view.id);
        if (!session?.running) return view;
        const peeked = await session.peekView(lines);
        return { ...view, ...(peeked.last_output ? { last_output: peeked.last_output } : {}) };
      }),
    );
  }

  private async withWorktreeState(session: Session, view: SessionResponse): Promise<SessionResponse> {
    if (view.worktree && session.state !== 'closed') {
      view.worktree = await this.ctx.worktrees.view(session.record, true);
    }
    return view;
  }

  create(body: SessionCreateBody): AsyncAcceptedBody {
    const plan = planCreate(body, this.ctx, this.options, (alias) =>
      requireFreeName(this.sessions.values(), alias, undefined),
    );
    const { name, kind, agent, provider, workDir, host, options, permissionMode: mode } = plan;
    const isolated = agent?.worktree;
    const cursor = this.ctx.log.head();
    const requestId = newRequestId();
    const record = this.ctx.store.create(
      {
        title: body.title ?? (body.message ? titleOf(body.message) : name),
        state: 'start-pending',
        template: name,
        kind,
        provider: provider.name,
        work_dir: workDir,
        create_request: requestId,
        ...(body.alias ? { alias: body.alias } : {}),
        ...(mode ? { permission_mode: mode } : {}),
        ...(Object.keys(options).length > 0 ? { options } : {}),
        ...(agent ? { config_hash: agent.fingerprint } : {}),
        ...(host ? { host } : {}),
      },
      (id) => sessionNameOf(name, id),
      isolated ? (sessionName) => this.ctx.worktrees.plan(agent.name, isolated, sessionName) : undefined,
    );
    let prompt: string | undefined;
    try {
      prompt = agent ? this.firstTurnPrompt(agent, record, true) : undefined;
    } catch (err) {
      // Its prompt is refused for this session's own values (a 422): no session was made.
      this.ctx.store.delete(record.id);
      throw err;
    }
    const session = new Session(record, this.ctx);
    this.track(session);
    void this.begin(session, prompt, body.message);
    return { status: 'accepted', request_id: requestId, event_cursor: String(cursor), session_id: record.id };
  }

  /** Accepts a message for a session (waking it when it sleeps); its delivery ends the request. */
  send(
    idOrName: string,
    text: string,
    intent: SubmitIntent,
    operation: 'session.message' | 'session.submit',
  ): AsyncAcceptedBody {
    const session = this.open(idOrName);
    if (session.state === 'quarantined') {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: session ${session.id} is quarantined; wake it first (POST …/session/${session.id}/wake)`,
      );
    }
    const cursor = this.ctx.log.head();
    const requestId = newRequestId();
    session.enqueue(text, intent, { request: { id: requestId, operation }, wake: 'woken by a message' });
    return { status: 'accepted', request_id: requestId, event_cursor: String(cursor), session_id: session.id };
  }

  /** `stop`: ends the current turn; the program keeps running. */
  async interrupt(idOrName: string): Promise<{ status: string; id: string }> {
    const session = this.open(idOrName);
    const stopped = await session.interrupt();
    return { status: stopped ? 'ok' : 'idle', id: session.id };
  }

  async kill(idOrName: string): Promise<{ status: string; id: string }> {
    const session = this.open(idOrName);
    await session.kill();
    return { status: 'ok', id: session.id };
  }

  /** `by` is `tick` when the tick suspends it with its agent (it wakes it again); a person's suspend sets none. */
  async suspend(idOrName: string, reason = 'suspended', by?: 'tick'): Promise<SessionResponse> {
    const session = this.open(idOrName);
    session.transition('suspend');
    session.record.reason = reason;
    session.record.suspended_by = by;
    this.ctx.store.save(session.record, { reason, suspended_by: by });
    if (session.running) await session.stopProgram(reason);
    else await session.recordLifecycle('session.suspended', reason);
    return session.view();
  }

  /** A fresh conversation for the session (session-reset.ts), begun with its agent's prompt as at its creation. */
  reset(idOrName: string): Promise<SessionResetResponse> {
    const session = this.open(idOrName);
    const agent = session.record.kind === 'agent' ? this.options.agent(session.record.template) : undefined;
    return resetSession(session, agent ? this.firstTurnPrompt(agent, session.record) : undefined);
  }

  async wake(idOrName: string): Promise<SessionResponse> {
    const session = this.open(idOrName);
    if (session.running)
      throw new Problem('conflict-wrong-state', `conflict: session ${session.id} is already running`);
    await session.wake('wake', 'woken by request');
    return session.view();
  }

  async close(idOrName: string, remove: boolean): Promise<SessionCloseResponse> {
    const session = this.find(idOrName);
    let worktree: SessionWorktreeRelease | undefined;
    if (session.state !== 'closed') {
      session.transition('close');
      await session.stopProgram('closed');
      await session.settleCreate('the session was closed before its program was ready');
      await session.failQueued('session_closed', `session ${session.id} was closed before the message was delivered`);
      // Removed when it holds nothing its base lacks; kept, and said why, when it does.
      worktree = await this.ctx.worktrees.release(session.record);
      await session.recordLifecycle('session.closed', remove ? 'closed and deleted' : 'closed', worktree);
    } else if (!remove) {
      throw new Problem('conflict-wrong-state', `conflict: session ${session.id} is already closed`);
    }
    this.sessions.delete(session.id);
    if (remove) {
      this.closed.forget(session.id);
      this.ctx.store.delete(session.id);
      session.transcript.close();
      rmSync(session.dir, { recursive: true, force: true });
    } else {
      this.closed.of(session.record);
    }
    return { status: remove ? 'deleted' : 'closed', id: session.id, ...(worktree ? { worktree } : {}) };
  }

  async update(idOrName: string, changes: { title?: string; alias?: string }): Promise<SessionResponse> {
    const session = this.open(idOrName);
    if (changes.alias) requireFreeName(this.sessions.values(), changes.alias, session.id);
    session.rename(changes);
    const what = [changes.title !== undefined ? 'title' : '', changes.alias !== undefined ? 'alias' : '']
      .filter(Boolean)
      .join(' and ');
    await session.recordLifecycle('session.updated', `${what || 'nothing'} changed`);
    return session.view();
  }

  async setPermissionMode(idOrName: string, mode: string): Promise<SessionResponse> {
    const session = this.open(idOrName);
    await session.setPermissionMode(mode);
    return session.view();
  }

  async respond(
    idOrName: string,
    answer: { action: string; request_id?: string; text?: string },
  ): Promise<{ status: 'accepted'; id: string; request_id: string }> {
    const session = this.open(idOrName);
    const requestId = await session.respond(answer);
    return { status: 'accepted', id: session.id, request_id: requestId };
  }

  /** What its program's hook reported (`ctl hook-event`); a closed session is gone: 404, and nothing changes. */
  hook(idOrName: string, event: SessionHookEvent, input: Record<string, unknown> | undefined): SessionHookResponse {
    const session = this.find(idOrName);
    if (session.state === 'closed')
      throw new Problem('session-not-found', `not_found: session ${session.id} is closed`);
    return { id: session.id, event, applied: session.hook(programHook(event, input)) };
  }

  pending(idOrName: string): SessionPendingResponse {
    const session = this.find(idOrName);
    const body: SessionPendingResponse = { supported: canAsk(this.ctx.provider(session.record.provider)) };
    if (session.pending) body.pending = session.pending;
    return body;
  }

  /** The city's pending interactions, oldest first, in pages. */
  cityPending(limit: number, cursor?: string): CityPendingListBody {
    return pendingPage(this.sessions.values(), limit, cursor);
  }

  transcript(idOrName: string, query: TranscriptQuery): SessionTranscriptResponse {
    return transcriptPage(this.find(idOrName), query);
  }

  /** Open sessions whose program runs: for the city status. */
  counts(): { active: number; suspended: number; running: number } {
    let active = 0;
    let suspended = 0;
    let running = 0;
    for (const session of this.sessions.values()) {
      if (session.state === 'active') active++;
      if (session.state === 'suspended') suspended++;
      if (session.running) running++;
    }
    return { active, suspended, running };
  }

  /** An open (not closed) session, for anything that changes it. */
  open(idOrName: string): Session {
    const session = this.find(idOrName);
    if (session.state === 'closed')
      throw new Problem('conflict-wrong-state', `conflict: session ${session.id} is closed`);
    return this.sessions.get(session.id) ?? session;
  }

  /**
   * A session of `agent` started by the controller itself (the tick): no request waits for it, and it begins
   * with the agent's prompt, on `host` (placed by the tick; absent or `local`: this machine). Resolves once its
   * program is starting.
   */
  startAgentSession(agent: AgentDefinition, reason: string, host?: string): Session {
    const record = this.ctx.store.create(
      {
        title: agent.name,
        state: 'start-pending',
        template: agent.name,
        kind: 'agent',
        provider: agent.providerName!,
        work_dir: agent.workDir,
        config_hash: agent.fingerprint,
        managed: 'tick',
        reason,
        // This machine is the default: a record names a host only when placement chose another.
        ...(host !== undefined && host !== LOCAL_HOST ? { host } : {}),
      },
      (id) => sessionNameOf(agent.name, id),
      agent.worktree ? (sessionName) => this.ctx.worktrees.plan(agent.name, agent.worktree!, sessionName) : undefined,
    );
    let prompt: string | undefined;
    try {
      prompt = this.firstTurnPrompt(agent, record);
    } catch (err) {
      this.ctx.store.delete(record.id); // its prompt is refused (a 422 Problem): no session was made
      throw err;
    }
    const session = new Session(record, this.ctx);
    this.track(session);
    void this.begin(session, prompt, agent.config.nudge, reason);
    return session;
  }

  /** The open sessions of agent `name`, oldest first. */
  agentSessions(name: string): Session[] {
    const found: Session[] = [];
    for (const session of this.sessions.values()) {
      if (session.record.kind === 'agent' && session.record.template === name) found.push(session);
    }
    return found;
  }

  /** The sessions' git worktrees. */
  get worktrees(): SessionWorktrees {
    return this.ctx.worktrees;
  }

  /**
   * Where a session's program works, as its prompt names it: on a remote host its directory there (its worktree
   * there), once the host is connected; else its directory here.
   */
  workDirOf(record: SessionRecord): string {
    if (record.host === undefined || !this.ctx.hostOf) return programDir(record);
    try {
      const host = this.ctx.hostOf(record);
      return host.remote ? workDirOnHost(host, record) : programDir(record);
    } catch {
      return programDir(record);
    }
  }

  /** A session's record by id, open or closed. */
  recordOf(id: string): SessionRecord | undefined {
    return this.sessions.get(id)?.record ?? this.ctx.store.get(id);
  }

  /** Tells an open session something, waking it if it sleeps; false when it is not open. */
  tell(id: string, text: string, wakeReason: string): boolean {
    const session = this.sessions.get(id);
    if (!session || session.state === 'closed') return false;
    session.enqueue(text, 'default', { wake: wakeReason });
    return true;
  }

  /** An open session by id (undefined once closed and let go). */
  openById(id: string): Session | undefined {
    return this.sessions.get(id);
  }

  /** Every open session. */
  all(): IterableIterator<Session> {
    return this.sessions.values();
  }

  /** An open session by its session name (how work is assigned to it). */
  bySessionName(name: string): Session | undefined {
    for (const session of this.sessions.values()) if (session.record.session_name === name) return session;
    return undefined;
  }

  /** Calls `listener` for every session taken on from now, until the function returned is called. */
  onOpened(listener: (session: Session) => void): () => void {
    this.openedListeners.push(listener);
    return () => {
      const i = this.openedListeners.indexOf(listener);
      if (i >= 0) this.openedListeners.splice(i, 1);
    };
  }

  /**
   * The agent's prompt as the session's first turn, for a program without a system prompt to hand it to (one
   * with is given it at every start instead: session.ts, priming.ts).
   */
  private firstTurnPrompt(agent: AgentDefinition, record: SessionRecord, check = false): string | undefined {
    const provider = this.ctx.provider(record.provider);
    if (provider && takesSystemPrompt(provider)) {
      // Handed over at every start instead; rendered now only to refuse a request whose prompt cannot be.
      if (check) this.options.promptOf(agent, record);
      return undefined;
    }
    return this.options.promptOf(agent, record);
  }

  private track(session: Session): void {
    this.sessions.set(session.id, session);
    for (const listener of this.openedListeners) listener(session);
  }

  private async begin(
    session: Session,
    prompt: string | undefined,
    message: string | undefined,
    reason = 'created',
  ): Promise<void> {
    await session.recordLifecycle('session.created', reason === 'created' ? undefined : reason);
    if (prompt !== undefined) session.enqueue(prompt, 'default');
    if (message !== undefined) session.enqueue(message, 'default');
    await session.wake('start', reason);
  }

  private viewOf(record: SessionRecord): SessionResponse {
    return (this.sessions.get(record.id) ?? this.closed.of(record)).view();
  }
}
