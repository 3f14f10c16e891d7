import { randomBytes } from 'node:crypto';
// Types only: the SDK itself is loaded by the first ACP session (see `start`).
import type * as Acp from '@agentclientprotocol/sdk';
import type {
  ClientConnection,
  PermissionOption,
  RequestPermissionOutcome,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
} from '@agentclientprotocol/sdk';
import { Problem } from '../../../shared/http/problem.js';
import { VERSION } from '../../../shared/version.js';
import { ChildProgram, commandArgv } from '../pipe/child-program.js';
import { programArgs } from '../pipe/pipe-runtime.js';
import type { ProgramExit, RuntimeCapabilities, RuntimeOptions, RuntimeSink, SessionRuntime } from '../runtime.js';
import { MessageStream } from './message-stream.js';
import { describe, reportUpdate } from './session-updates.js';

/** An agent that would not finish the handshake is asked to end, and killed after this long. */
const FAILED_START_GRACE_MS = 1000;

/**
 * Lets the connection finish dispatching what it has read. Its handlers run as microtask chains started in
 * arrival order, while an answer settles its request at once: when `session/prompt` (or `session/load`) is
 * answered, the `session/update`s sent before the answer may still be on their way to our handler. One macrotask
 * later they have all arrived.
 */
const afterDispatch = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A permission request of the agent's, waiting for a person. */
interface Asked {
  options: PermissionOption[];
  answer: (outcome: RequestPermissionOutcome) => void;
}

/** A prompt in progress (its identity tells a late answer from the current one). */
type Turn = { cancelled: boolean };

/** The option an answer picks: one the person named in `text`, else the agent's "once" option, else its "always". */
function chooseOption(
  options: PermissionOption[],
  answer: { action: string; text?: string },
): PermissionOption | undefined {
  const kinds = answer.action === 'allow' ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  const named = options.find((o) => o.optionId === answer.text && kinds.includes(o.kind));
  return named ?? options.find((o) => o.kind === kinds[0]) ?? options.find((o) => o.kind === kinds[1]);
}

/**
 * The ACP runtime: the Agent Client Protocol (JSON-RPC 2.0 over the program's stdin and stdout), as Gemini CLI and
 * the Claude Code and Codex ACP adapters speak it. The program is a child of the controller over our own pipes in
 * a process group of its own (`ChildProgram`), like the pipe runtime's; what differs is the conversation: requests
 * both ways, answers that come later, a handshake before the first message.
 *
 * We speak it through the official SDK (`@agentclientprotocol/sdk`) rather than by hand: it validates every message
 * against the protocol's schema before our handlers see it, answers what we do not serve (files, terminals) as the
 * protocol says, and follows the protocol's methods as they evolve.
 *
 * - start: `initialize` (no file system or terminal offered: the agent uses its own tools), then `session/load` of
 *   the provider's conversation id when resuming and the agent can load, else `session/new` (cwd = the work dir);
 *   the start fails with the agent's reason when it refuses or does not finish within the start time-out.
 * - a message is a `session/prompt`; its `session/update`s are the turn's output; its answer (`stopReason`) ends
 *   the turn. One prompt at a time, as the protocol has it.
 * - `session/request_permission` is a pending interaction; allow or deny picks the agent's allow_once or
 *   reject_once option (or the option named in the answer's text); a cancelled turn or the program's end answers
 *   it `cancelled`.
 * - interrupt is `session/cancel`: the agent ends the turn with stopReason `cancelled`.
 */
export class AcpRuntime implements SessionRuntime {
  readonly capabilities: RuntimeCapabilities = {
    interrupt: true,
    pending: true,
    // ACP has session modes, not our permission modes: a mode's flags take effect when the program next starts.
    liveModeChange: false,
    concurrentTurns: false,
  };
  private program: ChildProgram | undefined;
  private messages: MessageStream | undefined;
  private connection: ClientConnection | undefined;
  private sdk: typeof Acp | undefined;
  /** The agent's own id for this conversation: our `provider_session_key`. */
  private agentSessionId: string | undefined;
  /** A loading agent replays the conversation; our transcript has it already. */
  private loading = false;
  /** Until the handshake is over, `start` decides what the session hears of the program's end. */
  private handshaking = false;
  private stopping = false;
  private exit: ProgramExit | undefined;
  private turn: Turn | undefined;
  private usage: Record<string, unknown> | undefined;
  private readonly asked = new Map<string, Asked>();

  constructor(
    private readonly options: RuntimeOptions,
    private readonly sink: RuntimeSink,
  ) {}

  get pid(): number | undefined {
    return this.program?.pid;
  }

  isRunning(): boolean {
    return this.program?.isRunning === true;
  }

  async start(): Promise<void> {
    // Loaded by the first ACP session, not by every controller: most cities never run one.
    const sdk = (this.sdk = await import('@agentclientprotocol/sdk'));
    const { provider } = this.options;
    // An ACP agent takes its first message as a prompt like any other, never on its command line.
    const argv = commandArgv(provider.command, programArgs(provider, { ...this.options, firstMessage: undefined }));
    const program: ChildProgram = await ChildProgram.start(
      this.options.host,
      { argv, cwd: this.options.workDir, env: this.options.env },
      (lines) => {
        this.messages?.lines(lines);
        const behind = this.sink.behind();
        if (behind) program.holdOutput(behind);
      },
    );
    this.program = program;
    const messages = new MessageStream(
      (text) => program.write(text),
      (line) => this.sink.output('error', line),
    );
    this.messages = messages;
    this.connection = sdk
      .client({ name: 'ctl' })
      .onRequest(sdk.methods.client.session.requestPermission, ({ params, signal }) =>
        this.askPermission(params, signal),
      )
      .onNotification(sdk.methods.client.session.update, ({ params }) => this.updated(params))
      .connect(messages.stream);
    this.handshaking = true;
    void program.exited.then((exit) => this.ended(exit));

    let notes: string[] = [];
    let failure: unknown;
    try {
      notes = await this.handshake(sdk, program);
    } catch (err) {
      failure = err;
    }
    if (failure !== undefined && this.exit === undefined && !this.stopping) {
      // It runs but would not talk (refused, or too slow): it ends, and the start fails with why.
      await program.stop(FAILED_START_GRACE_MS);
      throw new Error(messageOf(failure));
    }
    this.handshaking = false;
    if (this.exit !== undefined) {
      // It ended during the handshake (on its own, or asked to): the session hears it as any end before ready.
      const exit = this.exit;
      setImmediate(() => this.sink.exited(exit));
      return;
    }
    if (failure !== undefined) return; // asked to stop: its end is coming, and reported by `ended`
    if (this.options.firstMessage !== undefined) {
      // A first message the agent refused is not the start's failure: the turn's own end says what happened.
      await this.deliver({ id: 'first', text: this.options.firstMessage }).catch((err: unknown) =>
        this.options.logger.warn({ err }, 'the first message could not be delivered'),
      );
    }
    // Ready after the session has recorded the start (which it does once this resolves).
    setImmediate(() => {
      if (!this.isRunning()) return;
      for (const note of notes) this.sink.output('error', note);
      this.sink.ready();
    });
  }

  async deliver(message: { id: string; text: string }): Promise<void> {
    const { connection, messages, sdk, agentSessionId: sessionId } = this;
    if (!connection || !messages || !sdk || sessionId === undefined || !this.isRunning()) {
      throw new Error('the program is not running');
    }
    const method = sdk.methods.agent.session.prompt;
    const written = messages.written((m) => 'method' in m && m.method === method);
    const turn: Turn = { cancelled: false };
    this.turn = turn;
    this.usage = undefined;
    void connection.agent.request(method, { sessionId, prompt: [{ type: 'text', text: message.text }] }).then(
      async (response) => {
        await afterDispatch();
        this.endTurn(turn, { stop_reason: response.stopReason });
      },
      async (err: unknown) => {
        await afterDispatch();
        // A program that went away ends its turn as it goes (`ended`).
        if (this.turn !== turn || !this.isRunning()) return;
        this.sink.output('error', `the agent failed the prompt: ${messageOf(err)}`);
        this.endTurn(turn, { stop_reason: 'error', error: messageOf(err) });
      },
    );
    await written;
  }

  async interrupt(): Promise<boolean> {
    const { connection, sdk, turn, agentSessionId: sessionId } = this;
    if (!connection || !sdk || !turn || sessionId === undefined || !this.isRunning()) return false;
    // The protocol's order: the questions of the turn are answered cancelled, then the agent is told to stop.
    turn.cancelled = true;
    this.cancelAsked();
    await connection.agent.notify(sdk.methods.agent.session.cancel, { sessionId });
    return true;
  }

  async respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    const asked = this.asked.get(requestId);
    if (!asked) throw new Error(`no pending interaction ${requestId}`);
    const option = chooseOption(asked.options, answer);
    if (!option) {
      const offered = asked.options.map((o) => `${o.optionId} (${o.kind})`).join(', ');
      const message = `the agent offered no option to ${answer.action} (it offered ${offered})`;
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'body.action', message, value: answer.action }],
      });
    }
    this.asked.delete(requestId);
    asked.answer({ outcome: 'selected', optionId: option.optionId });
    this.sink.pendingCleared(requestId, answer.action);
  }

  async setPermissionMode(_mode: string): Promise<boolean> {
    return false;
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    await this.program?.stop(graceMs);
  }

  /** `initialize`, then `session/load` or `session/new`; bounded by the start time-out and by the program's end. */
  private async handshake(sdk: typeof Acp, program: ChildProgram): Promise<string[]> {
    let timer: NodeJS.Timeout | undefined;
    const seconds = Math.round(this.options.startTimeoutMs / 1000);
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the agent did not finish the ACP handshake within ${seconds} s`)),
        this.options.startTimeoutMs,
      );
    });
    const exited = program.exited.then((exit): never => {
      throw new Error(`the agent exited during the ACP handshake (${exit.code ?? exit.signal})`);
    });
    try {
      return await Promise.race([this.openSession(sdk), timedOut, exited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Returns notes for the transcript: what did not go as asked (a conversation that could not be resumed). */
  private async openSession(sdk: typeof Acp): Promise<string[]> {
    const agent = this.connection!.agent;
    const init = await agent
      .request(sdk.methods.agent.initialize, {
        protocolVersion: sdk.PROTOCOL_VERSION,
        // We serve the agent no files and no terminal: it works in its directory with its own tools.
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: 'ctl', version: VERSION },
      })
      .catch((err: unknown) => {
        throw new Error(`the agent refused initialize: ${messageOf(err)}`);
      });
    if (init.protocolVersion !== sdk.PROTOCOL_VERSION) {
      throw new Error(`the agent speaks ACP version ${init.protocolVersion}; ctl speaks ${sdk.PROTOCOL_VERSION}`);
    }
    const notes: string[] = [];
    const cwd = this.options.workDir;
    const key = this.options.resumeKey;
    if (key !== undefined && init.agentCapabilities?.loadSession) {
      this.loading = true;
      try {
        await agent.request(sdk.methods.agent.session.load, { sessionId: key, cwd, mcpServers: [] });
        this.agentSessionId = key;
      } catch (err) {
        notes.push(`the agent could not load conversation ${key} (${messageOf(err)}): this is a new conversation`);
      } finally {
        await afterDispatch();
        this.loading = false;
      }
    } else if (key !== undefined) {
      notes.push(`the agent cannot load conversations: conversation ${key} is not resumed, this is a new one`);
    }
    if (this.agentSessionId === undefined) {
      const created = await agent.request(sdk.methods.agent.session.new, { cwd, mcpServers: [] }).catch((err) => {
        throw new Error(`the agent refused session/new: ${messageOf(err)}`);
      });
      this.agentSessionId = created.sessionId;
    }
    this.sink.sessionKey(this.agentSessionId);
    return notes;
  }

  private updated(notification: SessionNotification): void {
    if (this.loading || notification.sessionId !== this.agentSessionId) return;
    const { usage } = reportUpdate(notification.update, this.sink);
    if (usage) this.usage = usage;
  }

  private askPermission(params: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse> {
    // A question about another conversation, or from a turn already cancelled, gets the protocol's "cancelled".
    if (params.sessionId !== this.agentSessionId || this.turn?.cancelled) {
      return Promise.resolve({ outcome: { outcome: 'cancelled' } });
    }
    const requestId = `acp-${randomBytes(8).toString('hex')}`;
    const { toolCall } = params;
    const title = toolCall.title ?? toolCall.name ?? 'a tool call';
    return new Promise((resolve) => {
      this.asked.set(requestId, { options: params.options, answer: (outcome) => resolve({ outcome }) });
      // The agent withdrew it ($/cancel_request), or the connection closed.
      signal.addEventListener('abort', () => this.withdraw(requestId), { once: true });
      this.sink.pending({
        request_id: requestId,
        kind: 'tool-approval',
        prompt: `Allow ${title}?${toolCall.rawInput !== undefined ? ` ${describe(toolCall.rawInput, 500)}` : ''}`,
        options: ['allow', 'deny'],
        metadata: {
          tool_call_id: toolCall.toolCallId,
          title,
          ...(toolCall.kind ? { tool_kind: toolCall.kind } : {}),
          ...(toolCall.rawInput !== undefined ? { input: describe(toolCall.rawInput) } : {}),
          agent_options: params.options.map((o) => `${o.optionId} (${o.kind}): ${o.name}`).join('; '),
        },
        created_at: new Date().toISOString(),
      });
    });
  }

  private withdraw(requestId: string): void {
    const asked = this.asked.get(requestId);
    if (!asked) return;
    this.asked.delete(requestId);
    asked.answer({ outcome: 'cancelled' });
    this.sink.pendingCleared(requestId, 'cancelled');
  }

  /** Answers every permission request still waiting `cancelled`. */
  private cancelAsked(): void {
    for (const requestId of [...this.asked.keys()]) this.withdraw(requestId);
  }

  private endTurn(turn: Turn, data: Record<string, unknown>): void {
    if (this.turn !== turn) return;
    this.turn = undefined;
    this.cancelAsked();
    this.sink.turnEnded({ ...data, ...(this.usage ? { usage: this.usage } : {}) });
  }

  private ended(exit: ProgramExit): void {
    this.exit = exit;
    this.messages?.close();
    if (this.handshaking) return;
    this.cancelAsked();
    if (this.turn) this.endTurn(this.turn, { stop_reason: 'ended' });
    this.sink.exited(exit);
  }
}
