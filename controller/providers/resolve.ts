import { ConfigError } from '../../shared/config/config-error.js';
import { PRESETS } from './presets.js';
import { optionProblems, PERMISSION_MODE_OPTION } from './provider-options.js';
import {
  PROMPT_MODES,
  RUNTIME_KINDS,
  WIRE_PROTOCOLS,
  type ProviderSpec,
  type ResolvedProvider,
} from './provider-spec.js';
import { REFERENCE_ONLY_PROVIDER_KEYS } from '../config-schema/reference-keys.js';

/** Provider names: what paths and `city.toml` keys carry unescaped. */
export const PROVIDER_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** How long a program without a ready marker must keep running to count as ready. */
const DEFAULT_READY_DELAY_MS = 200;

/** The provider a `[workspace] start_command` stands for: sessions of the city's own program. */
export const WORKSPACE_PROVIDER = 'default';

const BUILTIN_PREFIX = 'builtin:';
const PROVIDER_PREFIX = 'provider:';

/** A provider that cannot be used: the message names the file and the key; `key` is that setting alone. */
export class ProviderConfigError extends ConfigError {
  constructor(
    message: string,
    /** The setting at fault (`base`, `command`, …), when one is. */
    readonly key?: string,
  ) {
    super(message);
  }
}

/**
 * A `[providers.<name>]` table as a spec, each value checked: a wrong type or an unknown key is an error naming
 * the file, the provider and the key.
 */
export function parseProviderSpec(raw: Record<string, unknown>, where: string): ProviderSpec {
  const spec: ProviderSpec = {};
  const at = (key: string) => `${where}.${key}`;
  for (const [key, value] of Object.entries(raw)) {
    try {
      parseSetting(spec, key, value, at);
    } catch (err) {
      if (err instanceof ConfigError && !(err instanceof ProviderConfigError)) {
        throw new ProviderConfigError(err.message, key);
      }
      throw err;
    }
  }
  if (spec.pending_pattern !== undefined) {
    try {
      new RegExp(spec.pending_pattern);
    } catch (err) {
      throw new ProviderConfigError(
        `${at('pending_pattern')} is not a regular expression: ${(err as Error).message}`,
        'pending_pattern',
      );
    }
  }
  return spec;
}

/**
 * A `{context_dir:NAME}` (priming.ts) whose NAME is no plain file name: empty, `.`/`..`, or holding `/`, `\\`,
 * `{` or `}` (one that could leave the directory, or not be one `{…}` field).
 */
const BAD_CONTEXT_DIR = /\{context_dir:(?![^{}/\\]+\})|\{context_dir:\.{1,2}\}/;

function parseSetting(spec: ProviderSpec, key: string, value: unknown, at: (key: string) => string): void {
  switch (key) {
    case 'base':
    case 'display_name':
    case 'command':
    case 'prompt_flag':
    case 'ready_prompt_prefix':
    case 'screen_rules':
    case 'pending_pattern':
    case 'default_permission_mode':
      spec[key] = string(value, at(key));
      break;
    case 'system_prompt_args': {
      const args = strings(value, at(key));
      const bad = args.find((arg) => BAD_CONTEXT_DIR.test(arg));
      if (bad !== undefined) {
        throw new ConfigError(`${at(key)}: ${JSON.stringify(bad)} — {context_dir:NAME} needs a file name for NAME`);
      }
      spec[key] = args;
      break;
    }
    case 'args':
    case 'args_append':
    case 'resume_args':
    case 'settings_args':
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
      // The reference's settings ctl does not have are named by the key audit (reference-keys.ts), not refused.
      if (Object.hasOwn(REFERENCE_ONLY_PROVIDER_KEYS, key)) break;
      throw new ConfigError(`${at(key)} is not a provider setting`);
  }
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
  const { resolved, errors } = resolveEach(city, workspace, where);
  const [first] = errors.values();
  if (first) throw first;
  return resolved;
}

/** The providers of a city, each on its own: those that resolve, and why each of the others does not. */
export interface ProviderResolution {
  resolved: Map<string, ResolvedProvider>;
  errors: Map<string, ConfigError>;
}

/**
 * `[providers.<name>]` tables as they are in `city.toml`, each checked and resolved on its own: one that is
 * broken (a wrong setting, a base that is missing or broken, a cycle, no command) is in `errors`, and the
 * others resolve as usual. What readiness reports provider by provider; `resolveProviders` wants them all.
 */
export function resolveCityProviders(
  raw: Record<string, Record<string, unknown>>,
  workspace: { startCommand?: string },
  where: string,
): ProviderResolution {
  const specs: Record<string, ProviderSpec> = {};
  const broken = new Map<string, ConfigError>();
  for (const [name, table] of Object.entries(raw)) {
    try {
      specs[name] = parseProviderSpec(table, `${where}: providers.${name}`);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      broken.set(name, err);
    }
  }
  const each = resolveEach(specs, workspace, where, new Set(broken.keys()));
  // A setting that does not parse comes first, as it did when every table was parsed before any resolved.
  return { resolved: each.resolved, errors: new Map([...broken, ...each.errors]) };
}

function resolveEach(
  city: Record<string, ProviderSpec>,
  workspace: { startCommand?: string },
  where: string,
  broken: ReadonlySet<string> = new Set(),
): ProviderResolution {
  const resolved = new Map<string, ResolvedProvider>();
  const errors = new Map<string, ConfigError>();
  const resolving: string[] = [];

  const resolveCity = (name: string): ResolvedProvider => {
    const done = resolved.get(name);
    if (done) return done;
    if (resolving.includes(name)) {
      throw new ProviderConfigError(
        `${where}: providers ${[...resolving, name].join(' → ')} inherit from each other in a cycle`,
        'base',
      );
    }
    resolving.push(name);
    const spec = city[name]!;
    // A city table named after a preset adjusts that preset unless it names another base.
    const baseName = spec.base ?? (Object.hasOwn(PRESETS, name) ? `${BUILTIN_PREFIX}${name}` : undefined);
    let base: ResolvedProvider | undefined;
    if (baseName?.startsWith(BUILTIN_PREFIX)) {
      const preset = baseName.slice(BUILTIN_PREFIX.length);
      if (!Object.hasOwn(PRESETS, preset)) {
        throw new ProviderConfigError(
          `${where}: providers.${name}.base ${JSON.stringify(baseName)} names no built-in provider (${Object.keys(PRESETS).join(', ')})`,
          'base',
        );
      }
      base = builtin(preset);
    } else if (baseName !== undefined) {
      const other = baseName.startsWith(PROVIDER_PREFIX) ? baseName.slice(PROVIDER_PREFIX.length) : baseName;
      if (broken.has(other)) {
        throw new ProviderConfigError(
          `${where}: providers.${name}.base ${JSON.stringify(baseName)} names a provider that is not valid`,
          'base',
        );
      } else if (!Object.hasOwn(city, other)) {
        if (Object.hasOwn(PRESETS, other)) base = builtin(other);
        else {
          throw new ProviderConfigError(
            `${where}: providers.${name}.base ${JSON.stringify(baseName)} names no provider`,
            'base',
          );
        }
      } else {
        base = resolveCity(other);
      }
    }
    const merged = merge(name, base, spec, `${where}: providers.${name}`);
    resolving.pop();
    resolved.set(name, merged);
    return merged;
  };

  for (const name of Object.keys(PRESETS))
    if (!Object.hasOwn(city, name) && !broken.has(name)) resolved.set(name, builtin(name));
  for (const name of Object.keys(city)) {
    try {
      resolveCity(name);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.set(name, err);
      resolving.length = 0;
    }
  }
  if (workspace.startCommand !== undefined && !resolved.has(WORKSPACE_PROVIDER) && !errors.has(WORKSPACE_PROVIDER)) {
    const spec: ProviderSpec = { display_name: 'The city’s start command', command: workspace.startCommand };
    try {
      resolved.set(WORKSPACE_PROVIDER, merge(WORKSPACE_PROVIDER, undefined, spec, `${where}: workspace.start_command`));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.set(WORKSPACE_PROVIDER, err);
    }
  }
  return { resolved, errors };
}

function builtin(preset: string): ResolvedProvider {
  const { spec, probe, defaults_file } = PRESETS[preset]!;
  const provider = merge(preset, undefined, spec, `builtin:${preset}`);
  return {
    ...provider,
    builtin: true,
    city_level: false,
    origin: 'builtin',
    ...(probe ? { probe } : {}),
    ...(defaults_file ? { defaults_file } : {}),
  };
}

/** `spec` over `base` (or over the defaults of a custom provider: a `text` program on the pipe runtime). */
function merge(name: string, base: ResolvedProvider | undefined, spec: ProviderSpec, where: string): ResolvedProvider {
  const command = spec.command ?? base?.command;
  if (command === undefined || command.trim() === '') {
    throw new ProviderConfigError(`${where} has no command (set command, or a base that has one)`, 'command');
  }
  const args = [...(spec.args ?? base?.args ?? []), ...(spec.args_append ?? [])];
  const provider: ResolvedProvider = {
    name,
    display_name: spec.display_name ?? base?.display_name ?? name,
    builtin: Object.hasOwn(PRESETS, name),
    city_level: true,
    origin: Object.hasOwn(PRESETS, name) ? 'builtin+city' : 'city',
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
    process_names: spec.process_names ?? base?.process_names ?? [command.split(/\s+/)[0]!.split('/').pop()!],
    option_defaults: { ...base?.option_defaults, ...spec.option_defaults },
    options_schema: { ...base?.options_schema, ...spec.options_schema },
    context_windows: { ...base?.context_windows, ...spec.context_windows },
  };
  const optional = {
    prompt_flag: spec.prompt_flag ?? base?.prompt_flag,
    resume_args: spec.resume_args ?? base?.resume_args,
    system_prompt_args: spec.system_prompt_args ?? base?.system_prompt_args,
    settings_args: spec.settings_args ?? base?.settings_args,
    ready_prompt_prefix: spec.ready_prompt_prefix ?? base?.ready_prompt_prefix,
    screen_rules: spec.screen_rules ?? base?.screen_rules,
    pending_pattern: spec.pending_pattern ?? base?.pending_pattern,
    default_permission_mode: spec.default_permission_mode ?? base?.default_permission_mode,
    probe: base?.probe,
    defaults_file: base?.defaults_file,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) (provider as unknown as Record<string, unknown>)[key] = value;
  }
  if (provider.runtime === 'tmux' && provider.screen_rules === undefined) {
    throw new ProviderConfigError(
      `${where} has runtime = "tmux" but no screen_rules to read its screen by`,
      'screen_rules',
    );
  }
  if (provider.prompt_mode === 'flag' && provider.prompt_flag === undefined) {
    throw new ProviderConfigError(`${where} has prompt_mode = "flag" but no prompt_flag`, 'prompt_flag');
  }
  // Its own option_defaults, checked against what it offers (an inherited one was checked with its base).
  for (const { key, message } of optionProblems(provider, spec.option_defaults ?? {})) {
    throw new ProviderConfigError(`${where}: option_defaults.${key}: ${message}`, 'option_defaults');
  }
  // A default permission mode among the option defaults is the mode its sessions start in.
  const chosenMode = spec.option_defaults?.[PERMISSION_MODE_OPTION];
  if (chosenMode !== undefined) provider.default_permission_mode = chosenMode;
  const mode = provider.default_permission_mode;
  if (mode !== undefined && !(mode in provider.permission_modes)) {
    throw new ProviderConfigError(
      `${where}: default_permission_mode ${JSON.stringify(mode)} is not one of its permission_modes`,
      'default_permission_mode',
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
