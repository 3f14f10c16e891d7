import type Koa from 'koa';
import type { Logger } from 'pino';
import { createApp } from '../../shared/http/app.js';
import { jsonBody } from '../../shared/http/json-body.js';
import { apiRouter } from '../../shared/http/router.js';
import { streamSettings } from '../../shared/events/stream-settings.js';
import { serveOpenApi } from '../../shared/openapi/document.js';
import { provideRuntime } from '../api/ioc.js';
import type { CityRuntime } from '../city-runtime.js';
import { cityScope } from './city-scope.js';
import { cityEventStream } from './event-stream.js';
import { RegisterRoutes } from '../generated/routes.js';
import { serviceProxy, type ServiceConnections } from './service-proxy.js';
import { sessionStream } from './session-stream.js';
import { storeProblems } from '../api/store-problems.js';
import { configWarnings } from '../config/config-warnings.js';
import { agentOutputStream } from './agent-output-stream.js';

/** The controller's HTTP application: the shared conventions, then its city's routes at their public paths. */
export function createControllerApp(city: CityRuntime, services: ServiceConnections, logger: Logger): Koa {
  provideRuntime(city);
  const app = createApp({
    logger,
    allowedHosts: [],
    allowedOrigins: [],
    readOnly: false,
    // Behind the supervisor, keep its request id so one request has one id in both logs.
    trustUpstreamRequestId: true,
  });
  app.use(storeProblems());
  app.use(configWarnings());
  app.use(serveOpenApi());
  app.use(cityScope(city.name));
  app.use(serviceProxy(city, services));
  const streams = streamSettings();
  app.use(cityEventStream(city, streams));
  app.use(sessionStream(city, streams));
  app.use(agentOutputStream(city, streams));
  // A formula is written and validated as its TOML text; a webhook's body is checked against its signature as bytes.
  app.use(jsonBody({ rawText: [/\/formulas\/[^/]+(\/validate)?$/], rawBytes: [/^\/v0\/city\/[^/]+\/hook\/[^/]+$/] }));
  const router = apiRouter();
  RegisterRoutes(router);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
