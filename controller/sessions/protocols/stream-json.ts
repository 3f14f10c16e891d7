import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import type { ResolvedProvider } from '../../providers/provider-spec.js';
import type { RuntimeCapabilities, RuntimeSink } from '../runtime.js';
import type { ProgramIO, Protocol } from './protocol.js';

/** The model Claude Code names on a message it made up itself (an API error worded as a reply). */
const SYNTHETIC_MODEL = '<synthetic>';

/** Claude Code's words for a `--resume` of a conversation it does not have. */
const NO_CONVERSATION = /no conversation found/i;

/** How long a control request of ours (interrupt, permission mode) waits for the program's answer. */
const CONTROL_TIMEOUT_MS = 10_000;

interface ContentBlock {
  type?: string;
  text?: string;
  name?: string;
  /** `thinking`: the reasoning and its signature. */
  thinking?: string;
  signature?: string;
  id?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
}

interface Frame {
  type?: string;
  subtype?: string;
  session_id?: string;
  message?: { role?: string; model?: string; content?: string | ContentBlock[]; usage?: Record<string, unknown> };
  /** `system`/`init`: the model the conversation runs on. */
  model?: string;
  /** `result`: usage by model, each with its `contextWindow`. */
  modelUsage?: Record<string, { contextWindow?: unknown } | undefined>;
  request_id?: string;
  request?: { subtype?: string; tool_name?: string; input?: unknown; tool_use_id?: string; [key: string]: unknown };
  response?: { subtype?: string; request_id?: string; error?: string; response?: unknown };
  result?: unknown;
  usage?: unknown;
  total_cost_usd?: unknown;
  /** A `compact_boundary`'s: what compacted the conversation (`auto`, `manual`) and how many tokens it held. */
  compact_metadata?: { trigger?: unknown; pre_tokens?: unknown };
  num_turns?: unknown;
  duration_ms?: unknown;
  is_error?: unknown;
  /** Claude Code: the model API's HTTP status when a turn failed on it. */
  api_error_status?: unknown;
  stop_reason?: unknown;
  /** Claude Code: why a turn could not run at all (`No conversation found with session ID: …`). */
  errors?: unknown;
  /** Claude Code: set on a subagent's frames — the Task/Agent call of the main conversation that started it. */
  parent_tool_use_id?: string | null;
  /** Claude Code: the subagent a frame is of (newer versions; older ones name only its Task call). */
  agent_id?: string;
  /** Claude Code `task_started` / `task_notification`: the task (a subagent's is its agent id) and its call. */
  task_id?: string;
  task_type?: string;
  tool_use_id?: string;
  status?: string;
  summary?: string;
  description?: string;
  subagent_type?: string;
  prompt?: string;
}

/** A tool call or result as a line for people: `Bash {"command":"ls"}`. */
function describe(value: unknown, limit = 2000): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((c: ContentBlock) => (c.type === 'text' ? (c.text ?? '') : describe(c))).join('\n');
  }
  return describe(content);
}

/**
 * The `stream-json` protocol, as Claude Code speaks it with `-p --input-format stream-json --output-format
 * stream-json --verbose --permission-prompt-tool stdio`: one JSON object per line each way. In: user messages,
 * our control requests (`interrupt`, `set_permission_mode`) and our answers to its `can_use_tool` requests. Out:
 * `system` (its session id), `assistant` (text and tool calls), `user` (tool results), `result` (the turn is
 * over), and its own control requests and responses. The program reads stdin from the start: it is ready at once.
 */
export class StreamJsonProtocol implements Protocol {
  readonly capabilities: RuntimeCapabilities = {
    interrupt: true,
    pending: true,
    liveModeChange: true,
    concurrentTurns: true,
  };
  private io: ProgramIO | undefined;
  private inTurn = false;
  /** Our messages handed over whose turn has not ended (each ends with its own `result`). */
  private owed = 0;
  /** A turn the program began itself (Claude Code, when a background subagent is done) is in progress. */
  private ownTurn = false;
  /** The model the main conversation runs on, as Claude Code last named it. */
  private model: string | undefined;
  /** The usage of the main conversation's latest model call in this turn. */
  private lastCallUsage: Record<string, unknown> | undefined;
  /** We asked the current turn to stop: its error result is the answer, not a failure. */
  private interrupting = false;
  /** Its `can_use_tool` requests waiting for an answer, with the input an `allow` hands back. */
  private readonly asked = new Map<string, unknown>();
  /** The subagents it started (task id → the Task call's id), so that their end is told to them. */
  private readonly subagents = new Map<string, string>();
  /** Our control requests waiting for its `control_response`. */
  private readonly waiting = new Map<string, (ok: boolean) => void>();
  private readyTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly provider: ResolvedProvider,
    private readonly sink: RuntimeSink,
    private readonly logger: Logger,
  ) {}

  started(io: ProgramIO): void {
    this.io = io;
    this.readyTimer = setTimeout(() => this.sink.ready(), this.provider.ready_delay_ms);
  }

  lines(lines: string[]): void {
    for (const line of lines) {
      if (line.trim() === '') continue;
      let frame: Frame;
      try {
        frame = JSON.parse(line) as Frame;
      } catch {
        // Not protocol: keep what it said, it may explain a failure.
        this.sink.output('error', line);
        continue;
      }
      this.frame(frame);
    }
  }

  async deliver(message: { id: string; text: string }): Promise<void> {
    this.inTurn = true;
    this.owed++;
    await this.send({ type: 'user', message: { role: 'user', content: message.text } });
  }

  async interrupt(): Promise<boolean> {
    if (!this.inTurn && !this.ownTurn) return false;
    this.interrupting = true;
    return this.control({ subtype: 'interrupt' });
  }

  async respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    if (!this.asked.has(requestId)) throw new Error(`no pending interaction ${requestId}`);
    const input = this.asked.get(requestId);
    this.asked.delete(requestId);
    const allow = answer.action === 'allow';
    const decision = allow
      ? { behavior: 'allow', updatedInput: input ?? {} }
      : {
          behavior: 'deny',
          message: answer.text ?? `denied by ${answer.action === 'deny' ? 'the user' : answer.action}`,
        };
    await this.send({
      type: 'control_response',
      response: { subtype: 'success', request_id: requestId, response: decision },
    });
    this.sink.pendingCleared(requestId, allow ? 'allow' : 'deny');
  }

  setPermissionMode(mode: string): Promise<boolean> {
    return this.control({ subtype: 'set_permission_mode', mode });
  }

  ended(): void {
    clearTimeout(this.readyTimer);
    for (const id of this.asked.keys()) this.sink.pendingCleared(id, 'abandoned');
    this.asked.clear();
    for (const settle of this.waiting.values()) settle(false);
    this.waiting.clear();
    if (this.inTurn || this.ownTurn) {
      this.inTurn = false;
      this.ownTurn = false;
      this.owed = 0;
      this.sink.turnEnded({ ended: true });
    }
  }

  private frame(frame: Frame): void {
    // The conversation id to resume with, once there is a conversation to resume: Claude Code names its session
    // in `system` frames before any turn (a mode change's status), but `--resume` of a session without a turn
    // fails ("No conversation found"). Its `init` comes with a turn; its `result` ends one.
    if (frame.session_id && ((frame.type === 'system' && frame.subtype === 'init') || frame.type === 'result'))
      this.sink.sessionKey(frame.session_id);
    // A subagent's own turns (Claude Code's Task/Agent tool) are not the agent's: its words must not become the
    // session's reply. The main conversation keeps the Task call and its result.
    if (typeof frame.parent_tool_use_id === 'string' && frame.parent_tool_use_id) {
      this.subagentFrame(frame, frame.parent_tool_use_id);
      return;
    }
    // Every turn opens with an `init`; one no message of ours asked for is the program's own (Claude Code starts
    // one when a background subagent is done, its `result` saying `origin: task-notification`).
    if (frame.type === 'system' && frame.subtype === 'init' && this.owed === 0 && !this.ownTurn) {
      this.ownTurn = true;
      this.sink.turnBegan('the program began a turn of its own');
    }
    if (frame.type === 'system' && frame.subtype === 'init' && typeof frame.model === 'string') {
      this.model = frame.model;
    }
    switch (frame.type) {
      case 'assistant':
        // Each model call of the main conversation: the last one's prompt is the context the turn ends with.
        if (frame.message?.model && frame.message.model !== SYNTHETIC_MODEL) this.model = frame.message.model;
        if (frame.message?.usage && frame.message.model !== SYNTHETIC_MODEL) this.lastCallUsage = frame.message.usage;
        for (const block of this.blocks(frame)) {
          // Claude Code words an API failure as an assistant message of model `<synthetic>`: it is an error of
          // the turn, not the model's reply.
          if (block.type === 'text' && block.text && frame.message?.model === SYNTHETIC_MODEL) {
            this.sink.output('error', block.text);
          } else if (block.type === 'text' && block.text) this.sink.output('assistant', block.text, { frame });
          else if (block.type === 'thinking' && block.thinking) {
            // Its reasoning: kept in the transcript (structured transcripts give it on request), not its reply.
            this.sink.output('thought', block.thinking, block.signature ? { signature: block.signature } : {});
          } else if (block.type === 'tool_use') {
            this.sink.output('tool_call', `${block.name ?? 'tool'} ${describe(block.input)}`, {
              tool_use_id: block.id,
              name: block.name,
              input: block.input,
            });
          }
        }
        return;
      case 'user':
        for (const block of this.blocks(frame)) {
          if (block.type === 'tool_result') {
            this.sink.output('tool_result', resultText(block.content), {
              tool_use_id: block.tool_use_id,
              ...(block.is_error ? { is_error: true } : {}),
            });
          }
        }
        return;
      case 'result': {
        if (this.owed > 0) this.owed--;
        else this.ownTurn = false;
        this.inTurn = this.owed > 0;
        const status = typeof frame.api_error_status === 'number' ? frame.api_error_status : undefined;
        const errors = Array.isArray(frame.errors) ? frame.errors.filter((e) => typeof e === 'string') : [];
        if (errors.some((e) => NO_CONVERSATION.test(e))) this.sink.resumeRefused(errors.join('; '));
        // A turn we interrupted ends `error_during_execution` (with a diagnostic among its errors): asked for, not
        // a failure.
        const interrupted = this.interrupting && frame.subtype === 'error_during_execution';
        this.interrupting = false;
        const failed = frame.is_error === true && !interrupted;
        this.sink.turnEnded(
          {
            subtype: frame.subtype,
            ...(frame.stop_reason !== undefined ? { stop_reason: frame.stop_reason } : {}),
            ...(frame.usage !== undefined ? { usage: frame.usage } : {}),
            ...(frame.total_cost_usd !== undefined ? { total_cost_usd: frame.total_cost_usd } : {}),
            ...(frame.num_turns !== undefined ? { num_turns: frame.num_turns } : {}),
            ...(frame.duration_ms !== undefined ? { duration_ms: frame.duration_ms } : {}),
            ...(frame.is_error ? { is_error: true } : {}),
            ...this.context(frame),
          },
          failed
            ? {
                message:
                  errors.join('; ') ||
                  (typeof frame.result === 'string' && frame.result ? frame.result : `turn failed (${frame.subtype})`),
                ...(status !== undefined ? { status } : {}),
              }
            : undefined,
        );
        return;
      }
      case 'control_request':
        this.controlRequest(frame);
        return;
      case 'control_response': {
        const id = frame.response?.request_id;
        const settle = id === undefined ? undefined : this.waiting.get(id);
        if (settle) {
          this.waiting.delete(id!);
          settle(frame.response?.subtype === 'success');
        }
        return;
      }
      case 'system':
        if (frame.subtype === 'compact_boundary') {
          // Claude Code summarised the conversation so far: a boundary in the transcript, counted per session.
          const meta = frame.compact_metadata ?? {};
          const trigger = typeof meta.trigger === 'string' ? meta.trigger : 'auto';
          this.sink.output('notice', `conversation compacted (${trigger})`, {
            compaction: true,
            trigger,
            ...(typeof meta.pre_tokens === 'number' ? { pre_tokens: meta.pre_tokens } : {}),
          });
          return;
        }
        this.subagentTask(frame);
        return;
      default:
      // Whatever else it says: its session id is taken above; the rest is not conversation.
    }
  }

  /** A frame of a subagent: its prompt, its replies, its tool calls and their results. */
  private subagentFrame(frame: Frame, parent: string): void {
    const agent = { agent_id: frame.agent_id || parent, parent_tool_use_id: parent };
    for (const block of this.blocks(frame)) {
      if (block.type === 'text' && block.text) {
        this.sink.subagent({ ...agent, kind: frame.type === 'assistant' ? 'assistant' : 'user', text: block.text });
      } else if (block.type === 'tool_use') {
        this.sink.subagent({
          ...agent,
          kind: 'tool_call',
          text: `${block.name ?? 'tool'} ${describe(block.input)}`,
          data: { tool_use_id: block.id, name: block.name, input: block.input },
        });
      } else if (block.type === 'tool_result') {
        this.sink.subagent({
          ...agent,
          kind: 'tool_result',
          text: resultText(block.content),
          data: { tool_use_id: block.tool_use_id, ...(block.is_error ? { is_error: true } : {}) },
        });
      }
    }
  }

  /** Claude Code's `task_started` and `task_notification` of a subagent: its start and its end. */
  private subagentTask(frame: Frame): void {
    const task = frame.task_id;
    const call = frame.tool_use_id;
    if (!task || !call) return;
    if (frame.subtype === 'task_started' && frame.task_type === 'local_agent') {
      this.subagents.set(task, call);
      this.sink.subagent({
        agent_id: task,
        parent_tool_use_id: call,
        kind: 'start',
        ...(frame.prompt !== undefined ? { text: frame.prompt } : {}),
        data: {
          ...(frame.description !== undefined ? { description: frame.description } : {}),
          ...(frame.subagent_type !== undefined ? { subagent_type: frame.subagent_type } : {}),
        },
      });
    } else if (frame.subtype === 'task_notification' && this.subagents.get(task) === call) {
      this.subagents.delete(task);
      this.sink.subagent({
        agent_id: task,
        parent_tool_use_id: call,
        kind: 'turn_end',
        data: {
          status: frame.status ?? 'completed',
          ...(frame.summary !== undefined ? { summary: frame.summary } : {}),
          ...(frame.usage !== undefined ? { usage: frame.usage } : {}),
        },
      });
    }
  }

  /**
   * What the turn's `result` tells of the context: the model (the main conversation's, not a subagent's), the
   * prompt of its last model call (input, cache reads and cache writes: Anthropic counts them apart), and that
   * model's window from `modelUsage`.
   */
  private context(frame: Frame): Record<string, unknown> {
    const usage = this.lastCallUsage;
    this.lastCallUsage = undefined;
    const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    const window = this.model !== undefined ? frame.modelUsage?.[this.model]?.contextWindow : undefined;
    return {
      ...(this.model !== undefined ? { model: this.model } : {}),
      ...(usage
        ? {
            context_tokens:
              n(usage.input_tokens) + n(usage.cache_read_input_tokens) + n(usage.cache_creation_input_tokens),
          }
        : {}),
      ...(typeof window === 'number' && window > 0 ? { context_window: window } : {}),
    };
  }

  private blocks(frame: Frame): ContentBlock[] {
    const content = frame.message?.content;
    if (typeof content === 'string') return [{ type: 'text', text: content }];
    return Array.isArray(content) ? content : [];
  }

  /** Its own control requests: `can_use_tool` becomes a pending interaction; anything else we cannot serve. */
  private controlRequest(frame: Frame): void {
    const id = frame.request_id;
    if (!id) return;
    const request = frame.request ?? {};
    if (request.subtype === 'can_use_tool') {
      const tool = request.tool_name ?? 'a tool';
      this.asked.set(id, request.input);
      this.sink.pending({
        request_id: id,
        kind: 'tool-approval',
        prompt: `Allow ${tool}? ${describe(request.input, 500)}`,
        options: ['allow', 'deny'],
        metadata: {
          tool_name: tool,
          input: describe(request.input),
          ...(request.tool_use_id ? { tool_use_id: request.tool_use_id } : {}),
        },
        created_at: new Date().toISOString(),
      });
      return;
    }
    void this.send({
      type: 'control_response',
      response: {
        subtype: 'error',
        request_id: id,
        error: `ctl does not handle ${request.subtype ?? 'this'} requests`,
      },
    }).catch((err: unknown) => this.logger.debug({ err }, 'could not refuse a control request'));
  }

  /** Sends a control request of ours; resolves with whether the program answered success (false on time-out). */
  private async control(request: Record<string, unknown>): Promise<boolean> {
    const id = `ctl-${randomBytes(6).toString('hex')}`;
    const answered = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(false);
      }, CONTROL_TIMEOUT_MS);
      this.waiting.set(id, (ok) => {
        clearTimeout(timer);
        resolve(ok);
      });
    });
    await this.send({ type: 'control_request', request_id: id, request });
    return answered;
  }

  private send(frame: Record<string, unknown>): Promise<void> {
    return this.io!.write(`${JSON.stringify(frame)}\n`);
  }
}
