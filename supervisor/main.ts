import { chmodSync, realpathSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { upgradeProxy } from './upgrade-proxy.js';
import { handlerOf } from '../shared/http/app.js';
import { answerClientErrors } from '../shared/http/client-error.js';
import { isLoopbackHost } from '../shared/http/host-guard.js';
import { PeerAccess } from '../shared/http/peer-access.js';
import { readSupervisorConfig } from '../shared/config/supervisor-config.js';
import type { SupervisorShutdownPayload, SupervisorStartedPayload } from '../shared/dto/events.js';
import { EventLog } from '../shared/events/event-log.js';
import { streamSettings } from '../shared/events/stream-settings.js';
import { createLogger } from '../shared/log.js';
import { ctlEntryPath, ctlHome, homePaths } from '../shared/paths.js';
import { ReadinessProber } from '../shared/readiness.js';
import { writeSupervisorAddress } from '../shared/supervisor-address.js';
import type { SupervisorRunOptions } from '../shared/run-options.js';
import { VERSION } from '../shared/version.js';
import { AccessGate } from './access-gate.js';
import { ApiTokens } from './api-tokens.js';
import { createSupervisorApp } from './app.js';
import { BrowserSessions } from './browser-sessions.js';
import { fastProxy } from './fast-proxy.js';
import { controllerPools } from './city-proxy.js';
import { CityOperations } from './city-operations.js';
import { EventHub } from './event-hub.js';
import { EventView } from './event-view.js';
import { HomeLock } from './home-lock.js';
import { Notifier } from './notifier.js';
import { HEALTHY_RUN_MS } from './city-slot.js';
import { Reconciler } from './reconciler.js';
import { Registry } from './registry.js';
import { createWebhookListener } from './webhook-listener.js';

/** Every controller and its children are gone within this long after SIGTERM, then the supervisor exits. */
const SHUTDOWN_DEADLINE_MS = 10_000;
/** A controller gets this long after SIGTERM before SIGKILL (tests shorten it with CTL_STOP_GRACE_MS). */
const STOP_GRACE_MS = 7_000;
/** A proxied request that gets no connection to its controller within this long is a 503. */
const PROXY_CONNECT_TIMEOUT_MS = 10_000;
/** A stream request for a city that is only restarting is held this long (decisions.md). */
const STREAM_HOLD_MS = 10_000;

/**
 * `ctl supervisor run`: one supervisor per `$CTL_HOME`, in the foreground, until SIGTERM or SIGINT.
 * Throws (with a one-line message) when it cannot start.
 */
export async function run(options: SupervisorRunOptions): Promise<void> {
  const paths = homePaths(ctlHome());
  const config = readSupervisorConfig(paths.config);
  const bind = options.host ?? config.bind;
  const port = options.port ?? config.port;
  const homeLock = new HomeLock(paths);
  const previousExit = homeLock.acquire();
  // `ctl supervisor start` points our stderr at the log file already; then we write the file only once.
  const logger = createLogger({ name: 'supervisor', file: paths.log, stderr: process.env.CTL_LOG_STDERR !== '0' });
  const startedAt = Date.now();
  const stopGraceMs = Number(process.env.CTL_STOP_GRACE_MS) || STOP_GRACE_MS;

  try {
    // The home holds the token hashes, the registry, the event log and the logs: its user's alone.
    chmodSync(paths.home, 0o700);
    const tokens = new ApiTokens(paths.tokens);
    tokens.load();
    const peers = new PeerAccess({ allowUsers: config.allowUsers, allowGroups: config.allowGroups });
    if (!isLoopbackHost(bind.toLowerCase()) && tokens.size === 0) {
      throw new Error(
        `refusing to listen on ${bind}: no API tokens exist, so nobody off this machine could use it; ` +
          'start on 127.0.0.1 and run `ctl token create NAME` first',
      );
    }
    const sessions = new BrowserSessions();
    const registry = new Registry(paths.registry);
    registry.load();
    const supervisorLog = EventLog.at(paths.events, paths.eventsLock);
    // Controllers stream with the supervisor's heartbeat interval, and tell their sessions' programs where the
    // API is (`CTL_API`), so `ctl` run by an agent reaches this supervisor whatever its port.
    const apiHost = bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
    const controllerEnv: NodeJS.ProcessEnv = {
      ...process.env,
      CTL_SSE_HEARTBEAT_MS: String(config.sseHeartbeatMs),
      ...(port ? { CTL_API: `http://${apiHost}:${port}` } : {}),
    };
    const reconciler = new Reconciler({
      registry,
      supervisorLog,
      logger,
      entry: ctlEntryPath(),
      env: controllerEnv,
      intervalMs: config.patrolIntervalMs,
      startupTimeoutMs: 60_000,
      stopGraceMs,
      healthyRunMs: Number(process.env.CTL_HEALTHY_RUN_MS) || HEALTHY_RUN_MS,
    });
    const events = new EventView(registry, reconciler, supervisorLog);
    const hub = new EventHub(events);
    reconciler.on('changed', () => hub.sync());
    const prober = new ReadinessProber();
    const cities = new CityOperations({
      registry,
      reconciler,
      supervisorLog,
      events,
      prober,
      logger,
      home: realpathSync(paths.home),
      startTimeoutMs: 30_000,
      stopTimeoutMs: stopGraceMs + 2_000,
    });
    const health = () => {
      const age = Date.now() - reconciler.lastPassAt;
      const healthy = age < 3 * config.patrolIntervalMs;
      const list = cities.list();
      return {
        status: healthy ? 'ok' : 'degraded',
        version: VERSION,
        uptime_sec: Math.floor((Date.now() - startedAt) / 1000),
        cities_total: list.length,
        cities_running: list.filter((c) => c.running).length,
        pid: process.pid,
        home: paths.home,
        reconciler: {
          last_tick_age_ms: age,
          ticks: reconciler.passes,
          interval_ms: config.patrolIntervalMs,
          healthy,
        },
      };
    };
    const readOnly = !isLoopbackHost(bind.toLowerCase()) && !config.allowMutations;
    const connectTimeoutMs = Number(process.env.CTL_PROXY_CONNECT_TIMEOUT_MS) || PROXY_CONNECT_TIMEOUT_MS;
    // One pool per running controller, for both ways a request takes to it.
    const pools = controllerPools(registry, reconciler);
    const app = createSupervisorApp({
      logger,
      services: { cities, events, prober, health, tokens, sessions, supervisorLog, paths },
      registry,
      reconciler,
      hub,
      streams: streamSettings(process.env, config.sseHeartbeatMs),
      allowedHosts: config.allowedHosts,
      allowedOrigins: config.allowedOrigins,
      readOnly,
      proxy: { pools, connectTimeoutMs, streamHoldMs: STREAM_HOLD_MS },
    });
    const koa = handlerOf(app);
    const proxied = fastProxy({
      registry,
      reconciler,
      logger,
      pools,
      allowedHosts: config.allowedHosts,
      readOnly,
      connectTimeoutMs,
    });
    // Who may use the API is settled first, for every request and upgrade; then requests to running cities go
    // straight to their controllers, the rest (and every other refusal) through Koa.
    const gate = new AccessGate({ peers, tokens, sessions, logger });
    const server = createServer(
      { requireHostHeader: false },
      gate.requests((req, res) => {
        if (!proxied(req, res)) koa(req, res);
      }),
    );
    peers.watch(server);
    server.keepAliveTimeout = 65_000;
    server.on(
      'upgrade',
      gate.upgrades(
        upgradeProxy({ registry, reconciler, allowedHosts: config.allowedHosts, connectTimeoutMs, logger }),
      ),
    );
    answerClientErrors(server, logger);
    // `[webhooks] listen`: deliveries from senders anywhere, on a listener that serves nothing else.
    const hooks = config.webhooksListen
      ? { server: createWebhookListener({ registry, reconciler, pools, logger }), ...config.webhooksListen }
      : undefined;
    // Adopt what a previous supervisor left running before answering, so the first answers are right.
    await reconciler.adoptLeftovers();
    // The webhook listener first: once the API answers, deliveries are taken too.
    if (hooks) await listen(hooks.server, hooks.host, hooks.port, 'webhooks.listen: ');
    await listen(server, bind, port, '');
    const address = server.address();
    const boundPort = typeof address === 'object' && address ? address.port : port;
    controllerEnv.CTL_API = `http://${apiHost}:${boundPort}`;
    // Clients of this home find us here whatever port we were told (`ctl supervisor start --port N`).
    writeSupervisorAddress(paths.address, { pid: process.pid, api: controllerEnv.CTL_API, bind, port: boundPort });
    // `[notify]`: it follows every city's log from now on (a notice is about what happens while we run).
    const notifier = config.notify
      ? new Notifier(config.notify, { hub, supervisorLog, logger, base: () => controllerEnv.CTL_API ?? '' })
      : undefined;
    notifier?.start();
    const started: SupervisorStartedPayload = { previous_exit: previousExit };
    await supervisorLog.append({ type: 'supervisor.started', actor: 'ctl', payload: started });
    reconciler.start();
    logger.info({ home: paths.home, url: `http://${bind}:${boundPort}` }, 'supervisor listening');
    if (hooks) {
      const at = hooks.server.address();
      const hooksUrl = `http://${hooks.host.includes(':') ? `[${hooks.host}]` : hooks.host}:${typeof at === 'object' && at ? at.port : hooks.port}`;
      logger.info({ url: hooksUrl }, 'webhook listener listening (POST /hooks/{city}/{name} only)');
    }

    let stopping = false;
    // SIGTERM, SIGINT: stop every controller, then exit. SIGHUP: restart in place — exit leaving every controller
    // (and so every session) running for the next supervisor to adopt; `ctl supervisor restart` and systemd's
    // `reload` send it.
    const exit = (signal: NodeJS.Signals, mode: SupervisorShutdownPayload['mode']) => {
      if (stopping) return;
      stopping = true;
      const keep = mode === 'preserve_sessions';
      logger.info({ signal }, keep ? 'supervisor restarting: its cities keep running' : 'supervisor stopping');
      // A city whose shutdown_timeout is longer than the usual grace gets it (bounded by its parser, 60 s).
      const deadlineMs = Math.max(SHUTDOWN_DEADLINE_MS, reconciler.longestStopGraceMs() + 3_000);
      setTimeout(() => {
        logger.error('shutdown deadline passed; exiting');
        homeLock.release();
        process.exit(1);
      }, deadlineMs).unref();
      const payload: SupervisorShutdownPayload = { mode, source: 'signal', signal };
      void supervisorLog
        .append({ type: 'supervisor.shutdown_requested', actor: 'ctl', payload })
        .catch(() => undefined)
        .then(() => {
          server.close();
          server.closeAllConnections();
          hooks?.server.close();
          hooks?.server.closeAllConnections();
          notifier?.close();
          void hub.close();
          return keep ? reconciler.detach() : reconciler.shutdown();
        })
        .finally(() => {
          logger.info(keep ? 'supervisor exited; its cities keep running' : 'supervisor stopped');
          homeLock.release();
          process.exit(0);
        });
    };
    process.on('SIGHUP', (signal) => exit(signal, 'preserve_sessions'));
    process.on('SIGTERM', (signal) => exit(signal, 'destructive'));
    process.on('SIGINT', (signal) => exit(signal, 'destructive'));
  } catch (err) {
    // The caller prints the one-line reason on stderr; the log file keeps the details.
    createLogger({ name: 'supervisor', file: paths.log, stderr: false }).error({ err }, 'supervisor failed to start');
    homeLock.release();
    throw err;
  }
}

function listen(server: Server, host: string, port: number, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`${what}cannot listen on ${host}:${port}: ${err.code ?? err.message}`)),
    );
    server.listen(port, host, resolve);
  });
}
