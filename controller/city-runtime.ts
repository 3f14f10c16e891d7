import { join } from 'node:path';
import { readTomlText } from '../shared/config/toml-file.js';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { readFileSync } from 'node:fs';
import { configReadError, parseCityConfig, type CityConfig } from '../shared/config/city-config.js';
import { ConfigError, type ConfigErrorPlace } from '../shared/config/config-error.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { LogTail } from '../shared/events/log-tail.js';
import type { CityPaths } from '../shared/paths.js';
import { ReadinessProber } from '../shared/readiness.js';
import type { BeadsService } from './beads/beads-service.js';
import type { ProviderRegistry } from './providers/provider-registry.js';
import type { SessionService } from './sessions/session-service.js';
import { ConvoysService } from './beads/convoys.js';
import { MailService } from './beads/mail.js';
import { StatusCounts } from './status-counts.js';
import { ProviderEditor } from './config/provider-editor.js';
import { resolveAgents, type AgentDefinition } from './agents/agent-catalog.js';
import { composeConfig, type ComposedConfig } from './config/compose.js';
import { packCacheRoot } from './packs/pack-cache.js';
import { checkAgents } from './agents/check-agents.js';
import type { AgentTick } from './agents/tick.js';
import { cityClock, type Clock } from './clock.js';
import { CommandRunner } from './commands.js';
import { StoreMaintenance } from './beads/store-maintenance.js';
import type { UsageLog } from './usage/usage-log.js';
import { FormulaCatalog } from './formulas/formula-catalog.js';
import { MoleculeEngine } from './molecules/molecule-engine.js';
import { RunViews } from './molecules/run-views.js';
import { OrderCatalog } from './orders/order-catalog.js';
import { OrderDispatcher } from './orders/order-dispatch.js';
import { OrderScheduler } from './orders/order-scheduler.js';
import { ServiceRunner } from './services/service-runner.js';
import { ExtmsgService } from './extmsg/extmsg-service.js';
import { WorktreeMerges } from './worktrees/bead-merge.js';

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

/** Everything the controller holds for its one city once it is running. */
export class CityRuntime {
  readonly startedAt = Date.now();
  readonly prober = new ReadinessProber();
  /** The controller's tick (set once it runs). */
  tick: AgentTick | undefined;
  private loaded: LoadedConfig;
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
    /** The name this controller serves: the registered one when the supervisor started it. */
    readonly name: string,
    readonly paths: CityPaths,
    loaded: LoadedConfig,
    readonly log: EventLog,
    /** Follows the log for streams and blocking queries, whoever appends. */
    readonly tail: LogTail,
    /** The city's work units, over its bead store. */
    readonly beads: BeadsService,
    /** The providers sessions start from. */
    readonly providers: ProviderRegistry,
    readonly sessions: SessionService,
    /** What the sessions' turns used, as their providers reported it. */
    readonly usage: UsageLog,
    private readonly logger?: Logger,
    /** The time orders and gates go by. */
    readonly clock: Clock = cityClock(),
  ) {
    this.loaded = loaded;
    this.mail = new MailService(beads);
    this.convoys = new ConvoysService(beads);
    // A bead finished in a session's worktree records its branch, and merges it when its agent says so.
    this.merges = new WorktreeMerges({
      beads,
      worktrees: sessions.worktrees,
      sessionRecord: (id) => sessions.recordOf(id),
      agent: (agentName) => this.agent(agentName),
      tell: (id, text) => sessions.tell(id, text, 'woken: its bead was reopened'),
      logger,
    });
    this.statusCounts = new StatusCounts(() => ({ work: beads.workCounts(), mail: this.mail.count({}) }), log);
    this.formulas = new FormulaCatalog(
      paths.root,
      () => this.config.rigs,
      () => this.packDirs('formulas'),
    );
    this.runs = new RunViews(beads.store);
    this.molecules = new MoleculeEngine({
      beads,
      log,
      commands: this.commands,
      cityRoot: paths.root,
      env: { ...process.env, CTL_CITY: name, CTL_CITY_ROOT: paths.root },
      logger,
      now: () => this.clock.now(),
      poke: () => this.tick?.poke(),
    });
    clock.onMoved(() => this.molecules.recheckAll());
    this.maintenance = new StoreMaintenance({
      store: beads.store,
      backend: beads.store.backend,
      log,
      statePath: join(paths.runtimeDir, 'maintenance.json'),
      logger,
    });
    this.maintenance.schedule(loaded.config.maintenanceIntervalMs);
    const commandEnv = { ...process.env, CTL_CITY: name, CTL_CITY_ROOT: paths.root };
    this.orders = new OrderCatalog(
      paths.root,
      () => this.config.orders,
      () => this.packDirs('orders'),
    );
    const dispatcher = new OrderDispatcher({
      beads,
      log,
      commands: this.commands,
      formulas: this.formulas,
      molecules: this.molecules,
      cityRoot: paths.root,
      env: commandEnv,
      logger,
      settled: () => this.orderScheduler.evaluateSoon(),
    });
    this.orderScheduler = new OrderScheduler({
      catalog: this.orders,
      dispatcher,
      store: beads.store,
      log,
      tail,
      clock,
      commands: this.commands,
      cityRoot: paths.root,
      env: commandEnv,
      conditionEveryMs: () => this.config.daemon.patrolIntervalMs,
      logger,
    });
    this.services = new ServiceRunner({
      cityName: name,
      cityRoot: paths.root,
      runtimeDir: paths.runtimeDir,
      log,
      env: process.env,
      logger,
    });
    this.extmsg = new ExtmsgService({
      dir: join(paths.runtimeDir, 'extmsg'),
      log,
      sessions,
      agent: (agentName) => this.agent(agentName),
      callbackHosts: () => this.config.extmsgCallbackHosts,
      logger,
    });
    this.providerEditor = new ProviderEditor(this);
  }

  readonly mail: MailService;
  readonly convoys: ConvoysService;
  readonly merges: WorktreeMerges;
  /** What `GET /status` counts in the store, kept in memory between the events that change it. */
  readonly statusCounts: StatusCounts;
  /** Shell commands of formulas and orders, killed when the city stops. */
  readonly commands = new CommandRunner();
  readonly formulas: FormulaCatalog;
  /** Runs of formulas: their beads, carried on as they change. */
  readonly molecules: MoleculeEngine;
  readonly runs: RunViews;
  readonly orders: OrderCatalog;
  /** Bead store maintenance, on demand and on `[maintenance] interval`. */
  readonly maintenance: StoreMaintenance;
  /** When orders fire (started with the tick). */
  readonly orderScheduler: OrderScheduler;
  /** External messaging: adapters, bindings, groups, transcripts. */
  readonly extmsg: ExtmsgService;
  /** The city's program services (`[[service]]` with a command). */
  readonly services: ServiceRunner;
  /** The provider API's writes to `city.toml`. */
  readonly providerEditor: ProviderEditor;

  /** The city's `city.toml` as last read: at startup, after each write of ours, after each edit on disk. */
  get config(): CityConfig {
    return this.loaded.config;
  }

  /** How the configuration in use was composed (packs, problems, patches). */
  get composed(): ComposedConfig {
    return this.loaded.composed;
  }

  /** The `formulas/` or `orders/` directories of the city's imported packs (not its rigs'), by binding. */
  packDirs(kind: 'formulas' | 'orders'): { binding: string; dir: string; root: string }[] {
    return this.loaded.composed.packs
      .filter((p) => p.dir !== undefined && p.rig === undefined)
      .map((p) => ({ binding: p.binding, dir: join(p.dir!, kind), root: p.dir! }));
  }

  /** `city.toml` as it is on disk now. */
  configFromDisk(): CityConfig {
    return readConfigFile(this.paths.config);
  }

  /** The city's agents, resolved. */
  get agents(): AgentDefinition[] {
    return this.loaded.agents;
  }

  /** An agent by its qualified name (`base`, or `dir/base`). */
  agent(name: string): AgentDefinition | undefined {
    return this.loaded.agents.find((a) => a.name === name);
  }

  /**
   * Whether the settled changes are only our own last write of a config file or `packs.lock` (and their temporary
   * files), which `reloadConfig` already took: composing the city again for them would only repeat that work.
   */
  private isOwnWrite(files: string[]): boolean {
    const taken = this.taken;
    if (!taken) return false;
    const changed = new Set(files.map((f) => f.replace(/\.tmp-\d+$/, '')));
    return [...changed].every((file) => file in taken && readOrEmpty(join(this.paths.root, file)) === taken[file]);
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
   * Takes a configuration just written by us (`written.file`: `city.toml` unless it names another file, such as
   * an `agents/<name>/agent.toml`): its providers for the next session start (a running session keeps the
   * program it runs), its agents for the tick, the rest for every reader. Throws a ConfigError, keeping what it
   * had, when it does not resolve.
   */
  reloadConfig(config: CityConfig, written?: { file?: string; text: string; composed?: ComposedConfig }): void {
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
    this.tick?.poke();
    this.orderScheduler.evaluateSoon();
    this.maintenance.schedule(this.config.maintenanceIntervalMs);
    if (this.tick) this.services.reconcile(this.config.services);
  }

  /**
   * Reads the configuration again after an edit on disk (`file`, relative to the city). A broken edit keeps the
   * last good configuration and records `config.reload_failed` with the reason (once per reason); a good one
   * records `config.reloaded` when it changed anything.
   */
  async reloadFromDisk(file: string, all: string[] = [file]): Promise<void> {
    // Orders and formulas are read from their files as they are asked for: the scheduler only needs to look.
    this.orderScheduler.evaluateSoon();
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
    this.maintenance.schedule(next.config.maintenanceIntervalMs);
    if (this.tick) this.services.reconcile(next.config.services);
    await this.recordIgnoredKeys();
    if (same && !hadError) return;
    await this.log.append({ type: 'config.reloaded', actor: 'ctl', subject: file, payload: { file } });
    this.tick?.poke();
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

  get root(): string {
    return this.paths.root;
  }

  uptimeSec(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }
}
