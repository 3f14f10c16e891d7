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
import { TomlTableEditError } from '../toml-table-edit.js';
import { composeConfig, type ComposedConfig } from './compose.js';

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
  try {
    text = readTomlText(path, file);
    cityText = file === 'city.toml' ? text : readTomlText(city.paths.config, 'city.toml');
    parseCityConfig(cityText, 'city.toml');
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
    const config = parseCityConfig(out, 'city.toml');
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
