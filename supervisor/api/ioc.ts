import type { IocContainer, Newable } from '@tsoa/runtime';
import type { SupervisorHealthOutputBody } from '../../shared/dto/health.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { HomePaths } from '../../shared/paths.js';
import type { ReadinessProber } from '../../shared/readiness.js';
import type { ApiTokens } from '../api-tokens.js';
import type { BrowserSessions } from '../browser-sessions.js';
import type { CityOperations } from '../city-operations.js';
import type { EventView } from '../event-view.js';

/** What the supervisor's route classes work with. */
export interface SupervisorServices {
  cities: CityOperations;
  events: EventView;
  prober: ReadinessProber;
  tokens: ApiTokens;
  /** The supervisor's own event log (token changes are recorded there). */
  supervisorLog: EventLog;
  sessions: BrowserSessions;
  /** The files of `$CTL_HOME` (what the machine's doctor checks look at). */
  paths: HomePaths;
  health(): SupervisorHealthOutputBody;
}

let services: SupervisorServices | undefined;

export function provideServices(value: SupervisorServices): void {
  services = value;
}

/** tsoa's container: a fresh route object per request (tsoa keeps response status and headers on it). */
export const iocContainer: IocContainer = {
  get<T>(controller: unknown): T {
    if (!services) throw new Error('supervisor services are not ready');
    return new (controller as Newable<T, [SupervisorServices]>)(services);
  },
};
