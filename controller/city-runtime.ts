import type { ReviewService } from './reviews/review-service.js';
import type { Logger } from 'pino';
import type { ConfigErrorPlace } from '../shared/config/config-error.js';
import type { CityConfig } from '../shared/config/city-config.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { LogTail } from '../shared/events/log-tail.js';
import type { CityPaths } from '../shared/paths.js';
import type { ReadinessProber } from '../shared/readiness.js';
import type { AgentDefinition } from './agent-catalog/agent-catalog.js';
import type { AgentTick } from './agents/tick.js';
import type { WorkHolding } from './agents/work-holding.js';
import type { BeadsService } from './beads/beads-service.js';
import type { ConvoysService } from './beads/convoys.js';
import type { MailService } from './beads/mail.js';
import type { StoreMaintenance } from './beads/store-maintenance.js';
import type { Clock } from './clock.js';
import type { CommandRunner } from './commands.js';
import type { ComposedConfig } from './config/compose.js';
import type { ConfigInUse } from './config/config-in-use.js';
import type { ExtmsgService } from './extmsg/extmsg-service.js';
import type { FormulaCatalog } from './formulas/formula-catalog.js';
import type { RunVars } from './formulas/run-vars.js';
import type { MoleculeEngine } from './molecules/molecule-engine.js';
import type { RunViews } from './molecules/run-views.js';
import type { OrderCatalog } from './orders/order-catalog.js';
import type { OrderScheduler } from './orders/order-scheduler.js';
import type { WebhookDesk } from './webhooks/webhook-desk.js';
import type { SessionWaits } from './waits/session-waits.js';
import type { ProviderEditor } from './config/provider-editor.js';
import type { ProviderRegistry } from './providers/provider-registry.js';
import type { ServiceRunner } from './services/service-runner.js';
import type { HostRegistry } from './hosts/host-registry.js';
import type { SshHost } from './hosts/ssh-host.js';
import type { HostGateways } from './hosts/host-gateway.js';
import type { Session } from './sessions/session.js';
import type { SessionService } from './sessions/session-service.js';
import type { StatusCounts } from './status-counts.js';
import type { UsageLog } from './usage/usage-log.js';
import type { WorktreeMerges } from './worktrees/bead-merge.js';
import type { RigOverlaps } from './worktrees/overlaps.js';

/** The parts of a running city, as `assembleCity` builds them. */
export interface CityParts {
  /** The name this controller serves: the registered one when the supervisor started it. */
  name: string;
  paths: CityPaths;
  /** The configuration in use and its reloads. */
  settings: ConfigInUse;
  log: EventLog;
  /** The controller's own log (controller.log): what went wrong where no request waits to be told. */
  logger: Logger;
  /** Follows the log for streams and blocking queries, whoever appends. */
  tail: LogTail;
  /** The city's work units, over its bead store. */
  beads: BeadsService;
  mail: MailService;
  convoys: ConvoysService;
  /** A bead finished in a session's worktree: its branch recorded, and merged when its agent says so. */
  merges: WorktreeMerges;
  /** Which of a rig's open worktree sessions changed the same files. */
  overlaps: RigOverlaps;
  reviews: ReviewService;
  /** What `GET /status` counts in the store, kept in memory between the events that change it. */
  statusCounts: StatusCounts;
  /** The providers sessions start from. */
  providers: ProviderRegistry;
  /** Whether providers' programs are installed and signed in. */
  prober: ReadinessProber;
  sessions: SessionService;
  /** What the sessions' turns used, as their providers reported it. */
  usage: UsageLog;
  /** Starts, wakes and stops the agents' sessions and hands them their work. */
  tick: AgentTick;
  /** Holding and releasing work: every hand-over of a bead to a session (sling, the tick) and its release. */
  holding: WorkHolding;
  /** The time orders and gates go by. */
  clock: Clock;
  /** Shell commands of formulas and orders, killed when the city stops. */
  commands: CommandRunner;
  formulas: FormulaCatalog;
  /** The vars a run knows itself (its bead, convoy, agent, rig, branch, date). */
  runVars: RunVars;
  /** Runs of formulas: their beads, carried on as they change. */
  molecules: MoleculeEngine;
  runs: RunViews;
  orders: OrderCatalog;
  /** When orders fire. */
  orderScheduler: OrderScheduler;
  /** Webhook deliveries to orders: checked against their secrets, then fired. */
  webhooks: WebhookDesk;
  /** Sessions waiting for beads to close, nudged when they have. */
  waits: SessionWaits;
  /** Bead store maintenance, on demand and on `[maintenance] interval`. */
  maintenance: StoreMaintenance;
  /** External messaging: adapters, bindings, groups, transcripts. */
  extmsg: ExtmsgService;
  /** The city's program services (`[[service]]` with a command). */
  services: ServiceRunner;
  /** The machines sessions run on (`local` and each `[[host]]`), with their state as last checked. */
  hosts: HostRegistry<SshHost>;
  /** The socket each host's reverse tunnel ends in: its sessions' ctl, with their own credentials. */
  gateways: HostGateways;
  /** The provider API's writes to `city.toml`. */
  providerEditor: ProviderEditor;
}

/**
 * Everything the controller holds for its one city once it is running: what the HTTP routes are given. Built
 * in one place (`assemble-city.ts`); the parts of the city's domains take narrow hosts, never this.
 */
export class CityRuntime implements CityParts {
  readonly startedAt = Date.now();
  readonly name: string;
  readonly paths: CityPaths;
  readonly settings: ConfigInUse;
  readonly log: EventLog;
  readonly logger: Logger;
  readonly tail: LogTail;
  readonly beads: BeadsService;
  readonly mail: MailService;
  readonly convoys: ConvoysService;
  readonly merges: WorktreeMerges;
  readonly overlaps: RigOverlaps;
  readonly reviews: ReviewService;
  readonly statusCounts: StatusCounts;
  readonly providers: ProviderRegistry;
  readonly prober: ReadinessProber;
  readonly sessions: SessionService;
  readonly usage: UsageLog;
  readonly tick: AgentTick;
  readonly holding: WorkHolding;
  readonly clock: Clock;
  readonly commands: CommandRunner;
  readonly formulas: FormulaCatalog;
  readonly runVars: RunVars;
  readonly molecules: MoleculeEngine;
  readonly runs: RunViews;
  readonly orders: OrderCatalog;
  readonly orderScheduler: OrderScheduler;
  readonly webhooks: WebhookDesk;
  readonly waits: SessionWaits;
  readonly maintenance: StoreMaintenance;
  readonly extmsg: ExtmsgService;
  readonly services: ServiceRunner;
  readonly hosts: HostRegistry<SshHost>;
  readonly gateways: HostGateways;
  readonly providerEditor: ProviderEditor;

  constructor(parts: CityParts) {
    this.name = parts.name;
    this.paths = parts.paths;
    this.settings = parts.settings;
    this.log = parts.log;
    this.logger = parts.logger;
    this.tail = parts.tail;
    this.beads = parts.beads;
    this.mail = parts.mail;
    this.convoys = parts.convoys;
    this.merges = parts.merges;
    this.overlaps = parts.overlaps;
    this.reviews = parts.reviews;
    this.statusCounts = parts.statusCounts;
    this.providers = parts.providers;
    this.prober = parts.prober;
    this.sessions = parts.sessions;
    this.usage = parts.usage;
    this.tick = parts.tick;
    this.holding = parts.holding;
    this.clock = parts.clock;
    this.commands = parts.commands;
    this.formulas = parts.formulas;
    this.runVars = parts.runVars;
    this.molecules = parts.molecules;
    this.runs = parts.runs;
    this.orders = parts.orders;
    this.orderScheduler = parts.orderScheduler;
    this.webhooks = parts.webhooks;
    this.waits = parts.waits;
    this.maintenance = parts.maintenance;
    this.extmsg = parts.extmsg;
    this.services = parts.services;
    this.hosts = parts.hosts;
    this.gateways = parts.gateways;
    this.providerEditor = parts.providerEditor;
  }

  /** The city's `city.toml` as last read: at startup, after each write of ours, after each edit on disk. */
  get config(): CityConfig {
    return this.settings.config;
  }

  /** How the configuration in use was composed (packs, problems, patches). */
  get composed(): ComposedConfig {
    return this.settings.composed;
  }

  /** The city's agents, resolved. */
  get agents(): AgentDefinition[] {
    return this.settings.agents;
  }

  /** An agent by its qualified name (`base`, or `dir/base`). */
  agent(name: string): AgentDefinition | undefined {
    return this.settings.agent(name);
  }

  /** An open session by id, name or alias (a sling's target may be one). */
  openSession(idOrName: string): Session | undefined {
    return this.sessions.findOpen(idOrName);
  }

  /** Why the files on disk are not the configuration in use, when the last edit could not be taken. */
  get reloadError(): string | undefined {
    return this.settings.reloadError;
  }

  /** Where in its file the reload error is, when it is a syntax error. */
  get reloadErrorPlace(): ConfigErrorPlace | undefined {
    return this.settings.reloadErrorPlace;
  }

  /** Takes a configuration just written by us (see `ConfigInUse.reload`). */
  reloadConfig(config: CityConfig, written?: { file?: string; text: string; composed?: ComposedConfig }): void {
    this.settings.reload(config, written);
  }

  /** Reads the configuration again after an edit on disk (see `ConfigInUse.reloadFromDisk`). */
  reloadFromDisk(file: string, all?: string[]): Promise<void> {
    return this.settings.reloadFromDisk(file, all);
  }

  get root(): string {
    return this.paths.root;
  }

  uptimeSec(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }
}
