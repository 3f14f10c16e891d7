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

/** Everything the controller holds for its one city once it is running. */
export class CityRuntime {
  readonly startedAt = Date.now();
  readonly prober = new ReadinessProber();

  constructor(
    /** The name this controller serves: the registered one when the supervisor started it. */
    readonly name: string,
    readonly paths: CityPaths,
    readonly config: CityConfig,
    readonly log: EventLog,
    /** Follows the log for streams and blocking queries, whoever appends. */
    readonly tail: LogTail,
    /** The city's work units, over its bead store. */
    readonly beads: BeadsService,
    /** The providers sessions start from. */
    readonly providers: ProviderRegistry,
    readonly sessions: SessionService,
  ) {
    this.mail = new MailService(beads);
    this.convoys = new ConvoysService(beads);
  }

  readonly mail: MailService;
  readonly convoys: ConvoysService;

  get root(): string {
    return this.paths.root;
  }

  uptimeSec(): number {
    return Math.floor((Date.now() - this.startedAt) / 1000);
  }
}
