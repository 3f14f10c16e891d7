import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { basename, dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { declaredCityName, readCityConfig } from '../shared/config/city-config.js';
import { ConfigError } from '../shared/config/config-error.js';
import {
  CITY_LOCKED_EXIT_CODE,
  CONTROLLER_PHASES,
  CONTROLLER_STOP_MARGIN_MS,
  type ControllerMessage,
  type ControllerPidFile,
} from '../shared/controller-ipc.js';
import { cityLog } from '../shared/events/city-log.js';
import type { EventLog } from '../shared/events/event-log.js';
import { FileLock } from '../shared/fs/file-lock.js';
import { LogTail } from '../shared/events/log-tail.js';
import { createLogger } from '../shared/log.js';
import { cityPaths, ctlHome, homePaths } from '../shared/paths.js';
import { readSupervisorConfig } from '../shared/config/supervisor-config.js';
import { LocalAccounts } from '../shared/http/local-accounts.js';
import { PeerAccess } from '../shared/http/peer-access.js';
import { PeerGate } from '../shared/http/peer-gate.js';
import type { ControllerRunOptions } from '../shared/run-options.js';
import { answerClientErrors } from '../shared/http/client-error.js';
import { lazyHandler } from '../shared/http/lazy-handler.js';
import { beadPrefix } from './beads/prefix.js';
import type { BeadStore } from './beads/bead-store.js';
import type { SessionService } from './sessions/session-service.js';
import { openBeadStore } from './beads/open-store.js';
import { DEFAULT_MAX_ARCHIVES, DEFAULT_ROTATION_MAX_BYTES, rotateWhenLarge } from './auto-rotate.js';
import { watchConfig } from './config/config-watch.js';
import { assembleCity, startCity, stopCity } from './assemble-city.js';
import { installTether, ProcessTether } from './process-tether.js';
import { ServiceConnections, serviceUpgrade } from './http/service-proxy.js';
import { serviceFastPath } from './http/service-fast-path.js';
import { ensureOwnSocketDir, makeRuntimeDirPrivate } from './private-runtime-dir.js';

/** Why startup stopped, in words for the person or supervisor that started us. */
class StartupError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

function report(message: ControllerMessage): void {
  if (process.send && process.connected) process.send(message);
}

/**
 * `ctl controller run --city DIR [--name N] [--listen PATH|PORT]`: serve one city until SIGTERM or SIGINT.
 * The supervisor spawns exactly this, so what runs in production is what a person debugs by hand.
 */
export async function run(options: ControllerRunOptions): Promise<void> {
  const root = resolve(options.city);
  const paths = cityPaths(root);
  const logger = createLogger({ name: 'controller' }).child({ city: root });
  // A supervisor that dies leaves us running, to be adopted by the next one; its channel must not hold us.
  process.channel?.unref();
  process.on('disconnect', () => logger.warn('supervisor channel closed; continuing'));

  const startedAt = Date.now();
  const completed: string[] = [];
  const phaseDelay = Number(process.env.CTL_CONTROLLER_PHASE_DELAY_MS ?? 0);
  const enter = async (phase: (typeof CONTROLLER_PHASES)[number]) => {
    report({ kind: 'phase', phase, completed: [...completed] });
    logger.info({ phase }, `phase ${phase}`);
    // A debugging knob (and a test hook) to make startup phases observable.
    if (phaseDelay > 0) await sleep(phaseDelay);
  };

  let lock: FileLock | undefined;
  let server: Server | undefined;
  try {
    makeRuntimeDirPrivate(paths.runtimeDir);
    lock = new FileLock(paths.controllerLock);
    if (!lock.tryAcquire()) {
      throw new StartupError(
        `another controller is already running for ${root}${describeHolder(paths.controllerPid)}`,
        CITY_LOCKED_EXIT_CODE,
      );
    }

    const listen = options.listen ?? paths.socket;
    // Written as soon as we hold the lock, so that a supervisor restarted while we start can find and adopt us.
    const writePidFile = (name: string) => {
      const pidFile: ControllerPidFile = {
        pid: process.pid,
        name,
        socket: listen,
        started_at: new Date(startedAt).toISOString(),
      };
      writeFileAtomic(paths.controllerPid, JSON.stringify(pidFile) + '\n');
    };
    writePidFile(options.name ?? basename(root));
    // Before anything is started: what a controller of this city that died left running ends now, and every
    // program we start ends with us, whatever ends us.
    const tether = new ProcessTether(join(paths.runtimeDir, 'groups'), logger);
    tether.start();
    installTether(tether);

    await enter('loading_config');
    const config = readCityConfig(paths.config);
    const name = options.name ?? declaredCityName(root, config);
    if (name !== (options.name ?? basename(root))) writePidFile(name);
    completed.push('loading_config');

    await enter('opening_event_log');
    const log = cityLog(root);
    await log.sweep();
    log.head();
    const tail = new LogTail(log);
    // Our own appends reach the tail at once, without waiting for the file watcher.
    log.onAppend(() => tail.poke());
    // The configuration in use: the one read at start, then the running city's (edits change the retention).
    let configInUse = () => config;
    rotateWhenLarge(
      log,
      config.eventsRotationMaxBytes ?? DEFAULT_ROTATION_MAX_BYTES,
      () => configInUse().eventsMaxArchives ?? DEFAULT_MAX_ARCHIVES,
      logger,
    );
    completed.push('opening_event_log');

    await enter('starting_bead_store');
    const { store, backend } = await openBeadStore(
      paths.runtimeDir,
      beadPrefix(name, config.workspace.prefix),
      config.beadsBackend,
      logger,
    );
    logger.info({ beads: store.size, backend }, 'bead store open');
    completed.push('starting_bead_store');

    await enter('starting_agents');
    // `[daemon] shutdown_timeout`, when the city sets one; else the sessions' usual grace.
    let stopGraceMs = config.daemon.shutdownTimeoutMs;
    const running = assembleCity({
      name,
      paths,
      listen,
      config,
      log,
      tail,
      store,
      logger,
      onConfig: (next) => {
        if (next.daemon.shutdownTimeoutMs === stopGraceMs) return;
        stopGraceMs = next.daemon.shutdownTimeoutMs;
        report({ kind: 'stop-grace', ms: stopGraceMs ?? 0 });
      },
    });
    configInUse = () => running.config;
    // Sessions that were running when the last controller stopped start again (their programs, not yet ready).
    await running.sessions.start();
    completed.push('starting_agents');

    await enter('starting_api');
    // The files the configuration in use was composed from, asked for again after each reload.
    const watching = await watchConfig(
      root,
      () => running.settings.composed.sources,
      (file, all) =>
        running
          .reloadFromDisk(file, all)
          .catch((err: unknown) => logger.error({ err }, 'could not reload the configuration')),
    );
    const stopWatching = () => watching.close();
    // One pool per service, for both ways a request takes to it.
    const services = new ServiceConnections();
    // The HTTP stack loads after the controller reports ready (below), off both the start-up and the request path.
    const handler = lazyHandler(async () => {
      const [{ createControllerApp }, { handlerOf }] = await Promise.all([
        import('./http/app.js'),
        import('../shared/http/app.js'),
      ]);
      return handlerOf(createControllerApp(running, services, logger));
    });
    const fastService = serviceFastPath(running, services, logger);
    const gate = peerGate(listen, logger);
    server = createServer(
      { requireHostHeader: false },
      gate.requests((req, res) => {
        if (!fastService(req, res)) void handler(req, res);
      }),
    );
    server.keepAliveTimeout = 65_000;
    // WebSockets to workspace services (`svc/<name>/…`), spliced through to the service.
    server.on('upgrade', gate.upgrades(serviceUpgrade(running)));
    answerClientErrors(server, logger);
    await listenOn(server, listen);
    // A remote session's calls that came while its controller started go on now.
    running.gateways.apiListening();
    completed.push('starting_api');

    await log.append({ type: 'controller.started', actor: 'ctl', subject: name, payload: {} });
    await running.settings.recordIgnoredKeys();
    startCity(running);
    // ms: since the process started (Node's time origin), for the start-up's share of a city's create.
    logger.info({ name, listen, ms: Math.round(performance.now()) }, 'controller ready');
    report({ kind: 'ready', pid: process.pid });
    if (stopGraceMs !== undefined) report({ kind: 'stop-grace', ms: stopGraceMs });
    // A request that comes before this is done waits for the same load, not for a second one.
    setImmediate(() => {
      const loadStarted = performance.now();
      handler.load().then(
        () => logger.info({ ms: Math.round(performance.now() - loadStarted) }, 'HTTP application loaded'),
        (err: unknown) => logger.error({ err }, 'the HTTP application failed to load'),
      );
    });

    installShutdown({
      server,
      log,
      name,
      lock,
      logger,
      socket: /^\d+$/.test(listen) ? undefined : listen,
      paths,
      store,
      sessions: running.sessions,
      sessionGraceMs: () => stopGraceMs,
      beforeStop: async () => {
        await stopCity(running);
        await stopWatching();
      },
    });
  } catch (err) {
    // A failure we expect (a locked city, a bad city.toml) is its message, one line; a bug's stack goes only to
    // a log file (a supervised controller's stderr), never to a person's terminal.
    const expected = err instanceof StartupError || err instanceof ConfigError;
    const message = expected ? err.message : String(err).split('\n')[0]!;
    report({ kind: 'failed', error: message });
    if (!expected && !process.stderr.isTTY) logger.error({ err }, `startup failed: ${message}`);
    process.stderr.write(`ctl controller run: ${message}\n`);
    server?.close();
    // A special status (75: the city is locked) is for the supervisor that spawned us (over IPC); for a person,
    // every failure is exit status 1.
    const code = err instanceof StartupError && process.send ? err.exitCode : 1;
    process.exitCode = code;
    // Leave at once: nothing we started may keep the process alive.
    setImmediate(() => process.exit(code));
  }
}

/**
 * Who may use this controller: on its Unix socket, its file modes decide; on a TCP port, the supervisor's peer
 * rule with the supervisor's `allow_users` and `allow_groups` (read from `$CTL_HOME/supervisor.toml`).
 */
function peerGate(listen: string, logger: Logger): PeerGate {
  const onError = (err: unknown) => logger.error({ err }, 'peer lookup failed');
  if (!/^\d+$/.test(listen)) {
    return new PeerGate({
      peers: undefined,
      ownUser: new LocalAccounts().byUid(process.geteuid?.() ?? 0).name,
      onError,
    });
  }
  const config = readSupervisorConfig(homePaths(ctlHome()).config);
  let peers: PeerAccess;
  try {
    peers = new PeerAccess({ allowUsers: config.allowUsers, allowGroups: config.allowGroups });
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  return new PeerGate({ peers, ownUser: peers.ownUser, onError });
}

async function listenOn(server: Server, listen: string): Promise<void> {
  const port = /^\d+$/.test(listen) ? Number(listen) : undefined;
  if (port === undefined) {
    try {
      ensureOwnSocketDir(dirname(listen));
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    // We hold the city's controller lock, so a socket file left here belongs to a dead controller.
    rmSync(listen, { force: true });
  }
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new StartupError(`cannot listen on ${listen}: ${err.code ?? err.message}`)),
    );
    if (port !== undefined) server.listen(port, '127.0.0.1', resolveListen);
    else server.listen(listen, resolveListen);
  });
  if (port === undefined) chmodSync(listen, 0o600);
}

function describeHolder(pidPath: string): string {
  try {
    const holder = JSON.parse(readFileSync(pidPath, 'utf8')) as ControllerPidFile;
    return ` (pid ${holder.pid})`;
  } catch {
    return '';
  }
}

function installShutdown(o: {
  server: Server;
  log: EventLog;
  name: string;
  lock: FileLock;
  logger: Logger;
  socket: string | undefined;
  paths: ReturnType<typeof cityPaths>;
  store: BeadStore;
  sessions: SessionService;
  /** `[daemon] shutdown_timeout` as the configuration says now (undefined: the sessions' usual grace). */
  sessionGraceMs: () => number | undefined;
  beforeStop: () => Promise<void>;
}): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    o.logger.info({ signal }, 'stopping');
    // Bounded: whatever happens below, we are gone once the sessions' grace and a margin have passed.
    const graceMs = o.sessionGraceMs();
    const boundMs = graceMs === undefined ? 5000 : Math.max(5000, graceMs + CONTROLLER_STOP_MARGIN_MS);
    setTimeout(() => process.exit(0), boundMs).unref();
    o.server.close();
    o.server.closeAllConnections();
    // Every session's program ends with us (their states stay: the next controller starts them again).
    void o
      .beforeStop()
      .catch((err: unknown) => o.logger.error({ err }, 'could not stop every part of the city'))
      .then(() => o.sessions.shutdown(graceMs))
      .catch((err: unknown) => o.logger.error({ err }, 'could not stop every session'))
      .then(() => o.log.append({ type: 'controller.stopped', actor: 'ctl', subject: o.name, payload: {} }))
      .catch((err: unknown) => o.logger.error({ err }, 'could not record controller.stopped'))
      .finally(() => {
        o.store.close();
        if (o.socket) rmSync(o.socket, { force: true });
        rmSync(o.paths.controllerPid, { force: true });
        o.lock.release();
        process.exit(0);
      });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
