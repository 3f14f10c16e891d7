import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { configReadError, parseCityConfig, type CityConfig } from '../../shared/config/city-config.js';
import { ConfigError, type ConfigErrorPlace } from '../../shared/config/config-error.js';
import { readTomlText } from '../../shared/config/toml-file.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { CityPaths } from '../../shared/paths.js';
import { resolveAgents, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { checkAgents } from '../agent-catalog/check-agents.js';
import { packCacheRoot } from '../packs/pack-cache.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import { composeConfig, type ComposedConfig } from './compose.js';

/**
 * A city's configuration as the controller runs it: `city.toml` read and its agents (inline and from `agents/`)
 * resolved against its providers. Built whole or not at all, so a broken edit leaves the last good one in place.
 */
export interface LoadedConfig {
  config: CityConfig;
  agents: AgentDefinition[];
  /** How it was composed: packs, problems that leave the rest running, what patches changed. */
  composed: ComposedConfig;
}

/** Reads and resolves the city's configuration; throws a ConfigError naming the file and key at fault. */
export function loadConfig(
  root: string,
  configPath: string,
  providers: ProviderRegistry,
  config?: CityConfig,
  precomposed?: ComposedConfig,
): LoadedConfig {
  const composed =
    precomposed ?? composeConfig(root, config ?? readConfigFile(configPath), { cacheRoot: packCacheRoot() });
  const read = composed.config;
  checkAgents({ agents: composed.agents, rigs: read.rigs }, 'city');
  providers.load(read, configPath);
  return {
    config: read,
    agents: resolveAgents(root, read, composed.agents, (name) => providers.get(name), providers.defaultProvider()),
    composed,
  };
}

/** A file's text; '' when it is missing or unreadable (a reload that reads it says why). */
function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** `city.toml` read, its errors naming it as the city knows it (`city.toml: …`). */
function readConfigFile(path: string): CityConfig {
  let text: string;
  try {
    text = readTomlText(path, 'city.toml');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw configReadError(err, 'city.toml');
  }
  return parseCityConfig(text, 'city.toml');
}

/** What the rest of the city does when the configuration in use changes (wired by the composition root). */
export interface ConfigReactions {
  /** Files of the city changed, or we wrote one: orders and formulas are read from their files when asked for. */
  looked(): void;
  /** A configuration was taken: what runs on its settings (maintenance, services) follows it. */
  taken(config: CityConfig): void;
  /** What the city runs may have changed: the tick looks again. */
  changed(): void;
}

/**
 * The configuration in use and how it changes: at startup, after each write of ours (`reloadConfig`), after
 * each edit on disk (`reloadFromDisk`).
 */
export class ConfigInUse {
  private lastReloadError: string | undefined;
  private lastReloadPlace: ConfigErrorPlace | undefined;
  /** What the last `config.unsupported` named, so that a reload that changes nothing there records nothing. */
  private ignoredDigest = JSON.stringify([[], []]);
  /**
   * The texts of the file our last write put in use and of `packs.lock` (undefined once a reload from disk took
   * what was there).
   */
  private taken: Record<string, string> | undefined;

  constructor(
    private readonly paths: CityPaths,
    private readonly providers: ProviderRegistry,
    private loaded: LoadedConfig,
    private readonly log: EventLog,
    private readonly reactions: ConfigReactions,
    private readonly logger?: Logger,
  ) {}

  get config(): CityConfig {
    return this.loaded.config;
  }

  get composed(): ComposedConfig {
    return this.loaded.composed;
  }

  get agents(): AgentDefinition[] {
    return this.loaded.agents;
  }

  /** An agent by its qualified name (`base`, or `dir/base`). */
  agent(name: string): AgentDefinition | undefined {
    return this.loaded.agents.find((a) => a.name === name);
  }

  /**
   * The `orders/` directories of the packs rigs import: `binding` without its rig (`review` of `web/review`), the
   * rig, and the rig's directory (its orders run there).
   */
  rigPackDirs(kind: 'orders'): { binding: string; dir: string; root: string; rig: string; rigDir: string }[] {
    const rigs = this.loaded.composed.config.rigs;
    return this.loaded.composed.packs.flatMap((p) => {
      const rig = p.rig === undefined ? undefined : rigs.find((r) => r.name === p.rig);
      if (p.dir === undefined || rig === undefined) return [];
      const binding = p.binding.startsWith(`${rig.name}/`) ? p.binding.slice(rig.name.length + 1) : p.binding;
      return [
        {
          binding,
          dir: join(p.dir, kind),
          root: p.dir,
          rig: rig.name,
          rigDir: resolve(this.paths.root, rig.path ?? rig.name),
        },
      ];
    });
  }

  /**
   * The `formulas/` or `orders/` directories of the city's imported packs (not its rigs'), by binding, with the
   * namespace their orders are named under.
   */
  packDirs(kind: 'formulas' | 'orders'): { binding: string; namespace: string; dir: string; root: string }[] {
    return this.loaded.composed.packs
      .filter((p) => p.dir !== undefined && p.rig === undefined)
      .map((p) => ({ binding: p.binding, namespace: p.namespace, dir: join(p.dir!, kind), root: p.dir! }));
  }

  /** Why the files on disk are not the configuration in use, when the last edit could not be taken. */
  get reloadError(): string | undefined {
    return this.lastReloadError;
  }

  /** Where in its file the reload error is, when it is a syntax error. */
  get reloadErrorPlace(): ConfigErrorPlace | undefined {
    return this.lastReloadPlace;
  }

  /**
   * Whether the settled changes are only our own last write of a config file or `packs.lock` (and their temporary
   * files), which `reload` already took: composing the city again for them would only repeat that work.
   */
  private isOwnWrite(files: string[]): boolean {
    const taken = this.taken;
    if (!taken) return false;
    const changed = new Set(files.map((f) => f.replace(/\.tmp-\d+$/, '')));
    return [...changed].every((file) => file in taken && readOrEmpty(join(this.paths.root, file)) === taken[file]);
  }

  /**
   * Takes a configuration just written by us (`written.file`: `city.toml` unless it names another file, such as
   * an `agents/<name>/agent.toml`): its providers for the next session start (a running session keeps the
   * program it runs), its agents for the tick, the rest for every reader. Throws a ConfigError, keeping what it
   * had, when it does not resolve.
   */
  reload(config: CityConfig, written?: { file?: string; text: string; composed?: ComposedConfig }): void {
    this.loaded = loadConfig(this.paths.root, this.paths.config, this.providers, config, written?.composed);
    // The watcher hears our own write too: what it would read is what is in use.
    this.taken = written
      ? {
          'packs.lock': readOrEmpty(join(this.paths.root, 'packs.lock')),
          [written.file ?? 'city.toml']: written.text,
        }
      : undefined;
    this.lastReloadError = undefined;
    this.lastReloadPlace = undefined;
    this.recordIgnoredKeys().catch((err: unknown) =>
      this.logger?.error({ err }, 'could not record the configuration’s unsupported keys'),
    );
    this.reactions.changed();
    this.reactions.looked();
    this.reactions.taken(this.config);
  }

  /**
   * Reads the configuration again after an edit on disk (`file`, relative to the city). A broken edit keeps the
   * last good configuration and records `config.reload_failed` with the reason (once per reason); a good one
   * records `config.reloaded` when it changed anything.
   */
  async reloadFromDisk(file: string, all: string[] = [file]): Promise<void> {
    this.reactions.looked();
    if (this.isOwnWrite(all)) return;
    let next: LoadedConfig;
    this.taken = undefined;
    try {
      next = loadConfig(this.paths.root, this.paths.config, this.providers);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      // The registry may hold a half-loaded state: back to what is in use.
      this.providers.load(this.loaded.config, this.paths.config);
      if (err.message === this.lastReloadError) return;
      this.lastReloadError = err.message;
      this.lastReloadPlace = err.place;
      this.logger?.warn({ file, error: err.message }, 'configuration edit not taken');
      await this.log.append({
        type: 'config.reload_failed',
        actor: 'ctl',
        subject: file,
        message: `${err.message}; the last good configuration stays in use`,
        payload: { file, error: err.message },
      });
      return;
    }
    const hadError = this.lastReloadError !== undefined;
    this.lastReloadError = undefined;
    this.lastReloadPlace = undefined;
    const same =
      isDeepStrictEqual(next.config, this.loaded.config) &&
      isDeepStrictEqual(next.composed.packs, this.loaded.composed.packs) &&
      isDeepStrictEqual(
        next.agents.map((a) => [a.name, a.fingerprint, a.config]),
        this.loaded.agents.map((a) => [a.name, a.fingerprint, a.config]),
      );
    this.loaded = next;
    this.reactions.taken(next.config);
    await this.recordIgnoredKeys();
    if (same && !hadError) return;
    await this.log.append({ type: 'config.reloaded', actor: 'ctl', subject: file, payload: { file } });
    this.reactions.changed();
  }

  /**
   * Records `config.unsupported` naming what the configuration in use says that ctl does not act on: when it
   * loads, and after a reload only when that changed.
   */
  async recordIgnoredKeys(): Promise<void> {
    const { unsupported, unknownKeys: unknown } = this.loaded.composed;
    const digest = JSON.stringify([unsupported, unknown]);
    if (digest === this.ignoredDigest) return;
    this.ignoredDigest = digest;
    if (unsupported.length === 0 && unknown.length === 0) return;
    const files = [...new Set([...unsupported, ...unknown].map((i) => i.file))];
    await this.log.append({
      type: 'config.unsupported',
      actor: 'ctl',
      subject: files.join(' '),
      message: `${unsupported.length} not supported, ${unknown.length} unknown (ctl config validate names each)`,
      payload: { unsupported, unknown },
    });
  }
}
