import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { CityServiceConfig } from '../../shared/config/city-config.js';
import type { ServiceStatus } from '../../shared/dto/services.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { endProgram, signalProgram, spawnProgram } from '../../shared/program-scope.js';
import { releaseGroup, tetherGroup } from '../process-tether.js';
import { UrlWatch } from './url-watch.js';

/** A start is given this long to answer its health check before it counts as a failed start. */
const START_TIMEOUT_MS = 30_000;
/** How often a starting service is probed, and a running one. */
const STARTING_PROBE_MS = 200;
const RUNNING_PROBE_MS = 5000;
/** Failed probes in a row after which a running service is restarted. */
const UNHEALTHY_AFTER = 3;
/** Restart back-off: doubling from the first, up to the last; a service that ran this long starts afresh. */
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 60_000;
const STABLE_AFTER_MS = 30_000;
/** A stopped service's process group gets this long after SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 3000;

/** Where the proxy reaches a service. */
export type ServiceTarget =
  { socketPath: string; hostHeader: string } | { host: string; port: number; hostHeader: string; basePath: string };

interface Program {
  config: CityServiceConfig;
  child?: ChildProcess;
  state: 'starting' | 'running' | 'unhealthy' | 'backoff' | 'stopped';
  port?: number;
  socketPath?: string;
  startedAt: number;
  updatedAt: number;
  reason?: string;
  restarts: number;
  /** Fast failures in a row (for the back-off). */
  failures: number;
  failedProbes: number;
  nextStartAt?: number;
  timer?: NodeJS.Timeout;
  /** Set when we end it ourselves: a planned restart, a stop, or a failure (not healthy): what its exit means. */
  ending?: 'restart' | 'stop' | 'fail';
}

/**
 * The city's program services (`[[service]]` with a `command`): each run under `/bin/sh -c` in its own process
 * group, given `$PORT` (a free port when none is set) or `$CTL_SERVICE_SOCKET`, its output appended to
 * `.ctl/services/<name>.log`; ready once its health path answers 2xx (or, without one, once it accepts a
 * connection), probed while it runs, restarted with back-off when it exits or stays unhealthy, and stopped —
 * its whole group — with the city. A change to its table restarts it; a table removed stops it. Nothing here
 * ever waits on a service: the tick, the API and the other services go on.
 */
export class ServiceRunner {
  private readonly programs = new Map<string, Program>();
  private stopping = false;
  private readonly urls: UrlWatch;

  constructor(
    private readonly o: {
      cityName: string;
      cityRoot: string;
      runtimeDir: string;
      log: EventLog;
      env: NodeJS.ProcessEnv;
      logger?: Logger;
    },
  ) {
    this.urls = new UrlWatch({ log: o.log, ...(o.logger ? { logger: o.logger } : {}) });
  }

  /** Starts what is new, restarts what changed, stops what is gone. */
  reconcile(services: CityServiceConfig[]): void {
    if (this.stopping) return;
    this.urls.reconcile(services);
    const wanted = new Map(services.filter((s) => s.command !== undefined).map((s) => [s.name, s]));
    for (const [name, program] of this.programs) {
      const next = wanted.get(name);
      if (!next) {
        this.programs.delete(name);
        void this.end(program, 'stop');
      } else if (!isDeepStrictEqual(next, program.config)) {
        program.config = next;
        this.restart(name, 'its configuration changed');
      }
    }
    for (const [name, config] of wanted) {
      if (this.programs.has(name)) continue;
      const program: Program = {
        config,
        state: 'stopped',
        startedAt: 0,
        updatedAt: Date.now(),
        restarts: 0,
        failures: 0,
        failedProbes: 0,
      };
      this.programs.set(name, program);
      void this.start(program);
    }
  }

  /** Ends the service's process group and starts it again at once, its back-off forgotten. */
  restart(name: string, reason = 'restarted through the API'): boolean {
    const program = this.programs.get(name);
    if (!program) return false;
    program.failures = 0;
    program.reason = reason;
    clearTimeout(program.timer);
    if (program.child && program.child.exitCode === null && program.child.signalCode === null) {
      void this.end(program, 'restart');
    } else {
      void this.start(program);
    }
    return true;
  }

  /** Stops every service (the city is stopping) and waits for their groups to be gone. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.urls.stop();
    await Promise.all([...this.programs.values()].map((p) => this.end(p, 'stop')));
  }

  /** Where the proxy reaches a service, or why it cannot now. */
  target(service: CityServiceConfig): ServiceTarget | { unavailable: string } {
    if (service.url !== undefined) {
      const url = new URL(service.url);
      return {
        host: url.hostname,
        port: Number(url.port || 80),
        hostHeader: url.host,
        basePath: url.pathname === '/' ? '' : url.pathname,
      };
    }
    const program = this.programs.get(service.name);
    if (!program || (program.state !== 'running' && program.state !== 'unhealthy')) {
      return {
        unavailable: `service ${service.name} is ${program?.state ?? 'not started'}${program?.reason ? ` (${program.reason})` : ''}`,
      };
    }
    if (program.socketPath) return { socketPath: program.socketPath, hostHeader: 'localhost' };
    return { host: '127.0.0.1', port: program.port!, hostHeader: `127.0.0.1:${program.port}`, basePath: '' };
  }

  status(service: CityServiceConfig): ServiceStatus {
    const base = {
      service_name: service.name,
      mount_path: `/v0/city/${encodeURIComponent(this.o.cityName)}/svc/${encodeURIComponent(service.name)}`,
      state_root: `.ctl/services/${service.name}`,
      publication_state: 'private' as const,
      publish_mode: 'private' as const,
      allow_websockets: true,
      ...(service.pack ? { pack: service.pack } : {}),
    };
    if (service.url !== undefined) {
      const watched = this.urls.status(service.name);
      const state = watched?.state ?? 'external';
      return {
        ...base,
        kind: 'url',
        local_state: state,
        state,
        url: service.url,
        restarts: watched?.restarts ?? 0,
        updated_at: new Date(watched?.updatedAt ?? Date.now()).toISOString(),
        ...(service.health ? { health_path: service.health } : {}),
        ...(watched?.reason && state === 'unhealthy' ? { reason: watched.reason } : {}),
      };
    }
    const p = this.programs.get(service.name);
    const state = p?.state ?? 'stopped';
    return {
      ...base,
      kind: 'program',
      local_state: state,
      state,
      command: service.command,
      restarts: p?.restarts ?? 0,
      updated_at: new Date(p?.updatedAt ?? Date.now()).toISOString(),
      log_path: this.logPath(service.name),
      ...(p?.child?.pid !== undefined && (state === 'running' || state === 'starting' || state === 'unhealthy')
        ? { pid: p.child.pid }
        : {}),
      ...(p?.port !== undefined ? { port: p.port, url: `http://127.0.0.1:${p.port}` } : {}),
      ...(p?.socketPath ? { socket: p.socketPath, url: `unix:${p.socketPath}` } : {}),
      ...(service.health ? { health_path: service.health } : {}),
      ...(p?.reason ? { reason: p.reason } : {}),
      ...(p?.nextStartAt && state === 'backoff' ? { next_start_at: new Date(p.nextStartAt).toISOString() } : {}),
    };
  }

  private logPath(name: string): string {
    return join(this.o.runtimeDir, 'services', `${name}.log`);
  }

  private async start(program: Program): Promise<void> {
    if (this.stopping || this.programs.get(program.config.name) !== program) return;
    const { config } = program;
    clearTimeout(program.timer);
    program.ending = undefined;
    program.failedProbes = 0;
    const dir = join(this.o.runtimeDir, 'services');
    mkdirSync(dir, { recursive: true });
    program.socketPath = config.socket ? join(dir, config.socket) : undefined;
    if (program.socketPath) rmSync(program.socketPath, { force: true });
    program.port = program.socketPath ? undefined : config.port || program.port || (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...this.o.env,
      ...config.env,
      CTL_SERVICE_NAME: config.name,
      CTL_CITY: this.o.cityName,
      CTL_CITY_ROOT: this.o.cityRoot,
      ...(program.port !== undefined ? { PORT: String(program.port) } : {}),
      ...(program.socketPath ? { CTL_SERVICE_SOCKET: program.socketPath } : {}),
    };
    const cwd = config.dir
      ? isAbsolute(config.dir)
        ? config.dir
        : resolve(this.o.cityRoot, config.dir)
      : this.o.cityRoot;
    const out = openSync(this.logPath(config.name), 'a');
    let child: ChildProcess;
    try {
      // A simple command is exec'd by the shell, so the pid we watch and report is the service's own.
      const simple = !/[;&|\n`]|\$\(/.test(config.command!);
      const line = simple ? `exec ${config.command!}` : config.command!;
      child = spawnProgram('/bin/sh', ['-c', line], { cwd, env, stdio: ['ignore', out, out] });
    } catch (err) {
      closeSync(out);
      this.failed(program, `could not start: ${(err as Error).message}`);
      return;
    }
    // The child holds its own copy of the descriptor.
    closeSync(out);
    program.child = child;
    program.startedAt = Date.now();
    if (child.pid !== undefined) tetherGroup(child.pid, `service ${config.name}`);
    this.set(program, 'starting');
    child.once('error', (err) => {
      if (program.child === child) this.failed(program, `could not start: ${err.message}`);
    });
    child.once('exit', (code, signal) => {
      // What it started goes with it (whoever ended it, in its group or not), and is no longer tethered.
      endProgram(child);
      if (child.pid !== undefined) releaseGroup(child.pid);
      this.exited(program, child, code, signal);
    });
    await this.o.log.append({
      type: 'service.started',
      actor: 'ctl',
      subject: config.name,
      payload: {
        service: config.name,
        ...(child.pid !== undefined ? { pid: child.pid } : {}),
        ...(program.port !== undefined ? { port: program.port } : {}),
        ...(program.socketPath ? { socket: program.socketPath } : {}),
      },
    });
    this.probeSoon(program, child, STARTING_PROBE_MS);
  }

  private probeSoon(program: Program, child: ChildProcess, ms: number): void {
    clearTimeout(program.timer);
    program.timer = setTimeout(() => void this.probe(program, child), ms);
    program.timer.unref();
  }

  private async probe(program: Program, child: ChildProcess): Promise<void> {
    if (program.child !== child || program.ending) return;
    const healthy = await this.healthy(program);
    if (program.child !== child || program.ending) return;
    if (program.state === 'starting') {
      if (healthy) {
        program.reason = undefined;
        this.set(program, 'running');
        await this.o.log.append({
          type: 'service.ready',
          actor: 'ctl',
          subject: program.config.name,
          payload: { service: program.config.name, ...(child.pid !== undefined ? { pid: child.pid } : {}) },
        });
        this.probeSoon(program, child, program.config.healthIntervalMs ?? RUNNING_PROBE_MS);
      } else if (Date.now() - program.startedAt > START_TIMEOUT_MS) {
        program.reason = `not healthy within ${START_TIMEOUT_MS / 1000}s of its start`;
        void this.end(program, 'fail');
      } else {
        this.probeSoon(program, child, STARTING_PROBE_MS);
      }
      return;
    }
    if (healthy) {
      program.failedProbes = 0;
      if (program.state === 'unhealthy') {
        program.reason = undefined;
        this.set(program, 'running');
      }
      if (Date.now() - program.startedAt > STABLE_AFTER_MS) program.failures = 0;
    } else if (++program.failedProbes >= UNHEALTHY_AFTER) {
      program.reason = `its health check failed ${UNHEALTHY_AFTER} times in a row`;
      void this.end(program, 'fail');
      return;
    } else {
      this.set(program, 'unhealthy');
    }
    this.probeSoon(program, child, program.config.healthIntervalMs ?? RUNNING_PROBE_MS);
  }

  /** Its health path answers 2xx; without one, it accepts a connection. */
  private healthy(program: Program): Promise<boolean> {
    return new Promise((done) => {
      const where = program.socketPath ? { socketPath: program.socketPath } : { host: '127.0.0.1', port: program.port };
      if (!program.config.health) {
        const socket = program.socketPath ? connect(program.socketPath) : connect(program.port!, '127.0.0.1');
        socket.setTimeout(1000, () => socket.destroy());
        socket.once('connect', () => {
          socket.destroy();
          done(true);
        });
        socket.once('error', () => done(false));
        socket.once('close', () => done(false));
        return;
      }
      const req = request(
        { ...where, path: program.config.health, method: 'GET', timeout: 2000, agent: false },
        (res) => {
          res.resume();
          done((res.statusCode ?? 500) >= 200 && (res.statusCode ?? 500) < 300);
        },
      );
      req.once('timeout', () => req.destroy());
      req.once('error', () => done(false));
      req.end();
    });
  }

  private exited(program: Program, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (program.child !== child) return;
    clearTimeout(program.timer);
    program.child = undefined;
    // Whatever it started goes with it: a restarted service must find its port free.
    endProgram(child);
    const ending = program.ending;
    const how = code !== null ? `exited with status ${code}` : `was killed by ${signal}`;
    if (ending === 'stop' || this.stopping) {
      this.set(program, 'stopped');
      void this.o.log.append({
        type: 'service.stopped',
        actor: 'ctl',
        subject: program.config.name,
        payload: { service: program.config.name },
      });
      return;
    }
    if (ending === 'restart') {
      // Ended by us for a restart that is not a failure (the API, a config change): at once.
      void this.o.log.append({
        type: 'service.exited',
        actor: 'ctl',
        subject: program.config.name,
        payload: { service: program.config.name, reason: program.reason, restart_in_ms: 0, ...exitOf(code, signal) },
      });
      void this.start(program);
      return;
    }
    this.failed(program, ending === 'fail' ? (program.reason ?? 'unhealthy') : `it ${how}`, code, signal);
  }

  /** A failure: restart after the back-off (doubling with each fast failure in a row). */
  private failed(
    program: Program,
    reason: string,
    code: number | null = null,
    signal: NodeJS.Signals | null = null,
  ): void {
    const ranFor = Date.now() - program.startedAt;
    program.failures = ranFor >= STABLE_AFTER_MS ? 1 : program.failures + 1;
    const delay = Math.min(BACKOFF_FIRST_MS * 2 ** (program.failures - 1), BACKOFF_MAX_MS);
    program.restarts += 1;
    program.reason = reason;
    program.nextStartAt = Date.now() + delay;
    this.set(program, 'backoff');
    this.o.logger?.warn({ service: program.config.name, reason, restartInMs: delay }, 'service failed');
    void this.o.log.append({
      type: 'service.exited',
      actor: 'ctl',
      subject: program.config.name,
      message: `service ${program.config.name}: ${reason}; restarting in ${delay} ms`,
      payload: { service: program.config.name, reason, restart_in_ms: delay, ...exitOf(code, signal) },
    });
    clearTimeout(program.timer);
    program.timer = setTimeout(() => void this.start(program), delay);
    program.timer.unref();
  }

  /** Ends its process group: SIGTERM, then SIGKILL after the grace; resolves once it has exited. */
  private end(program: Program, why: 'restart' | 'stop' | 'fail'): Promise<void> {
    clearTimeout(program.timer);
    program.ending = why;
    const child = program.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      if (why === 'stop') this.set(program, 'stopped');
      return Promise.resolve();
    }
    return new Promise((done) => {
      const kill = setTimeout(() => signalProgram(child, 'SIGKILL'), STOP_GRACE_MS);
      child.once('exit', () => {
        clearTimeout(kill);
        // Whatever of it outlived it goes too.
        endProgram(child);
        done();
      });
      signalProgram(child, 'SIGTERM');
    });
  }

  private set(program: Program, state: Program['state']): void {
    program.state = state;
    program.updatedAt = Date.now();
  }
}

function exitOf(code: number | null, signal: NodeJS.Signals | null): { exit_code?: number; signal?: string } {
  return { ...(code !== null ? { exit_code: code } : {}), ...(signal ? { signal } : {}) };
}

/** A TCP port nobody listens on now (the kernel's pick). */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}
