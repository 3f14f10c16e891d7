import { ConfigError } from '../../shared/config/config-error.js';
import { PRESETS } from './presets.js';
import {
  PROMPT_MODES,
  RUNTIME_KINDS,
  WIRE_PROTOCOLS,
  type ProviderSpec,
  type ResolvedProvider,
} from './provider-spec.js';

/** Provider names: what paths and `city.toml` keys carry unescaped. */
export const PROVIDER_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** How long a program without a ready marker must keep running to count as ready. */
const DEFAULT_READY_DELAY_MS = 200;

/** The provider a `[workspace] start_command` stands for: sessions of the city's own program. */
export const WORKSPACE_PROVIDER = 'default';

const BUILTIN_PREFIX = 'builtin:';
const PROVIDER_PREFIX = 'provider:';

/**
 * A `[providers.<name>]` table as a spec, each value checked: a wrong type or an unknown key is an error naming
 * the file, the provider and the key.
 */
export function parseProviderSpec(raw: Record<string, unknown>, where: string): ProviderSpec {
  const spec: ProviderSpec = {};
  const at = (key: string) => `${where}.${key}`;
  for (const [key, value] of Object.entries(raw)) {
    switch (key) {
      case 'base':
      case 'display_name':
      case 'command':
      case 'prompt_flag':
      case 'ready_prompt_prefix':
      case 'pending_pattern':
      case 'default_permission_mode':
        spec[key] = string(value, at(key));
        break;
      case 'args':
      case 'args_append':
      case 'resume_args':
      case 'process_names':
        spec[key] = strings(value, at(key));
        break;
      case 'env':
      case 'option_defaults':
        spec[key] = stringMap(value, at(key));
        break;
      case 'permission_modes': {
        const modes: Record<string, string[]> = {};
        for (const [mode, args] of Object.entries(table(value, at(key))))
          modes[mode] = strings(args, at(`${key}.${mode}`));
        spec.permission_modes = modes;
        break;
      }
      case 'protocol':
        spec.protocol = oneOf(value, WIRE_PROTOCOLS, at(key));
        break;
      case 'runtime':
        spec.runtime = oneOf(value, RUNTIME_KINDS, at(key));
        break;
      case 'prompt_mode':
        spec.prompt_mode = oneOf(value, PROMPT_MODES, at(key));
        break;
      case 'quiet_ms':
      case 'ready_delay_ms':
        spec[key] = milliseconds(value, at(key));
        break;
      default:
        throw new ConfigError(`${at(key)} is not a provider setting`);
    }
  }
  if (spec.pending_pattern !== undefined) {
    try {
      new RegExp(spec.pending_pattern);
    } catch (err) {
      throw new ConfigError(`${at('pending_pattern')} is not a regular expression: ${(err as Error).message}`);
    }
  }
  return spec;
}

/**
 * Every provider the city can start sessions with, inheritance resolved: the built-in presets (as the city may
 * have adjusted them), each `[providers.<name>]`, and `default` for a `[workspace] start_command`. Throws a
 * ConfigError for a base that does not exist, a cycle of bases, or a provider that ends up without a command.
 */
export function resolveProviders(
  city: Record<string, ProviderSpec>,
  workspace: { startCommand?: string },
  where: string,
): Map<string, ResolvedProvider> {
  const resolved = new Map<string, ResolvedProvider>();
  const resolving: string[] = [];

  const resolveCity = (name: string): ResolvedProvider => {
    const done = resolved.get(name);
    if (done) return done;
    if (resolving.includes(name)) {
      throw new ConfigError(
        `${where}: providers ${[...resolving, name].join(' → ')} inherit from each other in a cycle`,
      );
    }
    resolving.push(name);
    const spec = city[name];
    // A city table named after a preset adjusts that preset unless it names another base.
    const baseName = spec.base ?? (name in PRESETS ? `${BUILTIN_PREFIX}${name}` : undefined);
    let base: ResolvedProvider | undefined;
    if (baseName?.startsWith(BUILTIN_PREFIX)) {
      const preset = baseName.slice(BUILTIN_PREFIX.length);
      if (!(preset in PRESETS)) {
        throw new ConfigError(
          `${where}: providers.${name}.base ${JSON.stringify(baseName)} names no built-in provider (${Object.keys(PRESETS).join(', ')})`,
        );
      }
      base = builtin(preset);
    } else if (baseName !== undefined) {
      const other = baseName.startsWith(PROVIDER_PREFIX) ? baseName.slice(PROVIDER_PREFIX.length) : baseName;
      if (!(other in city)) {
        if (other in PRESETS) base = builtin(other);
        else throw new ConfigError(`${where}: providers.${name}.base ${JSON.stringify(baseName)} names no provider`);
      } else {
        base = resolveCity(other);
      }
    }
    const merged = merge(name, base, spec, `${where}: providers.${name}`);
    resolving.pop();
    resolved.set(name, merged);
    return merged;
  };

  for (const name of Object.keys(PRESETS)) if (!(name in city)) resolved.set(name, builtin(name));
  for (const name of Object.keys(city)) resolveCity(name);
  if (workspace.startCommand !== undefined && !resolved.has(WORKSPACE_PROVIDER)) {
    const spec: ProviderSpec = { display_name: 'The city’s start command', command: workspace.startCommand };
    resolved.set(WORKSPACE_PROVIDER, merge(WORKSPACE_PROVIDER, undefined, spec, `${where}: workspace.start_command`));
  }
  return resolved;
}

function builtin(preset: string): ResolvedProvider {
  const { spec, probe } = PRESETS[preset];
  const provider = merge(preset, undefined, spec, `builtin:${preset}`);
  return { ...provider, builtin: true, city_level: false, origin: 'builtin', ...(probe ? { probe } : {}) };
}

/** `spec` over `base` (or over the defaults of a custom provider: a `text` program on the pipe runtime). */
function merge(name: string, base: ResolvedProvider | undefined, spec: ProviderSpec, where: string): ResolvedProvider {
  const command = spec.command ?? base?.command;
  if (command === undefined || command.trim() === '') {
    throw new ConfigError(`${where} has no command (set command, or a base that has one)`);
  }
  const args = [...(spec.args ?? base?.args ?? []), ...(spec.args_append ?? [])];
  const provider: ResolvedProvider = {
    name,
    display_name: spec.display_name ?? base?.display_name ?? name,
    builtin: name in PRESETS,
    city_level: true,
    origin: name in PRESETS ? 'builtin+city' : 'city',
    command,
    args,
    env: { ...base?.env, ...spec.env },
    protocol: spec.protocol ?? base?.protocol ?? 'text',
    runtime: spec.runtime ?? base?.runtime ?? 'pipe',
    prompt_mode: spec.prompt_mode ?? base?.prompt_mode ?? 'stdin',
    quiet_ms: spec.quiet_ms ?? base?.quiet_ms ?? 500,
    // Without a marker to wait for, a program counts as ready once it has kept running this long: one that exits
    // at once fails its create instead of looking ready for an instant.
    ready_delay_ms: spec.ready_delay_ms ?? base?.ready_delay_ms ?? DEFAULT_READY_DELAY_MS,
    permission_modes: { ...base?.permission_modes, ...spec.permission_modes },
    process_names: spec.process_names ?? base?.process_names ?? [command.split(/\s+/)[0].split('/').pop()!],
    option_defaults: { ...base?.option_defaults, ...spec.option_defaults },
  };
  const optional = {
    prompt_flag: spec.prompt_flag ?? base?.prompt_flag,
    resume_args: spec.resume_args ?? base?.resume_args,
    ready_prompt_prefix: spec.ready_prompt_prefix ?? base?.ready_prompt_prefix,
    pending_pattern: spec.pending_pattern ?? base?.pending_pattern,
    default_permission_mode: spec.default_permission_mode ?? base?.default_permission_mode,
    probe: base?.probe,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) (provider as unknown as Record<string, unknown>)[key] = value;
  }
  if (provider.prompt_mode === 'flag' && provider.prompt_flag === undefined) {
    throw new ConfigError(`${where} has prompt_mode = "flag" but no prompt_flag`);
  }
  const mode = provider.default_permission_mode;
  if (mode !== undefined && !(mode in provider.permission_modes)) {
    throw new ConfigError(
      `${where}: default_permission_mode ${JSON.stringify(mode)} is not one of its permission_modes`,
    );
  }
  return provider;
}

function string(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new ConfigError(`${where} must be a string`);
  return value;
}

function strings(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    throw new ConfigError(`${where} must be an array of strings`);
  }
  return value as string[];
}

function table(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(`${where} must be a table`);
  return value as Record<string, unknown>;
}

function stringMap(value: unknown, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(table(value, where))) out[key] = string(v, `${where}.${key}`);
  return out;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], where: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${where} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

function milliseconds(value: unknown, where: string): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 3_600_000) {
    throw new ConfigError(`${where} must be a whole number of milliseconds (0 to 3600000)`);
  }
  return n;
}
