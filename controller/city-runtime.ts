import type { CityConfig } from '../shared/config/city-config.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { LogTail } from '../shared/events/log-tail.js';
import type { CityPaths } from '../shared/paths.js';
import { ReadinessProber } from '../shared/readiness.js';
import type { BeadsService } from './beads/beads-service.js';
import type { ProviderRegistry } from './providers/provider-registry.js';
import type { SessionService } from './sessions/session-service.js';
import { ConvoysService } from './beads/convoys.js';
import { MailService } from './beads/mail.js';
import { ProviderEditor } from './providers/provider-editor.js';

/** Everything the controller holds for its one city once it is running. */
export class CityRuntime {
  readonly startedAt = Date.now();
  readonly prober = new ReadinessProber();

  constructor(
    /** The name this controller serves: the registered one when the supervisor started it. */
    readonly name: string,
    readonly paths: CityPaths,
    config: CityConfig,
    readonly log: EventLog,
    /** Follows the log for streams and blocking queries, whoever appends. */
    readonly tail: LogTail,
    /** The city's work units, over its bead store. */
    readonly beads: BeadsService,
    /** The providers sessions start from. */
    readonly providers: ProviderRegistry,
    readonly sessions: SessionService,
  ) {
    this.currentConfig = config;
    this.mail = new MailService(beads);
    this.convoys = new ConvoysService(beads);
    this.providerEditor = new ProviderEditor({
      configPath: paths.config,
      reload: (next) => this.reloadConfig(next),
    });
  }

  readonly mail: MailService;
  readonly convoys: ConvoysService;
  /** The provider API's writes to `city.toml`. */
  readonly providerEditor: ProviderEditor;
  private currentConfig: CityConfig;

  /** The city's `city.toml` as last read: at startup, and again after each write of ours. */
  get config(): CityConfig {
    return this.currentConfig;
  }

  /**
   * Takes a `city.toml` just read: its providers for the next session start (a running session keeps the
   * program it runs), and the rest for every reader. Throws a ConfigError, keeping what it had, when its
   * providers do not resolve.
   */
  reloadConfig(config: CityConfig): void {
    this.providers.load(config, this.paths.config);
    this.currentConfig = config;
  }

  get root(): string {
    return this.paths.root;
  }

  uptimeSec(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }
}
