import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { ConfigError } from './config-error.js';

/** City names: what `cities.toml`, URLs and cursors can carry unescaped. */
export const CITY_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

export interface CityAgentConfig {
  name: string;
  provider?: string;
  dir?: string;
  scope?: string;
  suspended: boolean;
}

export interface CityRigConfig {
  name: string;
  prefix?: string;
  suspended: boolean;
}

/** A workspace service reachable through the raw `svc/<name>/…` proxy. */
export interface CityServiceConfig {
  name: string;
  /** `http://127.0.0.1:<port>` (loopback only). */
  url: string;
}

/** What this product reads from a city's `city.toml`. */
export interface CityConfig {
  workspace: {
    name?: string;
    provider?: string;
    startCommand?: string;
    prefix?: string;
    suspended: boolean;
  };
  providers: Record<string, Record<string, unknown>>;
  agents: CityAgentConfig[];
  rigs: CityRigConfig[];
  services: CityServiceConfig[];
  /** `[events] rotation_max_bytes`: rotate the event log once it reaches this size. */
  eventsRotationMaxBytes?: number;
  /** `[beads] backend`: `sqlite` (the default) or `journal`. */
  beadsBackend?: 'sqlite' | 'journal';
}

export function readCityConfig(path: string): CityConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
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
export function parseCityConfig(text: string, path: string): CityConfig {
  let doc: Record<string, unknown>;
  try {
    doc = parse(text);
  } catch (err) {
    throw new ConfigError(`${path}: ${(err as Error).message.split('\n')[0]}`);
  }
  const where = (key: string) => `${path}: ${key}`;
  const workspace = table(doc, 'workspace', where);
  const cfg: CityConfig = {
    workspace: {
      name: optString(workspace, 'name', where('workspace.name')),
      provider: optString(workspace, 'provider', where('workspace.provider')),
      startCommand: optString(workspace, 'start_command', where('workspace.start_command')),
      prefix: optString(workspace, 'prefix', where('workspace.prefix')),
      suspended: optBool(workspace, 'suspended', where('workspace.suspended')) ?? false,
    },
    providers: {},
    agents: [],
    rigs: [],
    services: [],
  };
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
    const at = (k: string) => where(`agent[${i}].${k}`);
    cfg.agents.push({
      name: reqString(agent, 'name', at('name')),
      provider: optString(agent, 'provider', at('provider')),
      dir: optString(agent, 'dir', at('dir')),
      scope: optString(agent, 'scope', at('scope')),
      suspended: optBool(agent, 'suspended', at('suspended')) ?? false,
    });
  }
  for (const [i, rig] of tables(doc, 'rigs', where).entries()) {
    const at = (k: string) => where(`rigs[${i}].${k}`);
    cfg.rigs.push({
      name: reqString(rig, 'name', at('name')),
      prefix: optString(rig, 'prefix', at('prefix')),
      suspended: optBool(rig, 'suspended_on_start', at('suspended_on_start')) ?? false,
    });
  }
  for (const [i, service] of tables(doc, 'service', where).entries()) {
    const at = (k: string) => where(`service[${i}].${k}`);
    const url = reqString(service, 'url', at('url'));
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${at('url')} is not a URL: ${url}`);
    }
    if (parsed.protocol !== 'http:') throw new ConfigError(`${at('url')} must be an http:// URL`);
    cfg.services.push({ name: reqString(service, 'name', at('name')), url: url.replace(/\/+$/, '') });
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
  return cfg;
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

function optBool(t: Record<string, unknown>, key: string, where: string): boolean | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new ConfigError(`${where} must be true or false`);
  return v;
}
