import type { PendingInteraction, SessionResponse } from '../../shared/dto/sessions.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { LOCAL_HOST } from '../hosts/host.js';
import { contextPct } from '../usage/context-usage.js';
import type { SessionRuntime } from './runtime.js';
import { programDir, type SessionRecord } from './session-store.js';

/** What a session's view is made of, as it is now. */
export interface ViewParts {
  record: SessionRecord;
  /** Its provider as the city configures it now (absent when no longer configured). */
  provider: ResolvedProvider | undefined;
  /** Its program's runtime while the program runs. */
  running: SessionRuntime | undefined;
  attached: boolean;
  queued: number;
  activity: 'idle' | 'in-turn';
  lastOutput: string;
  pending: PendingInteraction | undefined;
  /** The options its program starts with (provider's, agent's and its own defaults merged). */
  options: Record<string, string>;
}

/** A session as the API shows it. */
export function sessionView(parts: ViewParts): SessionResponse {
  const { record: r, running } = parts;
  const view: SessionResponse = {
    id: r.id,
    template: r.template,
    title: r.title,
    provider: r.provider,
    session_name: r.session_name,
    state: r.state,
    running: running !== undefined,
    attached: parts.attached,
    created_at: r.created_at,
    kind: r.kind,
    host: r.host ?? LOCAL_HOST,
    work_dir: r.work_dir,
    queued: parts.queued,
    submission_capabilities: { supports_follow_up: true, supports_interrupt_now: true },
  };
  if (r.alias) view.alias = r.alias;
  if (running) view.activity = parts.activity;
  if (r.last_active) view.last_active = r.last_active;
  if (parts.lastOutput) view.last_output = parts.lastOutput;
  if (r.reason) view.reason = r.reason;
  const mode = r.permission_mode ?? parts.provider?.default_permission_mode;
  if (mode) view.permission_mode = mode;
  if (parts.pending) view.pending = parts.pending;
  if (running?.pid !== undefined) view.pid = running.pid;
  if (r.provider_session_key) view.provider_session_key = r.provider_session_key;
  if (running?.attach) view.attach = running.attach;
  if (running?.programStatus) view.program_status = running.programStatus;
  if (Object.keys(parts.options).length > 0) view.options = { ...parts.options };
  const model = r.usage?.model ?? parts.options.model;
  if (model) view.model = model;
  if (r.usage) {
    const u = r.usage;
    view.usage = {
      turns: u.turns,
      input_tokens: u.input_tokens,
      output_tokens: u.output_tokens,
      cache_read_tokens: u.cache_read_tokens,
      cache_creation_tokens: u.cache_creation_tokens,
      ...(u.cost_usd !== undefined ? { cost_usd: u.cost_usd } : {}),
    };
    if (u.context_tokens !== undefined) view.context_tokens = u.context_tokens;
    if (u.context_window !== undefined) view.context_window = u.context_window;
    const pct = contextPct(u.context_tokens, u.context_window);
    if (pct !== undefined) view.context_pct = pct;
  }
  if (r.worktree && r.branch && r.worktree_repo) {
    // Its program works in its worktree (the agent's directory's place in it), not in the rig's checkout.
    view.work_dir = programDir(r);
    view.worktree = {
      path: r.worktree,
      branch: r.branch,
      repository: r.worktree_repo,
      ...(r.base ? { base: r.base } : {}),
    };
  }
  return view;
}

/**
 * The view with what the program shows now (`peek`): a terminal's screen, its last `lines` lines, as
 * `last_output`; for the others, the last `lines` lines of its latest output.
 */
export async function peekView(parts: ViewParts, lines: number): Promise<SessionResponse> {
  const view = sessionView(parts);
  const screen = parts.running?.peek ? await parts.running.peek(lines) : undefined;
  const text = screen ? screen.join('\n') : parts.lastOutput.split('\n').slice(-lines).join('\n');
  if (text) view.last_output = text;
  else delete view.last_output;
  return view;
}
