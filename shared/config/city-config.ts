import { readTomlText } from './toml-file.js';
import { basename } from 'node:path';
import { stringify } from 'smol-toml';
import { parseToml } from './toml-syntax.js';
import { parseDuration } from '../duration.js';
import { ConfigError } from './config-error.js';
import { parseAgentLifecycle } from './agent-lifecycle.js';
import { readReviewConfig } from './review-config.js';
import {
  DEFAULT_DAEMON,
  type CityAgentConfig,
  type PackImport,
  type CityPatches,
  type ConfigPatch,
  type CityDaemonConfig,
  type CityServiceConfig,
  type CityConfig,
} from './city-config-types.js';
export * from './city-config-types.js';

/** The longest `[daemon] shutdown_timeout`: a city's stop must stay bounded. */
export const MAX_SHUTDOWN_TIMEOUT_MS = 60_000;

/** City names: what `cities.toml`, URLs and cursors can carry unescaped. */
export const CITY_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** Agent names: one path segment, as `/agent/{base}` and `/agent/{dir}/{base}` carry them. */
export const AGENT_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

export function readCityConfig(path: string): CityConfig {
  let text: string;
  try {
    text = readTomlText(path, path);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw configReadError(err, path);
  }
  return parseCityConfig(text, path);
}

/** The ConfigError for a `city.toml` that could not be read. */
export function configReadError(err: unknown, path: string): ConfigError {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return new ConfigError(`${path}: no city.toml found`);
  return new ConfigError(`${path}: ${e.message.split('\n')[0]}`);
}

/** A `city.toml`'s text as configuration; `path` names it in errors. */
export interface ParseOptions {
  /**
   * Collects what is wrong with `[[service]]` tables here instead of throwing, leaving those tables out: how an
   * edit of something else goes through while a service table is broken (it names the problem as a warning).
   */
  serviceProblems?: string[];
}

export function parseCityConfig(text: string, path: string, options: ParseOptions = {}): CityConfig {
  const doc = parseToml(text, path);
  const where = (key: string) => `${path}: ${key}`;
  const workspace = table(doc, 'workspace', where);
  const cfg: CityConfig = {
    workspace: {
      name: optString(workspace, 'name', where('workspace.name')),
      provider: optString(workspace, 'provider', where('workspace.provider')),
      startCommand: optString(workspace, 'start_command', where('workspace.start_command')),
      prefix: optString(workspace, 'prefix', where('workspace.prefix')),
      suspended: optBool(workspace, 'suspended', where('workspace.suspended')) ?? false,
      includes: optStringList(workspace, 'includes', where('workspace.includes')) ?? [],
      globalFragments: optStringList(workspace, 'global_fragments', where('workspace.global_fragments')) ?? [],
    },
    providers: {},
    agents: [],
    rigs: [],
    services: [],
    daemon: { ...DEFAULT_DAEMON },
    orders: { overrides: [], skip: [] },
    imports: parseImports(table(doc, 'imports', where), (k) => where(`imports.${k}`), 'city.toml'),
    rigDefaultImports: parseImports(
      table(
        table(table(doc, 'defaults', where), 'rig', (k) => where(`defaults.${k}`)),
        'imports',
        (k) => where(`defaults.rig.${k}`),
      ),
      (k) => where(`defaults.rig.imports.${k}`),
      'city.toml',
    ),
    patches: parsePatches(table(doc, 'patches', where), (k) => where(`patches.${k}`)),
    agentDefaults: table(doc, 'agent_defaults', where),
    extmsgCallbackHosts: [],
    pricing: [],
    review: readReviewConfig(doc.review, where),
    document: doc,
  };
  const extmsg = table(doc, 'extmsg', where);
  if (extmsg.allowed_callback_hosts !== undefined) {
    const hosts = extmsg.allowed_callback_hosts;
    if (!Array.isArray(hosts) || hosts.some((h) => typeof h !== 'string')) {
      throw new ConfigError(`${where('extmsg.allowed_callback_hosts')} must be an array of host names`);
    }
    cfg.extmsgCallbackHosts = (hosts as string[]).map((h) => h.toLowerCase());
  }
  if (cfg.workspace.name !== undefined && !CITY_NAME_PATTERN.test(cfg.workspace.name)) {
    throw new ConfigError(`${where('workspace.name')} must match ${CITY_NAME_PATTERN.source}`);
  }
  const providers = table(doc, 'providers', where);
  for (const [name, spec] of Object.entries(providers)) {
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
      throw new ConfigError(`${where(`providers.${name}`)} must be a table`);
    }
    cfg.providers[name] = spec as Record<string, unknown>;
  }
  for (const [i, agent] of tables(doc, 'agent', where).entries()) {
    cfg.agents.push(parseAgentTable(agent, (k) => where(`agent[${i}].${k}`), 'city.toml'));
  }
  const daemon = table(doc, 'daemon', where);
  const durations: [keyof CityDaemonConfig, string][] = [
    ['patrolIntervalMs', 'patrol_interval'],
    ['restartWindowMs', 'restart_window'],
    ['restartBackoffMs', 'restart_backoff'],
    ['restartBackoffMaxMs', 'restart_backoff_max'],
    ['checkTimeoutMs', 'check_timeout'],
    ['quarantineMs', 'quarantine_duration'],
  ];
  for (const [field, key] of durations) {
    const ms = optDuration(daemon, key, where(`daemon.${key}`));
    if (ms !== undefined) cfg.daemon[field] = Math.max(ms, 10);
  }
  const setup = optDuration(table(doc, 'session', where), 'setup_timeout', where('session.setup_timeout'));
  if (setup !== undefined) cfg.daemon.setupTimeoutMs = Math.max(setup, 10);
  const shutdown = optDuration(daemon, 'shutdown_timeout', where('daemon.shutdown_timeout'));
  if (shutdown !== undefined) {
    // The supervisor waits this (and a margin) before it kills the controller: a stop stays bounded.
    if (shutdown > MAX_SHUTDOWN_TIMEOUT_MS)
      throw new ConfigError(`${where('daemon.shutdown_timeout')} must be at most ${MAX_SHUTDOWN_TIMEOUT_MS / 1000}s`);
    cfg.daemon.shutdownTimeoutMs = shutdown;
  }
  const wakes = optInt(daemon, 'max_wakes_per_tick', where('daemon.max_wakes_per_tick'));
  if (wakes !== undefined) cfg.daemon.maxWakesPerTick = Math.max(wakes, 1);
  const restarts = optInt(daemon, 'max_restarts', where('daemon.max_restarts'));
  if (restarts !== undefined) cfg.daemon.maxRestarts = Math.max(restarts, 1);
  for (const [i, rig] of tables(doc, 'rigs', where).entries()) {
    const at = (k: string) => where(`rigs[${i}].${k}`);
    cfg.rigs.push({
      name: reqString(rig, 'name', at('name')),
      path: optString(rig, 'path', at('path')),
      prefix: optString(rig, 'prefix', at('prefix')),
      default_branch: optString(rig, 'default_branch', at('default_branch')),
      ...remoteOf(rig, at),
      // `suspended` is what `ctl rig suspend` writes; `suspended_on_start` the reference's spelling.
      suspended:
        (optBool(rig, 'suspended', at('suspended')) ?? false) ||
        (optBool(rig, 'suspended_on_start', at('suspended_on_start')) ?? false),
      ...(rig.imports !== undefined
        ? { imports: parseImports(table(rig, 'imports', at), (k) => at(`imports.${k}`), 'city.toml') }
        : {}),
      ...(rig.formula_vars !== undefined ? { formula_vars: formulaVars(table(rig, 'formula_vars', at), at) } : {}),
      ...(rig.includes !== undefined ? { includes: optStringList(rig, 'includes', at('includes')) ?? [] } : {}),
      ...rigOverrides(rig, at),
    });
  }
  const serviceProblem = (err: unknown) => {
    if (!(err instanceof ConfigError) || !options.serviceProblems) throw err;
    options.serviceProblems.push(err.message);
  };
  const names = new Set<string>();
  for (const [i, service] of tables(doc, 'service', where).entries()) {
    try {
      const parsed = parseServiceTable(service, (k) => where(`service[${i}].${k}`));
      if (names.has(parsed.name))
        throw new ConfigError(`${where(`service[${i}].name`)}: ${parsed.name} is declared twice`);
      names.add(parsed.name);
      cfg.services.push(parsed);
    } catch (err) {
      serviceProblem(err);
    }
  }
  const orders = table(doc, 'orders', where);
  const skip = orders.skip;
  if (skip !== undefined) {
    if (!Array.isArray(skip) || skip.some((x) => typeof x !== 'string')) {
      throw new ConfigError(`${where('orders.skip')} must be an array of order names`);
    }
    cfg.orders.skip = skip as string[];
  }
  cfg.orders.maxTimeoutMs = optDuration(orders, 'max_timeout', where('orders.max_timeout'));
  cfg.orders.timezone = optString(workspace, 'timezone', where('workspace.timezone'));
  for (const [i, o] of tables(orders, 'overrides', (k) => where(`orders.${k}`)).entries()) {
    const at = (k: string) => where(`orders.overrides[${i}].${k}`);
    const fields = Object.fromEntries(Object.entries(o).filter(([k]) => !['name', 'rig', 'enabled'].includes(k)));
    cfg.orders.overrides.push({
      name: reqString(o, 'name', at('name')),
      rig: optString(o, 'rig', at('rig')),
      enabled: optBool(o, 'enabled', at('enabled')),
      fields,
    });
  }
  tables(doc, 'pricing', where).forEach((entry, i) => {
    const at = (key: string) => where(`pricing[${i}].${key}`);
    const price = (key: string) => {
      const v = entry[key];
      if (v === undefined) return 0;
      const n = typeof v === 'bigint' ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) {
        throw new ConfigError(`${at(key)} must be a price in US dollars per million tokens (a number, 0 or more)`);
      }
      return n;
    };
    const provider = reqString(entry, 'provider', at('provider'));
    if (cfg.pricing.some((p) => p.provider === provider)) {
      throw new ConfigError(`${at('provider')}: ${provider} is priced twice`);
    }
    cfg.pricing.push({
      provider,
      input: price('input'),
      output: price('output'),
      cache_read: price('cache_read'),
      cache_creation: price('cache_creation'),
    });
  });
  const maintenance = table(doc, 'maintenance', where);
  const maintenanceEvery = optDuration(maintenance, 'interval', where('maintenance.interval'));
  if (maintenanceEvery !== undefined) {
    if (maintenanceEvery < 60_000) throw new ConfigError(`${where('maintenance.interval')} must be at least 1m`);
    cfg.maintenanceIntervalMs = maintenanceEvery;
  }
  const beads = table(doc, 'beads', where);
  if (beads.backend !== undefined) {
    if (beads.backend !== 'sqlite' && beads.backend !== 'journal') {
      throw new ConfigError(`${where('beads.backend')} must be "sqlite" or "journal"`);
    }
    cfg.beadsBackend = beads.backend;
  }
  const events = table(doc, 'events', where);
  const rotation = events.rotation_max_bytes;
  if (rotation !== undefined) {
    const n = typeof rotation === 'bigint' ? Number(rotation) : rotation;
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) {
      throw new ConfigError(`${where('events.rotation_max_bytes')} must be a positive integer`);
    }
    cfg.eventsRotationMaxBytes = n;
  }
  const keep = events.max_archives;
  if (keep !== undefined) {
    const n = typeof keep === 'bigint' ? Number(keep) : keep;
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) {
      throw new ConfigError(`${where('events.max_archives')} must be a positive integer`);
    }
    cfg.eventsMaxArchives = n;
  }
  return cfg;
}

/**
 * One agent's table (`[[agent]]`, or an `agent.toml`), checked field by field; `at` names a key in errors,
 * `source` is the file it came from.
 */
export function parseAgentTable(
  agent: Record<string, unknown>,
  at: (key: string) => string,
  source: string,
  defaults: { name?: string } = {},
): CityAgentConfig {
  const name = optString(agent, 'name', at('name')) ?? defaults.name;
  if (name === undefined || name.trim() === '') throw new ConfigError(`${at('name')} is required`);
  if (!AGENT_NAME_PATTERN.test(name)) throw new ConfigError(`${at('name')} must match ${AGENT_NAME_PATTERN.source}`);
  const dir = optString(agent, 'dir', at('dir'));
  if (dir !== undefined && dir.trim() === '') throw new ConfigError(`${at('dir')} must not be empty`);
  const env = table(agent, 'env', at);
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new ConfigError(`${at(`env.${key}`)} must be a string`);
  }
  const optionDefaults = table(agent, 'option_defaults', at);
  for (const [key, value] of Object.entries(optionDefaults)) {
    if (typeof value !== 'string') throw new ConfigError(`${at(`option_defaults.${key}`)} must be a string`);
  }
  const dependsOn = agent.depends_on ?? [];
  if (!Array.isArray(dependsOn) || dependsOn.some((d) => typeof d !== 'string')) {
    throw new ConfigError(`${at('depends_on')} must be an array of agent names`);
  }
  const min = optInt(agent, 'min_active_sessions', at('min_active_sessions'));
  const max = optInt(agent, 'max_active_sessions', at('max_active_sessions'));
  if (min !== undefined && min < 0) throw new ConfigError(`${at('min_active_sessions')} must be 0 or more`);
  if (max !== undefined && max < 1) throw new ConfigError(`${at('max_active_sessions')} must be 1 or more`);
  if (min !== undefined && max !== undefined && min > max) {
    throw new ConfigError(`${at('min_active_sessions')} (${min}) is more than max_active_sessions (${max})`);
  }
  const config: CityAgentConfig = {
    name,
    suspended: optBool(agent, 'suspended', at('suspended')) ?? false,
    env: env as Record<string, string>,
    depends_on: dependsOn as string[],
    source,
  };
  const strings = [
    'provider',
    'work_dir',
    'scope',
    'description',
    'prompt',
    'scale_check',
    'work_query',
    'default_sling_formula',
  ] as const;
  for (const key of strings) {
    const value = optString(agent, key, at(key));
    if (value !== undefined) config[key] = value;
  }
  if (dir !== undefined) config.dir = dir;
  if (optBool(agent, 'fallback', at('fallback')) === true) config.fallback = true;
  for (const key of ['inject_fragments', 'append_fragments', 'hosts'] as const) {
    const names = optStringList(agent, key, at(key));
    if (names !== undefined) config[key] = names;
  }
  if (Object.keys(optionDefaults).length > 0) config.option_defaults = optionDefaults as Record<string, string>;
  const isolation = optChoice(agent, 'isolation', ['none', 'worktree'] as const, at('isolation'));
  if (isolation !== undefined) config.isolation = isolation;
  const merge = optChoice(agent, 'merge', ['none', 'direct', 'review', 'push'] as const, at('merge'));
  if (merge !== undefined) config.merge = merge;
  const base = optString(agent, 'base_branch', at('base_branch'));
  if (base !== undefined) {
    // A branch name git takes as one (no option, no range, no revision syntax).
    if (
      !/^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(base) ||
      base.includes('..') ||
      base.endsWith('/') ||
      base.endsWith('.lock')
    ) {
      throw new ConfigError(`${at('base_branch')} must be a branch name (got ${JSON.stringify(base)})`);
    }
    config.base_branch = base;
  }
  if (min !== undefined) config.min_active_sessions = min;
  if (max !== undefined) config.max_active_sessions = max;
  const idle = optDuration(agent, 'idle_timeout', at('idle_timeout'));
  if (idle !== undefined && idle > 0) config.idle_timeout_ms = idle;
  return { ...config, ...parseAgentLifecycle(agent, at) };
}

/** `[[rigs]] remote`: a remote's name as git takes one (no option, no URL, no path). */
function remoteOf(rig: Record<string, unknown>, at: (key: string) => string): { remote?: string } {
  const remote = optString(rig, 'remote', at('remote'));
  if (remote === undefined) return {};
  if (!/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(remote) || remote.endsWith('.lock')) {
    throw new ConfigError(`${at('remote')} must be the name of a git remote (got ${JSON.stringify(remote)})`);
  }
  return { remote };
}

/** Service names: one path segment of `svc/<name>/…`. */
export const SERVICE_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

/** One `[[service]]` table (of `city.toml` or a pack's `pack.toml`); `at` names a key in errors. */
export function parseServiceTable(service: Record<string, unknown>, at: (key: string) => string): CityServiceConfig {
  const name = reqString(service, 'name', at('name'));
  if (!SERVICE_NAME_PATTERN.test(name))
    throw new ConfigError(`${at('name')} must match ${SERVICE_NAME_PATTERN.source}`);
  const url = optString(service, 'url', at('url'));
  const command = optString(service, 'command', at('command'));
  if ((url === undefined) === (command === undefined)) {
    throw new ConfigError(
      `${at('url')}: a service has either a url (somebody else runs it) or a command (ctl runs it)`,
    );
  }
  const env = table(service, 'env', at);
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new ConfigError(`${at(`env.${key}`)} must be a string`);
  }
  const config: CityServiceConfig = { name, env: env as Record<string, string> };
  // Both kinds are probed: a program's health decides its restarts; a URL's is reported.
  const health = optString(service, 'health', at('health'));
  if (health !== undefined && !health.startsWith('/'))
    throw new ConfigError(`${at('health')} must be a path (/healthz)`);
  if (health !== undefined) config.health = health;
  const every = optDuration(service, 'health_interval', at('health_interval'));
  if (every !== undefined) config.healthIntervalMs = Math.max(every, 100);
  if (url !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${at('url')} is not a URL: ${url}`);
    }
    if (parsed.protocol !== 'http:') throw new ConfigError(`${at('url')} must be an http:// URL`);
    config.url = url.replace(/\/+$/, '');
    return config;
  }
  config.command = command;
  const port = optInt(service, 'port', at('port'));
  if (port !== undefined && (port < 0 || port > 65535))
    throw new ConfigError(`${at('port')} must be a TCP port (0-65535)`);
  const socket = optString(service, 'socket', at('socket'));
  if (socket !== undefined && (port ?? 0) > 0)
    throw new ConfigError(`${at('socket')}: a service has a port or a socket, not both`);
  if (socket !== undefined && (socket.includes('..') || socket.startsWith('/') || socket.trim() === '')) {
    throw new ConfigError(`${at('socket')} must be a file name under the city's .ctl/services/`);
  }
  const dir = optString(service, 'dir', at('dir'));
  if (port !== undefined) config.port = port;
  if (socket !== undefined) config.socket = socket;
  if (dir !== undefined) config.dir = dir;
  return config;
}

/** Import binding names: what `binding.agent` and `DELETE /packs/{name}` carry. */
export const BINDING_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;

/** `[imports.<binding>]` tables: `{source, version}` each (a bare string is its source). */
export function parseImports(
  imports: Record<string, unknown>,
  at: (key: string) => string,
  file: string,
): PackImport[] {
  const out: PackImport[] = [];
  for (const [binding, value] of Object.entries(imports).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!BINDING_PATTERN.test(binding))
      throw new ConfigError(`${at(binding)}: a binding must match ${BINDING_PATTERN.source}`);
    const entry = typeof value === 'string' ? { source: value } : value;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new ConfigError(`${at(binding)} must be a table with a source`);
    }
    const t = entry as Record<string, unknown>;
    const source = reqString(t, 'source', at(`${binding}.source`));
    const version = optString(t, 'version', at(`${binding}.version`));
    const exported = optBool(t, 'export', at(`${binding}.export`));
    const transitive = optBool(t, 'transitive', at(`${binding}.transitive`));
    out.push({
      binding,
      source,
      file,
      ...(version !== undefined ? { version } : {}),
      ...(exported ? { export: true } : {}),
      ...(transitive === false ? { transitive: false } : {}),
    });
  }
  return out;
}

/** `[[patches.agent]]`, `[[patches.provider]]`, `[[patches.rig]]`. */
export function parsePatches(patches: Record<string, unknown>, at: (key: string) => string): CityPatches {
  const out: CityPatches = { agents: [], providers: [], rigs: [] };
  const kinds: [keyof CityPatches, string][] = [
    ['agents', 'agent'],
    ['providers', 'provider'],
    ['rigs', 'rig'],
  ];
  for (const key of Object.keys(patches)) {
    if (!kinds.some(([, k]) => k === key)) throw new ConfigError(`${at(key)}: patches are agent, provider or rig`);
  }
  for (const [field, key] of kinds) {
    for (const [i, patch] of tables(patches, key, at).entries()) {
      const where = (k: string) => at(`${key}[${i}].${k}`);
      const name = reqString(patch, 'name', where('name'));
      const dir = field === 'agents' ? optString(patch, 'dir', where('dir')) : undefined;
      const fields = Object.fromEntries(Object.entries(patch).filter(([k]) => k !== 'name' && k !== 'dir'));
      out[field].push({ name, fields, ...(dir !== undefined ? { dir } : {}) });
    }
  }
  return out;
}

/**
 * `[[rigs.overrides]]` and `[[rigs.patches]]` (the reference's two spellings, overrides first): patches of the
 * agents the rig's packs bring, each naming its agent by `agent`; the keys are checked where they are applied.
 */
function rigOverrides(rig: Record<string, unknown>, at: (k: string) => string): { overrides?: ConfigPatch[] } {
  const out: ConfigPatch[] = [];
  for (const key of ['overrides', 'patches']) {
    for (const [i, o] of tables(rig, key, at).entries()) {
      const name = reqString(o, 'agent', at(`${key}[${i}].agent`));
      out.push({
        name,
        fields: Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'agent')),
        key: `${key}[${i}]`,
      });
    }
  }
  return out.length ? { overrides: out } : {};
}

/** The city's name when nobody registered it under another: `[workspace] name`, else the directory name. */
export function declaredCityName(root: string, config: CityConfig | undefined): string {
  return config?.workspace.name ?? basename(root);
}

/** The `city.toml` of a newly created city. */
export function newCityConfigText(options: {
  provider?: string;
  startCommand?: string;
  bootstrapProfile?: 'k8s-cell' | 'single-host-compat';
}): string {
  const doc: Record<string, unknown> = { workspace: {} };
  const workspace = doc.workspace as Record<string, unknown>;
  if (options.provider) {
    workspace.provider = options.provider;
    doc.providers = { [options.provider]: { base: `builtin:${options.provider}` } };
  }
  if (options.startCommand) workspace.start_command = options.startCommand;
  if (options.bootstrapProfile === 'k8s-cell') doc.api = { bind: '0.0.0.0', allow_mutations: true };
  return `# City configuration (created by ctl).\n${stringify(doc)}\n`;
}

/** `[rigs.formula_vars]`: values a run of a formula for one of the rig's agents gets for the vars it declares. */
function formulaVars(vars: Record<string, unknown>, at: (key: string) => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(vars)) {
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ConfigError(`${at(`formula_vars.${key}`)} must be a string`);
    }
    out[key] = String(value);
  }
  return out;
}

function table(doc: Record<string, unknown>, key: string, where: (k: string) => string): Record<string, unknown> {
  const v = doc[key];
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError(`${where(key)} must be a table`);
  return v as Record<string, unknown>;
}

function tables(doc: Record<string, unknown>, key: string, where: (k: string) => string): Record<string, unknown>[] {
  const v = doc[key];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))) {
    throw new ConfigError(`${where(key)} must be an array of tables ([[${key}]])`);
  }
  return v as Record<string, unknown>[];
}

function optString(t: Record<string, unknown>, key: string, where: string): string | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ConfigError(`${where} must be a string`);
  return v;
}

function reqString(t: Record<string, unknown>, key: string, where: string): string {
  const v = optString(t, key, where);
  if (v === undefined || v.trim() === '') throw new ConfigError(`${where} is required`);
  return v;
}

function optInt(t: Record<string, unknown>, key: string, where: string): number | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new ConfigError(`${where} must be an integer`);
  return n;
}

/** A Go-style duration (`30s`, `5m`, `1h30m`). */
function optDuration(t: Record<string, unknown>, key: string, where: string): number | undefined {
  const v = optString(t, key, where);
  if (v === undefined) return undefined;
  try {
    return parseDuration(v);
  } catch {
    throw new ConfigError(`${where} must be a duration such as 30s, 5m or 1h30m (got ${JSON.stringify(v)})`);
  }
}

function optChoice<T extends string>(
  t: Record<string, unknown>,
  key: string,
  choices: readonly T[],
  where: string,
): T | undefined {
  const v = optString(t, key, where);
  if (v === undefined) return undefined;
  if (!(choices as readonly string[]).includes(v)) {
    throw new ConfigError(
      `${where} must be ${choices.map((c) => JSON.stringify(c)).join(' or ')} (got ${JSON.stringify(v)})`,
    );
  }
  return v as T;
}

function optBool(t: Record<string, unknown>, key: string, where: string): boolean | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new ConfigError(`${where} must be true or false`);
  return v;
}

/** A list of non-empty strings, or undefined when the key is absent. */
export function optStringList(t: Record<string, unknown>, key: string, where: string): string[] | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.trim() === ''))
    throw new ConfigError(`${where} must be an array of non-empty strings`);
  return v as string[];
}
