import { EventEmitter } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { request } from 'node:http';
import { execa } from 'execa';
import { CONTROLLER_STOP_MARGIN_MS, type ControllerMessage } from '../shared/controller-ipc.js';
import { isAlive, signalGroup } from '../shared/leftover-controller.js';

export interface ControllerLaunch {
  name: string;
  root: string;
  socket: string;
  logFile: string;
  /** The `ctl` entry script; the controller runs as `ctl controller run …`, exactly as a person would. */
  entry: string;
  env: NodeJS.ProcessEnv;
  /** Give up on a start that has not become ready in this time. */
  startupTimeoutMs: number;
}

export interface ControllerExit {
  /** Null when a signal ended it, or when it was adopted and its status is unknowable. */
  code: number | null;
  signal: string | null;
  /** We asked it to stop. */
  requested: boolean;
  /** We asked it to stop and it had not within the grace period: it was killed (SIGKILL). */
  forced?: boolean;
  /** It exited before becoming ready; the controller's own reason when it sent one. */
  startupError?: string;
}

type Events = { phase: [string]; ready: []; exit: [ControllerExit] };

/** Where a controller's API listens: a Unix socket, or a TCP port on 127.0.0.1 (a controller run by hand). */
export type ControllerEndpoint = { socketPath: string } | { host: '127.0.0.1'; port: number };

/** The endpoint of a `--listen PATH|PORT` value. */
export function endpointOf(listen: string): ControllerEndpoint {
  return /^\d+$/.test(listen) ? { host: '127.0.0.1', port: Number(listen) } : { socketPath: listen };
}

/**
 * V8 grows a busy process's young generation up to 16 MB per semi-space, which a controller's small, short-lived
 * garbage never needs: capped at 1 MB, a controller that recorded a thousand events holds ~80 MB instead of ~110,
 * at no measurable cost in speed (scavenges of a small live set are cheap).
 */
const CONTROLLER_NODE_FLAGS = ['--max-semi-space-size=1'];

/**
 * One city controller process: spawned by us (a child, in its own process group, reaped by Node) or
 * adopted from a previous supervisor (not our child; watched by polling its pid). Either way we only
 * learn about it through events: `phase`, `ready` and, exactly once, `exit`.
 */
export class ControllerProcess extends EventEmitter<Events> {
  phase = 'starting';
  phasesCompleted: string[] = [];
  ready = false;
  readyAt = 0;
  /**
   * How long its sessions get to end when it stops (`[daemon] shutdown_timeout`), as it last said (0 until then,
   * and for an adopted controller, which cannot say).
   */
  sessionGraceMs = 0;
  readonly exited: Promise<ControllerExit>;
  private exitInfo: ControllerExit | undefined;
  private stopRequested = false;
  private stopForced = false;
  private startupError: string | undefined;
  private resolveExit!: (exit: ControllerExit) => void;

  private constructor(
    readonly pid: number,
    readonly name: string,
    readonly endpoint: ControllerEndpoint,
  ) {
    super();
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  static spawn(launch: ControllerLaunch): ControllerProcess {
    // The controller writes its log file itself (an inherited fd, not a pipe through us), so it keeps
    // logging after a supervisor crash. execa's types only list fds 1–9 here; any open fd works.
    const log = openSync(launch.logFile, 'a') as 1;
    const options = {
      detached: true,
      cleanup: false,
      reject: false,
      ipc: true,
      serialization: 'json',
      stdin: 'ignore',
      stdout: log,
      stderr: log,
      env: launch.env,
      extendEnv: false,
      buffer: false,
    } as const;
    let subprocess;
    try {
      subprocess = execa(
        process.execPath,
        [
          ...CONTROLLER_NODE_FLAGS,
          launch.entry,
          'controller',
          'run',
          '--city',
          launch.root,
          '--name',
          launch.name,
          '--listen',
          launch.socket,
        ],
        options,
      );
    } finally {
      closeSync(log);
    }
    if (subprocess.pid === undefined) {
      throw new Error(`could not start the controller for ${launch.name}`);
    }
    const proc = new ControllerProcess(subprocess.pid, launch.name, { socketPath: launch.socket });
    subprocess.nodeChildProcess.on('message', (message: unknown) => proc.onMessage(message as ControllerMessage));
    void subprocess.then((result) => {
      proc.finish({ code: result.exitCode ?? null, signal: result.signal ?? null });
    });
    const timer = setTimeout(() => {
      if (!proc.ready && !proc.exitInfo) {
        proc.startupError = `controller did not become ready within ${launch.startupTimeoutMs} ms`;
        proc.signalGroup('SIGKILL');
      }
    }, launch.startupTimeoutMs);
    timer.unref();
    void proc.exited.then(() => clearTimeout(timer));
    return proc;
  }

  /**
   * Takes over a controller a previous supervisor left running. It counts as ready once its API answers
   * health for this city (`firstProbe` settles after the first try); until then it is `starting`.
   */
  static adopt(
    pid: number,
    name: string,
    endpoint: ControllerEndpoint,
    startupTimeoutMs: number,
  ): { proc: ControllerProcess; firstProbe: Promise<void> } {
    const proc = new ControllerProcess(pid, name, endpoint);
    const deadline = Date.now() + startupTimeoutMs;
    const probe = async () => {
      const ok = await probeHealth(endpoint, name);
      if (ok && !proc.ready && !proc.exitInfo) proc.markReady();
    };
    const poll = setInterval(() => {
      if (!isAlive(pid)) {
        clearInterval(poll);
        proc.finish({ code: null, signal: null });
        return;
      }
      if (!proc.ready) {
        if (Date.now() > deadline) {
          proc.startupError = `adopted controller did not answer within ${startupTimeoutMs} ms`;
          proc.signalGroup('SIGKILL');
          return;
        }
        void probe();
      }
    }, 200);
    void proc.exited.then(() => clearInterval(poll));
    return { proc, firstProbe: probe() };
  }

  /** SIGTERM to the whole process group, SIGKILL after `graceMs`; resolves once the controller is gone. */
  async stop(graceMs: number): Promise<ControllerExit> {
    if (this.exitInfo) return this.exitInfo;
    this.stopRequested = true;
    this.signalGroup('SIGTERM');
    const timer = setTimeout(() => {
      this.stopForced = true;
      this.signalGroup('SIGKILL');
    }, graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    // Anything the controller started and left behind in its group goes with it.
    this.signalGroup('SIGKILL');
    return exit;
  }

  private onMessage(message: ControllerMessage): void {
    if (message.kind === 'phase') {
      this.phase = message.phase;
      this.phasesCompleted = message.completed;
      this.emit('phase', message.phase);
    } else if (message.kind === 'ready') {
      this.markReady();
    } else if (message.kind === 'failed') {
      this.startupError = message.error;
    } else if (message.kind === 'stop-grace') {
      this.sessionGraceMs = message.ms;
    }
  }

  /** How long it gets after SIGTERM before SIGKILL: `base`, or its sessions' grace and a margin when longer. */
  stopGraceMs(base: number): number {
    if (this.sessionGraceMs === 0) return base;
    return Math.max(base, this.sessionGraceMs + CONTROLLER_STOP_MARGIN_MS + 1_000);
  }

  private markReady(): void {
    this.ready = true;
    this.readyAt = Date.now();
    this.phase = 'running';
    this.emit('ready');
  }

  private finish(exit: { code: number | null; signal: string | null }): void {
    if (this.exitInfo) return;
    this.exitInfo = {
      ...exit,
      requested: this.stopRequested,
      forced: this.stopForced,
      ...(!this.ready ? { startupError: this.startupError ?? describeExit(exit.code, exit.signal) } : {}),
    };
    this.ready = false;
    this.resolveExit(this.exitInfo);
    this.emit('exit', this.exitInfo);
  }

  /** Signals the controller's process group (it and what it started). */
  private signalGroup(signal: NodeJS.Signals): void {
    signalGroup(this.pid, signal);
  }
}

export function describeExit(code: number | null, signal: string | null): string {
  if (signal) return `controller was killed by ${signal}`;
  if (code !== null) return `controller exited with code ${code}`;
  return 'controller exited';
}

/** Asks a controller for this city's health; true on a 200 within a second. */
export function probeHealth(endpoint: ControllerEndpoint, name: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      {
        ...endpoint,
        path: `/v0/city/${encodeURIComponent(name)}/health`,
        headers: { host: 'localhost' },
        timeout: 1000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
