import { statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { MAX_TOML_BYTES, readTomlText, tooLarge } from '../../shared/config/toml-file.js';
import { Problem } from '../../shared/http/problem.js';
import { checkAgents } from '../agents/check-agents.js';
import { packCacheRoot, type CityRuntime } from '../city-runtime.js';
import { ProviderRegistry } from '../providers/provider-registry.js';
import { TomlTableEditError } from './toml-table-edit.js';
import { composeConfig, type ComposedConfig } from './compose.js';
import { warnConfig } from './config-warnings.js';

/**
 * Edits one of the city's configuration files (`city.toml`, or the root `pack.toml`) the way every mutation
 * endpoint must: the file must parse as it is (else 409: it is the person's to mend), the edit is surgical
 * (comments and layout kept), the result is composed as the controller would compose it and handed to
 * `verify` (which throws a Problem to refuse it) before anything is written; then the file is replaced
 * atomically (a temporary file renamed over it) and the controller takes the new configuration at once.
 */
export function editConfigFile(
  city: CityRuntime,
  file: 'city.toml' | 'pack.toml',
  edit: (text: string) => string,
  verify: (composed: ComposedConfig) => void = () => undefined,
): void {
  const path = file === 'city.toml' ? city.paths.config : join(city.root, file);
  let text: string;
  let cityText: string;
  let existing: string[];
  try {
    text = readTomlText(path, file);
    cityText = file === 'city.toml' ? text : readTomlText(city.paths.config, 'city.toml');
    existing = brokenServices(cityText);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new Problem(
      'conflict-wrong-state',
      `conflict: city.toml is not valid as it is on disk; fix it by hand first: ${err.message}`,
    );
  }
  let out: string;
  try {
    out = edit(text);
  } catch (err) {
    if (!(err instanceof TomlTableEditError)) throw err;
    throw new Problem('internal', `internal: ${file} was not changed: ${err.message}`);
  }
  const bytes = Buffer.byteLength(out);
  if (bytes > MAX_TOML_BYTES) {
    throw new Problem('payload-too-large', `too_large: ${tooLarge(file, bytes).message}; ${file} was not changed`);
  }
  let candidate: { config: CityConfig; composed: ComposedConfig } | undefined;
  if (file === 'city.toml') {
    let config = parseEdited(out, existing);
    // Broken service tables are not taken: the services in use (their last good tables) go on as they are.
    if (existing.length) config = { ...config, services: city.config.services };
    candidate = { config, composed: dryRun(city, config) };
    verify(candidate.composed);
  }
  writeFileAtomic(path, out, { mode: statSync(path).mode & 0o7777 });
  try {
    // The city.toml just checked is the one in use: its composition is not done twice.
    if (candidate) city.reloadConfig(candidate.config, { text: out, composed: candidate.composed });
    else city.reloadConfig(parseCityConfig(cityText, 'city.toml'));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // Written, but the whole does not resolve (another file broken meanwhile): the watcher records why.
  }
  for (const problem of existing) {
    warnConfig(`city.toml already had a problem this write did not fix: ${problem}; that table stays as it was in use`);
  }
}

/**
 * What is wrong with the `[[service]]` tables of `city.toml` as it is (nothing: []), when that is all that is
 * wrong: an edit of anything else may go through beside it. Throws the ConfigError of anything else.
 */
export function brokenServices(text: string): string[] {
  try {
    parseCityConfig(text, 'city.toml');
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const problems: string[] = [];
    parseCityConfig(text, 'city.toml', { serviceProblems: problems });
    return problems;
  }
}

/**
 * `city.toml` as an edit left it, which may keep the service problems it had (`existing`) but add none: a 422
 * naming the first new one.
 */
export function parseEdited(text: string, existing: string[]): CityConfig {
  const problems: string[] = [];
  try {
    const config = parseCityConfig(text, 'city.toml', existing.length ? { serviceProblems: problems } : {});
    const added = problems.filter((p) => !existing.includes(p));
    if (added.length) throw new ConfigError(added[0]);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new Problem('validation-failed', `invalid: ${err.message}`, {
      errors: [{ location: 'body', message: err.message }],
    });
  }
}

/** The configuration `config` would compose to, checked as a reload would check it, without taking it. */
export function dryRun(city: CityRuntime, config: CityConfig): ComposedConfig {
  try {
    const composed = composeConfig(city.root, config, { cacheRoot: packCacheRoot() });
    checkAgents({ agents: composed.agents, rigs: composed.config.rigs }, 'city.toml');
    new ProviderRegistry(composed.config, city.paths.config);
    return composed;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new Problem('validation-failed', `invalid: ${err.message}`, {
      errors: [{ location: 'body', message: err.message }],
    });
  }
}
