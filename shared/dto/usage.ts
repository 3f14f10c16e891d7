// Usage: the tokens (and, where the provider says, the cost) of the turns a city's sessions took, from what each
// provider reports at the end of a turn.

export interface UsageTotals {
  /**
   * Turns that reported usage.
   * @isInt
   */
  invocations: number;
  /**
   * Of those, turns that said how long they took.
   * @isInt
   */
  compute_facts: number;
  /** @isInt */
  input_tokens: number;
  /** @isInt */
  output_tokens: number;
  /** @isInt */
  cache_read_tokens: number;
  /** @isInt */
  cache_creation_tokens: number;
  /** How long those turns took, in seconds. */
  wall_seconds: number;
  /** What the providers said the turns cost (USD); turns whose provider said nothing are not in it. */
  cost_usd_estimate: number;
  /**
   * Turns without a reported cost.
   * @isInt
   */
  unpriced: number;
}

/** Totals for one session, agent or provider. */
export interface UsageGroup extends UsageTotals {
  /** The session's name, the agent or the provider. */
  name: string;
}

export interface UsageSessionRecent {
  session: string;
  session_id?: string;
  /** @isInt */
  input_tokens: number;
  /** @isInt */
  output_tokens: number;
  /** @isInt */
  cache_read_tokens: number;
  /** @isInt */
  cache_creation_tokens: number;
  cost_usd_estimate: number;
  /** @isInt */
  unpriced: number;
}

/** Body of `GET /v0/city/{cityName}/usage`. */
export interface UsageBody {
  /** Usage is recorded in this city (always: every turn that reports usage is kept). */
  available: boolean;
  recording: boolean;
  /** `local_estimate`: summed from what the providers reported. */
  source: 'local_estimate' | 'unavailable';
  /** Since local midnight. */
  today: UsageTotals;
  /** The trailing 24 hours. */
  last_24h?: UsageTotals;
  /** The trailing `recent_window_secs`. */
  recent: UsageTotals;
  /** @isInt */
  recent_window_secs: number;
  /** Everything read. */
  all?: UsageTotals;
  /** The recent window by session, largest token volume first. */
  recent_by_session?: UsageSessionRecent[];
  /** Everything read, by session, largest first. */
  by_session?: UsageGroup[];
  /** Everything read, by agent (the sessions of an agent), largest first. */
  by_agent?: UsageGroup[];
  /** Everything read, by provider, largest first. */
  by_provider?: UsageGroup[];
  /** The oldest fact read (RFC 3339). */
  observed_from?: string;
  updated_at: string;
  /** Some history was not read (the log is larger than what one request reads) or a line was malformed. */
  partial?: boolean;
  partial_reasons?: string[];
}

/** Tokens over all of a session's (or an agent's sessions') turns, as the providers reported them. */
export interface SessionUsageTotals {
  /**
   * Turns that reported usage.
   * @isInt
   */
  turns: number;
  /** @isInt */
  input_tokens: number;
  /** @isInt */
  output_tokens: number;
  /** @isInt */
  cache_read_tokens: number;
  /** @isInt */
  cache_creation_tokens: number;
  /** What the provider said the turns cost, where it says (Claude Code). */
  cost_usd?: number;
}
