import { existsSync, statSync } from 'node:fs';
import { MAX_TOML_BYTES, tooLarge } from '../../shared/config/toml-file.js';
import { join } from 'node:path';
import { parseToml } from '../../shared/config/toml-syntax.js';
import { OutsideTree, readWithin } from '../../shared/fs/within.js';
import {
  parseAgentTable,
  parseImports,
  parseServiceTable,
  type CityAgentConfig,
  type CityServiceConfig,
  type PackImport,
} from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';

/** What a `pack.toml` declares (a pack's, or the city's own: the city is the root pack). */
export interface PackFile {
  /** `[pack] name`, `version`. */
  name?: string;
  version?: string;
  imports: PackImport[];
  agents: CityAgentConfig[];
  providers: Record<string, Record<string, unknown>>;
  services: CityServiceConfig[];
}

/** The tables a `pack.toml` may have; anything else is a mistake worth naming, not something to skip. */
const KNOWN = new Set(['pack', 'imports', 'agent', 'providers', 'service']);

/**
 * Reads `<dir>/pack.toml` (none: an empty pack); `label` names the file in errors (`pack:review/pack.toml`).
 * `edited` is its text as an edit would leave it, read instead of the file.
 */
export function readPackFile(dir: string, label: string, edited?: string): PackFile {
  const empty: PackFile = { imports: [], agents: [], providers: {}, services: [] };
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
  const unknown = Object.keys(doc).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new ConfigError(`${label}: unknown table ${unknown.join(', ')} (a pack has ${[...KNOWN].join(', ')})`);
  }
  const pack = tableOf(doc.pack, `${label}: pack`);
  const out: PackFile = {
    ...empty,
    imports: parseImports(tableOf(doc.imports, `${label}: imports`), (k) => `${label}: imports.${k}`, label),
  };
  if (typeof pack.name === 'string') out.name = pack.name;
  if (typeof pack.version === 'string') out.version = pack.version;
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
  return out;
}

function tableOf(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(`${where} must be a table`);
  return value as Record<string, unknown>;
}
