/** SSE settings shared by the supervisor and the controllers it starts (which inherit its environment). */
export interface StreamSettings {
  heartbeatMs: number;
  /** Unread bytes after which a slow subscriber is disconnected (it resumes by its last id). */
  maxBufferedBytes: number;
  /** Live events held for a subscriber while it replays history, before it is disconnected instead. */
  maxQueuedEvents: number;
  /** A replaying subscriber that takes nothing for this long is disconnected (it resumes by its last id). */
  stallMs: number;
  /**
   * The `retry:` every stream sends first: how soon a browser's EventSource reconnects after a break (its own
   * default is 3 s). A city stream asked for during a restart is held until the city runs, so soon is safe.
   */
  retryMs: number;
}

export function streamSettings(env: NodeJS.ProcessEnv = process.env, heartbeatMs?: number): StreamSettings {
  const number = (value: string | undefined, fallback: number) => {
    const n = Number(value);
    return value !== undefined && Number.isFinite(n) && n > 0 ? n : fallback;
  };
  return {
    heartbeatMs: heartbeatMs ?? number(env.CTL_SSE_HEARTBEAT_MS, 15_000),
    maxBufferedBytes: number(env.CTL_SSE_MAX_BUFFERED_BYTES, 8 * 1024 * 1024),
    maxQueuedEvents: number(env.CTL_SSE_MAX_QUEUED_EVENTS, 100_000),
    stallMs: number(env.CTL_SSE_STALL_MS, 60_000),
    retryMs: number(env.CTL_SSE_RETRY_MS, 1000),
  };
}
