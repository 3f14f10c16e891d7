import {
  optStringList,
  parseAgentTable,
  type CityAgentConfig,
  type CityConfig,
  type ConfigPatch,
} from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { LIFECYCLE_KEYS } from '../../shared/config/agent-lifecycle.js';
import { qualifiedName } from '../agent-catalog/agent-catalog.js';
import { PRESETS } from '../providers/presets.js';
import type { ConfigProblem } from './compose.js';
import {
  REFERENCE_ONLY_AGENT_PATCH_KEYS,
  REFERENCE_ONLY_PROVIDER_PATCH_KEYS,
} from '../config-schema/reference-keys.js';

/** A patch's fields less the reference's keys ctl does not apply (the key audit names those). */
function applicable(fields: Record<string, unknown>, referenceOnly: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([k]) => !Object.hasOwn(referenceOnly, k)));
}

/** The agent keys a patch or `[agent_defaults]` may set (what `[[agent]]` has, less what names it). */
export const AGENT_PATCH_KEYS = [
  'provider',
  'work_dir',
  'scope',
  'suspended',
  'description',
  'prompt',
  'env',
  'option_defaults',
  'min_active_sessions',
  'max_active_sessions',
  'scale_check',
  'work_query',
  'idle_timeout',
  'depends_on',
  'default_sling_formula',
  'isolation',
  'merge',
  'base_branch',
  'hosts',
  ...Object.keys(LIFECYCLE_KEYS),
  'inject_fragments',
  'append_fragments',
] as const;

/** The field of an agent's configuration a key sets (`max_session_age` sets `max_session_age_ms`). */
function fieldOf(key: string): string {
  return Object.hasOwn(LIFECYCLE_KEYS, key) ? LIFECYCLE_KEYS[key]! : key;
}

/** The rig keys a rig patch may set. */
export const RIG_PATCH_KEYS = ['path', 'prefix', 'default_branch', 'suspended'] as const;

/**
 * Lays `[[patches.*]]` over the composed agents, providers and rigs, in file order. A patch that matches
 * nothing, or sets a key the target does not have or a value of the wrong kind, is a problem naming the
 * patch; it is left out and the rest applies.
 */
export function applyPatches(
  config: CityConfig,
  agents: CityAgentConfig[],
  problems: ConfigProblem[],
): { agents: Set<string>; providers: Set<string>; rigs: Set<string> } {
  const patched = { agents: new Set<string>(), providers: new Set<string>(), rigs: new Set<string>() };
  for (const [i, patch] of config.patches.agents.entries()) {
    const key = `patches.agent[${i}]`;
    const target = patch.dir ? `${patch.dir}/${patch.name}` : patch.name;
    const index = agents.findIndex((a) => qualifiedName(a, config.rigs) === target);
    if (index < 0) {
      problems.push({ file: 'city.toml', key, message: `${key}: no agent named ${target} to patch` });
      continue;
    }
    try {
      const fields = applicable(patch.fields, REFERENCE_ONLY_AGENT_PATCH_KEYS);
      agents[index] = patchAgent(agents[index]!, fields, (k) => `city.toml: ${key}.${k}`);
      patched.agents.add(target);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push({ file: 'city.toml', key, message: err.message });
    }
  }
  for (const [i, patch] of config.patches.providers.entries()) {
    const key = `patches.provider[${i}]`;
    const existing = Object.hasOwn(config.providers, patch.name) ? config.providers[patch.name] : undefined;
    if (existing === undefined && !Object.hasOwn(PRESETS, patch.name)) {
      problems.push({ file: 'city.toml', key, message: `${key}: no provider named ${patch.name} to patch` });
      continue;
    }
    const { env_remove: envRemoved, ...fields } = applicable(patch.fields, REFERENCE_ONLY_PROVIDER_PATCH_KEYS);
    let removed: string[];
    try {
      removed = optStringList({ envRemoved }, 'envRemoved', `city.toml: ${key}.env_remove`) ?? [];
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push({ file: 'city.toml', key, message: err.message });
      continue;
    }
    const merged = mergeTable(existing ?? {}, fields);
    // Removed from the provider's own env table, as the reference does (a built-in preset's env stays).
    if (removed.length && isTable(merged.env)) {
      merged.env = Object.fromEntries(Object.entries(merged.env).filter(([k]) => !removed.includes(k)));
    }
    config.providers[patch.name] = merged;
    patched.providers.add(patch.name);
  }
  for (const [i, patch] of config.patches.rigs.entries()) {
    const key = `patches.rig[${i}]`;
    const rig = config.rigs.find((r) => r.name === patch.name);
    if (!rig) {
      problems.push({ file: 'city.toml', key, message: `${key}: no rig named ${patch.name} to patch` });
      continue;
    }
    const wrong = checkRigPatch(patch);
    if (wrong) {
      problems.push({ file: 'city.toml', key, message: `city.toml: ${key}.${wrong}` });
      continue;
    }
    for (const k of RIG_PATCH_KEYS) {
      if (patch.fields[k] === undefined) continue;
      if (k === 'suspended') rig.suspended = patch.fields[k] as boolean;
      else rig[k] = patch.fields[k] as string;
    }
    patched.rigs.add(patch.name);
  }
  return patched;
}

/** `[agent_defaults]`: each key an agent does not set itself (`env` merged, the agent's own winning). */
export function applyAgentDefaults(defaults: Record<string, unknown>, agents: CityAgentConfig[]): void {
  // Keys it does not act on are named by the key audit (reference-keys.ts), not refused here.
  const keys = Object.keys(defaults).filter((k) => (AGENT_PATCH_KEYS as readonly string[]).includes(k));
  if (keys.length === 0) return;
  const parsed = parseAgentTable(
    { ...Object.fromEntries(keys.map((k) => [k, defaults[k]])), name: 'defaults' },
    (k) => `city.toml: agent_defaults.${k}`,
    'city.toml',
  );
  for (const agent of agents) {
    for (const key of keys) {
      if (key === 'env') agent.env = { ...parsed.env, ...agent.env };
      else if (key === 'option_defaults')
        agent.option_defaults = { ...parsed.option_defaults, ...agent.option_defaults };
      else if (key === 'idle_timeout') agent.idle_timeout_ms ??= parsed.idle_timeout_ms;
      else if (key === 'suspended') agent.suspended ||= parsed.suspended;
      else if (key === 'append_fragments')
        agent.append_fragments = [...new Set([...(agent.append_fragments ?? []), ...(parsed.append_fragments ?? [])])];
      else if (key === 'depends_on') agent.depends_on = agent.depends_on.length ? agent.depends_on : parsed.depends_on;
      else if ((agent as unknown as Record<string, unknown>)[fieldOf(key)] === undefined) {
        (agent as unknown as Record<string, unknown>)[fieldOf(key)] = (parsed as unknown as Record<string, unknown>)[
          fieldOf(key)
        ];
      }
    }
  }
}

/** An agent with a patch's keys laid over it; throws a ConfigError naming the key at fault. */
export function patchAgent(
  agent: CityAgentConfig,
  fields: Record<string, unknown>,
  at: (key: string) => string,
): CityAgentConfig {
  const {
    inject_fragments_append: fragmentsAppended,
    pre_start_append: preStartAppended,
    session_setup_append: setupAppended,
    env_remove: envRemoved,
    pool,
    ...rest
  } = fields;
  fields = { ...rest, ...poolFields(pool, at) };
  for (const key of Object.keys(fields)) {
    if (!(AGENT_PATCH_KEYS as readonly string[]).includes(key)) throw new ConfigError(`${at(key)} is not an agent key`);
  }
  // The `_append` lists are checked as the lists they lengthen are (`pre_start_append` as `pre_start`).
  const appended = parseAgentTable(
    {
      name: 'patch',
      ...(preStartAppended !== undefined ? { pre_start: preStartAppended } : {}),
      ...(setupAppended !== undefined ? { session_setup: setupAppended } : {}),
    },
    (k) => at(`${k}_append`),
    agent.source,
  );
  const removed = optStringList({ envRemoved }, 'envRemoved', at('env_remove')) ?? [];
  const parsed = parseAgentTable({ ...fields, name: 'patch' }, at, agent.source);
  const next: CityAgentConfig = { ...agent };
  for (const key of Object.keys(fields)) {
    if (key === 'env') next.env = { ...agent.env, ...parsed.env };
    else if (key === 'option_defaults') next.option_defaults = { ...agent.option_defaults, ...parsed.option_defaults };
    else if (key === 'idle_timeout') next.idle_timeout_ms = parsed.idle_timeout_ms;
    else
      (next as unknown as Record<string, unknown>)[fieldOf(key)] = (parsed as unknown as Record<string, unknown>)[
        fieldOf(key)
      ];
  }
  // As the reference: a list set by the patch first, then what it appends; its env laid over, then keys removed.
  if (fragmentsAppended !== undefined) {
    const more = optStringList({ fragmentsAppended }, 'fragmentsAppended', at('inject_fragments_append'))!;
    next.inject_fragments = [...(next.inject_fragments ?? []), ...more];
  }
  if (appended.pre_start) next.pre_start = [...(next.pre_start ?? []), ...appended.pre_start];
  if (appended.session_setup) next.session_setup = [...(next.session_setup ?? []), ...appended.session_setup];
  if (removed.length) next.env = Object.fromEntries(Object.entries(next.env).filter(([k]) => !removed.includes(k)));
  const min = next.min_active_sessions;
  const max = next.max_active_sessions;
  if (min !== undefined && max !== undefined && min > max) {
    throw new ConfigError(`${at('min_active_sessions')} (${min}) is more than max_active_sessions (${max})`);
  }
  return next;
}

/** The reference's `pool` sub-table's keys and the agent keys they set (`on_death`, `on_boot`: the audit's). */
const POOL_KEYS: Record<string, string> = {
  min: 'min_active_sessions',
  max: 'max_active_sessions',
  check: 'scale_check',
  drain_timeout: 'drain_timeout',
};

/**
 * A patch's `pool = { min, max, check, drain_timeout }` as the agent keys they set, laid after the patch's own
 * (the reference applies the pool last). A wrong value is named by the pool's key.
 */
function poolFields(pool: unknown, at: (key: string) => string): Record<string, unknown> {
  if (pool === undefined) return {};
  if (typeof pool !== 'object' || pool === null || Array.isArray(pool))
    throw new ConfigError(`${at('pool')} must be a table`);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(pool)) if (Object.hasOwn(POOL_KEYS, k)) out[POOL_KEYS[k]!] = v;
  // Checked here, so that a wrong value names `pool.min`, not the key it sets.
  const byField = Object.fromEntries(Object.entries(POOL_KEYS).map(([k, f]) => [f, k]));
  parseAgentTable({ ...out, name: 'pool' }, (f) => at(`pool.${byField[f] ?? f}`), 'pool');
  return out;
}

/** The key of a rig patch that is wrong, with why, or undefined. */
export function checkRigPatch(patch: ConfigPatch): string | undefined {
  for (const [k, v] of Object.entries(patch.fields)) {
    if (!(RIG_PATCH_KEYS as readonly string[]).includes(k))
      return `${k} is not a rig key (${RIG_PATCH_KEYS.join(', ')})`;
    if (k === 'suspended' ? typeof v !== 'boolean' : typeof v !== 'string') {
      return `${k} must be ${k === 'suspended' ? 'true or false' : 'a string'}`;
    }
  }
  return undefined;
}

function mergeTable(base: Record<string, unknown>, fields: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base, ...fields };
  if (isTable(base.env) && isTable(fields.env)) out.env = { ...base.env, ...fields.env };
  if (isTable(base.option_defaults) && isTable(fields.option_defaults)) {
    out.option_defaults = { ...base.option_defaults, ...fields.option_defaults };
  }
  return out;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
