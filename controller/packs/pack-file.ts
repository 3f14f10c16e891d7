import { existsSync, statSync } from 'node:fs';
import { MAX_TOML_BYTES, tooLarge } from '../../shared/config/toml-file.js';
import { join } from 'node:path';
import { parseToml } from '../../shared/config/toml-syntax.js';
import { OutsideTree, readWithin } from '../../shared/fs/within.js';
import {
  optStringList,
  parseAgentTable,
  parseImports,
  parsePatches,
  type ConfigPatch,
  parseServiceTable,
  type CityAgentConfig,
  type CityServiceConfig,
  type PackImport,
} from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { parseDuration } from '../../shared/duration.js';
import { auditKeys, type KeyFinding } from '../config-schema/key-audit.js';
import { PACK_TOML } from '../config-schema/reference-keys.js';
import { readPackCommands, type PackCommand } from './pack-commands.js';

/** What a `pack.toml` declares (a pack's, or the city's own: the city is the root pack). */
export interface PackFile {
  /** `[pack] name`, `version`. */
  name?: string;
  version?: string;
  /** `[pack] description`: shown where packs are listed. */
  description?: string;
  /** `[pack] includes`: packs taken in whole, their contents the pack's own (the older form of imports). */
  includes: string[];
  imports: PackImport[];
  /** `[[patches.agent]]`: changes laid over the pack's agents (its own and its imports'), by their names in the pack. */
  agentPatches: ConfigPatch[];
  /** `[[commands]]` and `commands/<words>/run.sh`: what `ctl <binding> <command>` runs. */
  commands: PackCommand[];
  agents: CityAgentConfig[];
  providers: Record<string, Record<string, unknown>>;
  services: CityServiceConfig[];
  /** `[[host]]` as written: compose.ts checks them (host-config.ts), as the city's own. */
  hostTables?: unknown;
  /** `[[doctor]]`: checks `ctl doctor` runs for the pack. */
  doctors: PackDoctorEntry[];
  /** `[[named_session]]`: the sessions kept for its agents (compose.ts applies them). */
  namedSessions: NamedSession[];
  /** What it says that ctl does not act on (an unknown table, a reference key): see key-audit.ts. */
  findings: KeyFinding[];
  /** Files of it skipped, never read, because a symbolic link leads out of the pack (a command's script). */
  skipped: string[];
  /** `[[pack.requires]]`: agents that must be there for its formulas and orders to work (compose.ts checks). */
  requires: PackRequirement[];
  /** `[agent_defaults]`: what its own agents and its includes' get where they set none (compose.ts). */
  agentDefaults?: PackAgentDefaults;
}

/** A `[[pack.requires]]`: an agent (by its name in its pack) the city (`city`) or each rig loading it (`rig`) needs. */
export interface PackRequirement {
  scope: 'city' | 'rig';
  agent: string;
}

/** The keys of a pack's `[agent_defaults]` the reference gives its agents (the rest are named by the audit). */
export interface PackAgentDefaults {
  provider?: string;
  default_sling_formula?: string;
  append_fragments?: string[];
}

/**
 * A `[[doctor]]` check: a script of the pack (relative to its directory) whose exit status says ok (0), warn (1)
 * or fail (2 and more), its first line of output the message — the reference's protocol.
 */
export interface PackDoctorEntry {
  name: string;
  script: string;
  description?: string;
  /** How long it may run before it fails (default 30s). */
  timeoutMs: number;
}

const DOCTOR_TIMEOUT_MS = 30_000;

/**
 * A `[[named_session]]` of a pack: a session kept for one of its agents (`template`). `always`: started and kept
 * running by the tick (the agent's `min_active_sessions` raised to at least one); `on_demand` (the reference's
 * default): started when work or mail arrives for it (its `min_active_sessions` 0 unless it sets one). `scope` says
 * where it applies: `city` to the agent loaded at the city, `rig` to its copies in each rig, none to both.
 */
export interface NamedSession {
  template: string;
  mode: 'always' | 'on_demand';
  scope?: 'city' | 'rig';
}

/**
 * Reads `<dir>/pack.toml` (none: an empty pack); `label` names the file in errors (`pack:review/pack.toml`).
 * `edited` is its text as an edit would leave it, read instead of the file.
 */
export function readPackFile(dir: string, label: string, edited?: string): PackFile {
  const empty: PackFile = {
    includes: [],
    requires: [],
    agentPatches: [],
    commands: [],
    imports: [],
    agents: [],
    providers: {},
    services: [],
    doctors: [],
    namedSessions: [],
    findings: [],
    skipped: [],
  };
  const path = join(dir, 'pack.toml');
  let text: string;
  if (edited !== undefined) {
    text = edited;
  } else {
    if (!existsSync(path)) return empty;
    const size = statSync(path).size;
    if (size > MAX_TOML_BYTES) throw tooLarge(label, size);
    try {
      // The city's own pack.toml is the city's; an imported pack's may not lead out of the pack.
      text = readWithin(path, dir, label === 'pack.toml' ? 'the city' : 'the pack');
    } catch (err) {
      if (err instanceof OutsideTree) throw new ConfigError(`${label}: ${err.message}`);
      throw err;
    }
  }
  const doc = parseToml(text, label);
  const pack = tableOf(doc.pack, `${label}: pack`);
  const out: PackFile = {
    ...empty,
    skipped: [],
    // An unknown table is named, never a refusal of the whole pack: a newer pack may have more.
    findings: auditKeys(doc, PACK_TOML, label),
    imports: parseImports(tableOf(doc.imports, `${label}: imports`), (k) => `${label}: imports.${k}`, label),
  };
  if (typeof pack.name === 'string') out.name = pack.name;
  if (typeof pack.version === 'string') out.version = pack.version;
  if (typeof pack.description === 'string' && pack.description.trim() !== '') out.description = pack.description;
  out.includes = optStringList(pack, 'includes', `${label}: pack.includes`) ?? [];
  const requires = pack.requires ?? [];
  if (!Array.isArray(requires)) throw new ConfigError(`${label}: pack.requires must be an array of tables`);
  for (const [i, entry] of requires.entries()) {
    const at = `${label}: pack.requires[${i}]`;
    const t = tableOf(entry, at);
    if (t.scope !== 'city' && t.scope !== 'rig') throw new ConfigError(`${at}.scope must be "city" or "rig"`);
    if (typeof t.agent !== 'string' || t.agent.trim() === '')
      throw new ConfigError(`${at}.agent must be an agent's name`);
    out.requires.push({ scope: t.scope, agent: t.agent });
  }
  const patches = parsePatches(tableOf(doc.patches, `${label}: patches`), (k) => `${label}: patches.${k}`);
  if (patches.providers.length || patches.rigs.length)
    throw new ConfigError(`${label}: patches: a pack patches only its agents ([[patches.agent]])`);
  out.agentPatches = patches.agents;
  out.commands = readPackCommands(dir, doc.commands, label, out.skipped);
  const agents = doc.agent ?? [];
  if (!Array.isArray(agents)) throw new ConfigError(`${label}: agent must be an array of tables ([[agent]])`);
  for (const [i, agent] of agents.entries()) {
    out.agents.push(
      parseAgentTable(tableOf(agent, `${label}: agent[${i}]`), (k) => `${label}: agent[${i}].${k}`, label),
    );
  }
  for (const [name, spec] of Object.entries(tableOf(doc.providers, `${label}: providers`))) {
    out.providers[name] = tableOf(spec, `${label}: providers.${name}`);
  }
  const services = doc.service ?? [];
  if (!Array.isArray(services)) throw new ConfigError(`${label}: service must be an array of tables ([[service]])`);
  for (const [i, service] of services.entries()) {
    out.services.push(
      parseServiceTable(tableOf(service, `${label}: service[${i}]`), (k) => `${label}: service[${i}].${k}`),
    );
  }
  if (doc.host !== undefined) out.hostTables = doc.host;
  const doctors = doc.doctor ?? [];
  if (!Array.isArray(doctors)) throw new ConfigError(`${label}: doctor must be an array of tables ([[doctor]])`);
  for (const [i, entry] of doctors.entries()) {
    out.doctors.push(parseDoctorEntry(tableOf(entry, `${label}: doctor[${i}]`), (k) => `${label}: doctor[${i}].${k}`));
  }
  const defaults = tableOf(doc.agent_defaults, `${label}: agent_defaults`);
  const at = (k: string) => `${label}: agent_defaults.${k}`;
  const given: PackAgentDefaults = {};
  for (const key of ['provider', 'default_sling_formula'] as const) {
    const v = defaults[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${at(key)} must be a non-empty string`);
    given[key] = v;
  }
  const fragments = optStringList(defaults, 'append_fragments', at('append_fragments'));
  if (fragments?.length) given.append_fragments = fragments;
  if (Object.keys(given).length) out.agentDefaults = given;
  const named = doc.named_session ?? [];
  if (!Array.isArray(named))
    throw new ConfigError(`${label}: named_session must be an array of tables ([[named_session]])`);
  for (const [i, entry] of named.entries()) {
    out.namedSessions.push(
      parseNamedSession(tableOf(entry, `${label}: named_session[${i}]`), `${label}: named_session[${i}]`),
    );
  }
  return out;
}

function parseNamedSession(t: Record<string, unknown>, at: string): NamedSession {
  if (typeof t.template !== 'string' || t.template.trim() === '')
    throw new ConfigError(`${at}.template must name one of the pack's agents`);
  const mode = t.mode ?? 'on_demand';
  if (mode !== 'always' && mode !== 'on_demand')
    throw new ConfigError(`${at}.mode must be "always" or "on_demand", not ${JSON.stringify(mode)}`);
  const scope = t.scope;
  if (scope !== undefined && scope !== 'city' && scope !== 'rig')
    throw new ConfigError(`${at}.scope must be "city" or "rig", not ${JSON.stringify(scope)}`);
  return { template: t.template, mode, ...(scope !== undefined ? { scope } : {}) };
}

function parseDoctorEntry(t: Record<string, unknown>, at: (key: string) => string): PackDoctorEntry {
  const text = (key: string, required: boolean): string | undefined => {
    const v = t[key];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${at(key)} must be a non-empty string`);
    return v;
  };
  const name = text('name', true)!;
  if (!/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/.test(name))
    throw new ConfigError(`${at('name')} must be one word (a-z, 0-9, . _ -)`);
  const script = text('script', true)!;
  if (script.startsWith('/') || script.split('/').includes('..')) {
    throw new ConfigError(`${at('script')} must be a path inside the pack`);
  }
  const description = text('description', false);
  const timeout = text('timeout', false);
  let timeoutMs = DOCTOR_TIMEOUT_MS;
  if (timeout !== undefined) {
    try {
      timeoutMs = parseDuration(timeout);
    } catch {
      throw new ConfigError(`${at('timeout')} must be a duration such as 10s or 2m`);
    }
  }
  return { name, script, timeoutMs, ...(description !== undefined ? { description } : {}) };
}

function tableOf(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(`${where} must be a table`);
  return value as Record<string, unknown>;
}
