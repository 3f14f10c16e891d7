import { usageOf } from './usage-log.js';

/** A session's tokens over all its turns, and its context as of its last turn that reported usage. */
export interface SessionUsage {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd?: number;
  /** The model its last turn ran on, as the program said (else as chosen). */
  model?: string;
  /** The tokens of the context its last turn's model read (prompt and history). */
  context_tokens?: number;
  /** That model's context window, as the program reported it, else from its provider's table. */
  context_window?: number;
}

/** What is known of a session's context as a turn ends. */
export interface TurnContext {
  model?: string;
  tokens?: number;
  window?: number;
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;

/**
 * The context of a turn as its provider reported it. A protocol that knows better than the turn's summed usage
 * says so in the turn's data: `model` (the model it ran on), `context_tokens` (the prompt of its last model
 * call: Claude Code's last assistant message) and `context_window` (Claude Code's `modelUsage.contextWindow`).
 * Otherwise the tokens come from the turn's usage — ACP's `usage_update` (`used` of `size`); OpenAI's shape
 * (Codex), whose `input_tokens` holds the cached ones, summed over the turn's model calls; Anthropic's, whose
 * cache reads and writes come on top of `input_tokens` — and the window from the provider's table by model.
 */
export function turnContext(
  data: Record<string, unknown>,
  chosen: { model?: string; windows: Record<string, number> },
): TurnContext {
  const model = typeof data.model === 'string' && data.model ? data.model : chosen.model;
  const usage = (typeof data.usage === 'object' && data.usage !== null ? data.usage : {}) as Record<string, unknown>;
  let tokens = count(data.context_tokens);
  let window = count(data.context_window);
  if (tokens === undefined) {
    if (count(usage.used) !== undefined) tokens = count(usage.used);
    else if (count(usage.input_tokens) !== undefined) {
      tokens =
        usage.cached_input_tokens !== undefined
          ? count(usage.input_tokens)
          : count(usage.input_tokens)! +
            (count(usage.cache_read_input_tokens) ?? 0) +
            (count(usage.cache_creation_input_tokens) ?? 0);
    }
  }
  if (window === undefined) window = count(usage.size);
  if ((window === undefined || window === 0) && model !== undefined && Object.hasOwn(chosen.windows, model)) {
    window = chosen.windows[model];
  }
  return {
    ...(model !== undefined ? { model } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(window ? { window } : {}),
  };
}

/** `tokens` as a whole percentage of `window`, once both are known. */
export function contextPct(tokens: number | undefined, window: number | undefined): number | undefined {
  if (tokens === undefined || !window) return undefined;
  return Math.round((100 * tokens) / window);
}

/**
 * A session's usage with one more turn's: its tokens added, its context (model, tokens, window) the newest.
 * Undefined when the turn reported nothing to add and there was nothing before.
 */
export function withTurnUsage(
  before: SessionUsage | undefined,
  data: Record<string, unknown>,
  chosen: { model?: string; windows: Record<string, number> },
): SessionUsage | undefined {
  const used = usageOf(data);
  const context = turnContext(data, chosen);
  if (!used && context.tokens === undefined && context.model === undefined) return before;
  const totals: SessionUsage = before
    ? { ...before }
    : { turns: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0 };
  if (used) {
    totals.turns += 1;
    totals.input_tokens += used.input_tokens;
    totals.output_tokens += used.output_tokens;
    totals.cache_read_tokens += used.cache_read_tokens;
    totals.cache_creation_tokens += used.cache_creation_tokens;
    if (used.cost_usd !== undefined) {
      totals.cost_usd = Math.round(((totals.cost_usd ?? 0) + used.cost_usd) * 1e6) / 1e6;
    }
  }
  if (context.model !== undefined) totals.model = context.model;
  if (context.tokens !== undefined) {
    totals.context_tokens = context.tokens;
    if (context.window !== undefined) totals.context_window = context.window;
    else delete totals.context_window;
  }
  return totals;
}
