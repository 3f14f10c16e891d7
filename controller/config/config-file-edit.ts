import { statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { configReadError, parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { MAX_TOML_BYTES, readTomlText, tooLarge } from '../../shared/config/toml-file.js';
import { parseToml } from '../../shared/config/toml-syntax.js';
import { Problem } from '../../shared/http/problem.js';
import { checkAgents } from '../agent-catalog/check-agents.js';
import { packCacheRoot } from '../packs/pack-cache.js';
import { ProviderRegistry } from '../providers/provider-registry.js';
import { TomlTableEditError } from './toml-table-edit.js';
import { composeConfig, type ComposedConfig, type EditedFile } from './compose.js';
import { warnConfig } from './config-warnings.js';

/** A file of the city's configuration that the API writes, relative to its root. */
export type ConfigFile = 'city.toml' | 'pack.toml' | `agents/${string}/agent.toml`;

/** What an edit wrote, and the city it composes to (taken as it is: composing it again would repeat the work). */
export interface WrittenConfig {
  file: ConfigFile;
  text: string;
  composed: ComposedConfig;
}

/** What the funnel needs of the controller: where the city's files are, what is in use, and a way to take a new one. */
export interface ConfigFileHost {
  /** The city's directory. */
  readonly root: string;
  readonly paths: { readonly config: string };
  /** The configuration in use: its `[[service]]` tables go on when the file's own are broken. */
  readonly config: CityConfig;
  /** Takes the configuration an edit just wrote: the tick, the providers and every reader see it at once. */
  reloadConfig(config: CityConfig, written: WrittenConfig): void;
}

/** Checks an edit's composition before it is written; throws a Problem to refuse it. */
export type VerifyEdit = (composed: ComposedConfig) => void;

/**
 * Edits one of the city's configuration files (`city.toml`, the root `pack.toml`, or an agent's `agent.toml`)
 * the way every write of the API must: the file must parse as it is (else 409: it is the person's to mend), the
 * edit is surgical (comments and layout kept), the city it leaves is composed as the controller would compose
 * it (the dry run, `proposeEdit`) and handed to `verify` before anything is written — a refused edit is a 422
 * and the file is left byte for byte as it was — then the file is replaced atomically (a temporary file renamed
 * over it) and the controller takes the dry run's composition at once.
 */
export function editConfigFile(
  host: ConfigFileHost,
  file: ConfigFile,
  edit: (text: string) => string,
  verify: VerifyEdit = () => undefined,
): void {
  const path = file === 'city.toml' ? host.paths.config : join(host.root, file);
  const cityText = asItIs('city.toml', () => readTomlText(host.paths.config, 'city.toml'));
  const existing = asItIs('city.toml', () => brokenServices(cityText));
  const text = file === 'city.toml' ? cityText : asItIs(file, () => readOther(path, file));
  let out: string;
  try {
    out = edit(text);
  } catch (err) {
    if (!(err instanceof TomlTableEditError)) throw err;
    throw new Problem('internal', `internal: ${file} was not changed: ${err.message}`);
  }
  const proposed = proposeEdit(host, { file, text: out }, cityText, existing);
  verify(proposed.composed);
  const mode = modeOf(path);
  writeFileAtomic(path, out, mode === undefined ? {} : { mode });
  try {
    host.reloadConfig(proposed.config, { file, text: out, composed: proposed.composed });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The dry run composed it: only a file changed by hand in between gets here. The watcher records why.
    warnConfig(`${file} was written, but the city did not take it: ${err.message}`);
  }
  for (const problem of existing) {
    warnConfig(`city.toml already had a problem this write did not fix: ${problem}; that table stays as it was in use`);
  }
}

/**
 * The dry run: the city as an edit (`edited`, the file's new text) would leave it, parsed and composed as a
 * reload would, checked for what makes a configuration unusable (a ConfigError: a 422 naming it), without taking
 * or writing anything. `cityText` is `city.toml` as it is on disk; `existing` the problems of its `[[service]]`
 * tables, which the edit may keep (the services in use go on) but not add to.
 */
export function proposeEdit(
  host: Pick<ConfigFileHost, 'root' | 'paths' | 'config'>,
  edited: EditedFile,
  cityText: string,
  existing: string[],
  cacheRoot: string = packCacheRoot(),
): { config: CityConfig; composed: ComposedConfig } {
  if (Buffer.byteLength(edited.text) > MAX_TOML_BYTES) {
    const bytes = Buffer.byteLength(edited.text);
    throw new Problem(
      'payload-too-large',
      `too_large: ${tooLarge(edited.file, bytes).message}; ${edited.file} was not changed`,
    );
  }
  let config = parseEdited(edited.file === 'city.toml' ? edited.text : cityText, existing);
  // Broken service tables are not taken: the services in use (their last good tables) go on as they are.
  if (existing.length) config = { ...config, services: host.config.services };
  const other = edited.file === 'city.toml' ? undefined : edited;
  return { config, composed: dryRun(host.root, host.paths.config, config, cacheRoot, other) };
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
    if (added.length) throw new ConfigError(added[0]!);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw refused(err);
  }
}

/**
 * The configuration `config` (with `edited` read in place of that file) would compose to, checked as a reload
 * would check it, without taking it.
 */
export function dryRun(
  root: string,
  configPath: string,
  config: CityConfig,
  cacheRoot: string,
  edited?: EditedFile,
): ComposedConfig {
  try {
    const composed = composeConfig(root, config, { cacheRoot, ...(edited ? { edited } : {}) });
    checkAgents({ agents: composed.agents, rigs: composed.config.rigs }, 'city.toml');
    new ProviderRegistry(composed.config, configPath);
    return composed;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw refused(err);
  }
}

/** A 422 naming what makes the edited configuration unusable. */
function refused(err: ConfigError): Problem {
  return new Problem('validation-failed', `invalid: ${err.message}`, {
    errors: [{ location: 'body', message: err.message }],
  });
}

/** `fn`'s answer; a file on disk that cannot be read or is not valid is a 409: the person's to mend, not ours. */
function asItIs<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const error =
      err instanceof ConfigError ? err : (err as NodeJS.ErrnoException).code ? configReadError(err, file) : undefined;
    if (!error) throw err;
    throw new Problem(
      'conflict-wrong-state',
      `conflict: ${file} is not valid as it is on disk; fix it by hand first: ${error.message}`,
    );
  }
}

/** A file other than `city.toml`, checked to be TOML; '' when it is not there yet (an agent with only a prompt). */
function readOther(path: string, file: string): string {
  let text: string;
  try {
    text = readTomlText(path, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return '';
  }
  parseToml(text, file);
  return text;
}

/** A file's permission bits, kept by the write; undefined for a new file. */
function modeOf(path: string): number | undefined {
  try {
    return statSync(path).mode & 0o7777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return undefined;
  }
}
