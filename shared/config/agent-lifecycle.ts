import { parseDuration } from '../duration.js';
import { ConfigError } from './config-error.js';
import type { CityAgentConfig } from './city-config-types.js';

/**
 * An agent's keys about its sessions' lives, as the reference names them: commands run around a start, the text
 * it is nudged with, how it wakes, how old a session may get, how long a drain may take, files laid into its
 * work directory, and when an idle one sleeps.
 */
export type AgentLifecycle = Pick<
  CityAgentConfig,
  | 'pre_start'
  | 'session_setup'
  | 'session_setup_script'
  | 'nudge'
  | 'wake_mode'
  | 'max_session_age_ms'
  | 'max_session_age_jitter_ms'
  | 'drain_timeout_ms'
  | 'overlay_dir'
  | 'sleep_after_idle_ms'
>;

/** Each key of an agent's table and the field of `CityAgentConfig` it sets (a patch or defaults copies it). */
export const LIFECYCLE_KEYS: Record<string, keyof AgentLifecycle> = {
  pre_start: 'pre_start',
  session_setup: 'session_setup',
  session_setup_script: 'session_setup_script',
  nudge: 'nudge',
  wake_mode: 'wake_mode',
  max_session_age: 'max_session_age_ms',
  max_session_age_jitter: 'max_session_age_jitter_ms',
  drain_timeout: 'drain_timeout_ms',
  overlay_dir: 'overlay_dir',
  sleep_after_idle: 'sleep_after_idle_ms',
};

/** The lifecycle keys of one agent's table, checked; `at` names a key in errors. */
export function parseAgentLifecycle(agent: Record<string, unknown>, at: (key: string) => string): AgentLifecycle {
  const out: AgentLifecycle = {};
  for (const key of ['pre_start', 'session_setup'] as const) {
    const v = agent[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.some((c) => typeof c !== 'string' || c.trim() === '')) {
      throw new ConfigError(`${at(key)} must be an array of shell commands`);
    }
    if (v.length) out[key] = v as string[];
  }
  for (const key of ['session_setup_script', 'nudge', 'overlay_dir'] as const) {
    const v = agent[key];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ConfigError(`${at(key)} must be a string`);
    if (v.trim() !== '') out[key] = key === 'nudge' ? v.trim() : v;
  }
  const wake = agent.wake_mode;
  if (wake !== undefined) {
    if (wake !== 'resume' && wake !== 'fresh') {
      throw new ConfigError(`${at('wake_mode')} must be "resume" or "fresh" (got ${JSON.stringify(wake)})`);
    }
    out.wake_mode = wake;
  }
  const durations = [
    ['max_session_age', 'max_session_age_ms'],
    ['max_session_age_jitter', 'max_session_age_jitter_ms'],
    ['drain_timeout', 'drain_timeout_ms'],
  ] as const;
  for (const [key, field] of durations) {
    const ms = duration(agent, key, at);
    if (ms !== undefined && ms > 0) out[field] = ms;
  }
  const sleep = agent.sleep_after_idle;
  if (sleep === 'off') out.sleep_after_idle_ms = 0;
  else {
    const ms = duration(agent, 'sleep_after_idle', at, ' or "off"');
    if (ms !== undefined) out.sleep_after_idle_ms = ms;
  }
  return out;
}

/**
 * How long an idle session of the agent runs before it sleeps: `idle_timeout`, else `sleep_after_idle` (the
 * reference's name; `off` or 0: never), else never.
 */
export function idleLimitOf(config: Pick<CityAgentConfig, 'idle_timeout_ms' | 'sleep_after_idle_ms'>) {
  if (config.idle_timeout_ms !== undefined) return config.idle_timeout_ms;
  return config.sleep_after_idle_ms ? config.sleep_after_idle_ms : undefined;
}

function duration(t: Record<string, unknown>, key: string, at: (key: string) => string, more = ''): number | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  const bad = () =>
    new ConfigError(`${at(key)} must be a duration such as 30s, 5m or 1h30m${more} (got ${JSON.stringify(v)})`);
  if (typeof v !== 'string') throw bad();
  try {
    const ms = parseDuration(v);
    if (ms < 0) throw bad();
    return ms;
  } catch {
    throw bad();
  }
}
