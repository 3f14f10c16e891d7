import type Koa from 'koa';
import type { Logger } from 'pino';
import type { StreamSettings } from '../shared/events/stream-settings.js';
import { createApp } from '../shared/http/app.js';
import { jsonBody } from '../shared/http/json-body.js';
import { apiRouter } from '../shared/http/router.js';
import { serveOpenApi } from '../shared/openapi/document.js';
import { provideServices, type SupervisorServices } from './api/ioc.js';
import { cityProxy, type CityProxyOptions } from './city-proxy.js';
import { dashboard } from './dashboard.js';
import type { EventHub } from './event-hub.js';
import { supervisorEventStream } from './event-stream.js';
import { RegisterRoutes } from './generated/routes.js';
import type { Reconciler } from './reconciler.js';
import type { Registry } from './registry.js';

export interface SupervisorAppOptions {
  logger: Logger;
  services: SupervisorServices;
  registry: Registry;
  reconciler: Reconciler;
  hub: EventHub;
  streams: StreamSettings;
  allowedHosts: string[];
  allowedOrigins: string[];
  readOnly: boolean;
  proxy: CityProxyOptions;
}

/**
 * The supervisor's HTTP application: shared conventions, then the per-city proxy (before body parsing, so
 * proxied bodies stream through untouched), then the supervisor's own routes.
 */
export function createSupervisorApp(o: SupervisorAppOptions): Koa {
  provideServices(o.services);
  const app = createApp({
    logger: o.logger,
    allowedHosts: o.allowedHosts,
    allowedOrigins: o.allowedOrigins,
    readOnly: o.readOnly,
    trustUpstreamRequestId: false,
  });
  app.use(serveOpenApi());
  app.use(dashboard());
  app.use(supervisorEventStream(o.hub, o.streams));
  app.use(cityProxy(o.registry, o.reconciler, o.proxy));
  app.use(jsonBody());
  const router = apiRouter();
  RegisterRoutes(router);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
