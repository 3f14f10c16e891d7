import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { CITY_LOCKED_EXIT_CODE, type ControllerPidFile } from '../shared/controller-ipc.js';
import type {
  CityCreateSucceededPayload,
  CityUnregisterSucceededPayload,
  ControllerCrashedPayload,
  RequestFailedPayload,
} from '../shared/dto/events.js';
import { EventLog } from '../shared/events/event-log.js';
import { cityPaths } from '../shared/paths.js';
import { CitySlot, HEALTHY_RUN_MS, restartDelayMs } from './city-slot.js';
import { ControllerProcess, describeExit } from './controller-process.js';
import { findLeftoverController } from './leftover-controller.js';
import type { PendingRequest, Registry } from './registry.js';

export interface ReconcilerOptions {
  registry: Registry;
  supervisorLog: EventLog;
  logger: Logger;
  /** The `ctl` entry script controllers are started with. */
  entry: string;
  /** Environment of every controller. */
  env: NodeJS.ProcessEnv;
  /** Period of the periodic pass. */
  intervalMs: number;
  startupTimeoutMs: number;
  /** How long a controller gets after SIGTERM before SIGKILL. */
  stopGraceMs: number;
}

/** How long an unregistered city's log still feeds the supervisor's event view. */
export const UNREGISTERED_LINGER_MS = 120_000;

/** An unregister whose controller has not gone after this long fails. */
const UNREGISTER_DEADLINE_MS = 30_000;

/**
 * Makes the running controllers match the registry: starts what should run (with back-off after crashes),
 * stops what should not, adopts controllers a previous supervisor left behind, and finishes pending
 * asynchronous requests with exactly one terminal event each. A pass is cheap and idempotent; it runs when
 * woken (a request, a controller event) and on a periodic tick.
 */
export class Reconciler extends EventEmitter<{ changed: [] }> {
  readonly slots = new Map<string, CitySlot>();
  /** Recently unregistered cities, by name, whose logs the event view still includes. */
  readonly recentlyUnregistered = new Map<string, { path: string; at: number }>();
  lastPassAt = Date.now();
  passes = 0;
  private interval: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private passing = false;
  private passAgain = false;
  private closed = false;
  private readonly settling = new Set<string>();

  constructor(private readonly options: ReconcilerOptions) {
    super();
    this.setMaxListeners(0);
  }

  async start(): Promise<void> {
    const { registry, supervisorLog } = this.options;
    // A previous supervisor may have recorded a terminal event and died before forgetting the request.
    const settled = registry.pending.filter((pending) =>
      supervisorLog
        .after(pending.supervisor_seq)
        .some((e) => isTerminal(e.type) && (e.payload as { request_id?: string }).request_id === pending.request_id),
    );
    if (settled.length) {
      const ids = new Set(settled.map((p) => p.request_id));
      await registry.update((draft) => {
        draft.pending = draft.pending.filter((p) => !ids.has(p.request_id));
      });
    }
    for (const city of registry.cities) {
      const slot = new CitySlot(city.name, city.path);
      this.slots.set(city.path, slot);
      this.adoptLeftover(slot);
    }
    for (const pending of registry.pending) {
      if (pending.operation === 'city.unregister' && !this.slots.has(pending.path)) {
        const slot = new CitySlot(pending.name, pending.path);
        this.adoptLeftover(slot);
        if (slot.process) this.slots.set(pending.path, slot);
      }
    }
    this.interval = setInterval(() => this.wake(), this.options.intervalMs);
    this.wake();
  }

  /** Runs a pass as soon as possible (passes never overlap; wakes during a pass cause one more). */
  wake(): void {
    if (this.closed) return;
    if (this.passing) {
      this.passAgain = true;
      return;
    }
    this.passing = true;
    setImmediate(() => void this.runPasses());
  }

  slotNamed(name: string): CitySlot | undefined {
    for (const slot of this.slots.values()) if (slot.name === name) return slot;
    return undefined;
  }

  /** Resolves true once `condition` holds (checked after every change), false after `timeoutMs`. */
  waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (!condition()) return;
        cleanup();
        resolve(true);
      };
      const timer = setTimeout(() => {
        cleanup();
        resolve(condition());
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.off('changed', check);
      };
      this.on('changed', check);
    });
  }

  /** Stops the reconciler and every controller, concurrently; bounded by the stop grace period. */
  async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.interval);
    clearTimeout(this.wakeTimer);
    const stops = [...this.slots.values()].map((slot) =>
      slot.process ? slot.process.stop(this.options.stopGraceMs) : Promise.resolve(undefined),
    );
    await Promise.all(stops);
  }

  private async runPasses(): Promise<void> {
    try {
      do {
        this.passAgain = false;
        try {
          await this.pass();
        } catch (err) {
          this.options.logger.error({ err }, 'reconciler pass failed');
        }
        this.lastPassAt = Date.now();
        this.passes++;
        this.emit('changed');
      } while (this.passAgain && !this.closed);
    } finally {
      this.passing = false;
    }
  }

  private async pass(): Promise<void> {
    const { registry } = this.options;
    const now = Date.now();
    let nextWake = Infinity;

    for (const city of registry.cities) {
      let slot = this.slots.get(city.path);
      if (!slot) {
        slot = new CitySlot(city.name, city.path);
        this.slots.set(city.path, slot);
      }
      slot.stoppedByRequest = city.stopped;
      if (slot.name !== city.name) {
        // Registered again under a new name: the running controller serves the old one.
        if (slot.process) {
          this.stopSlot(slot);
          continue;
        }
        slot.name = city.name;
      }
      if (city.stopped) {
        if (slot.process) this.stopSlot(slot);
        continue;
      }
      if (slot.process) continue;
      if (now >= slot.nextStartAt) this.startSlot(slot);
      else nextWake = Math.min(nextWake, slot.nextStartAt);
    }

    for (const [path, slot] of this.slots) {
      if (registry.cityAt(path)) continue;
      if (slot.process) {
        this.stopSlot(slot);
      } else {
        this.slots.delete(path);
        this.recentlyUnregistered.set(slot.name, { path, at: now });
      }
    }
    for (const [name, gone] of this.recentlyUnregistered) {
      if (now - gone.at > UNREGISTERED_LINGER_MS || registry.cityNamed(name)) {
        this.recentlyUnregistered.delete(name);
        if (!registry.cityAt(gone.path)) {
          const paths = cityPaths(gone.path);
          EventLog.at(paths.events, paths.eventsLock).close();
        }
      }
    }

    for (const pending of registry.pending) await this.settle(pending, now);

    if (nextWake < Infinity) {
      clearTimeout(this.wakeTimer);
      this.wakeTimer = setTimeout(() => this.wake(), Math.max(0, nextWake - Date.now()));
    }
  }

  private startSlot(slot: CitySlot): void {
    // A controller from a previous supervisor may still hold the city (it would refuse a second one).
    this.adoptLeftover(slot);
    if (slot.process) return;
    const paths = cityPaths(slot.path);
    let proc: ControllerProcess;
    try {
      proc = ControllerProcess.spawn({
        name: slot.name,
        root: slot.path,
        socket: paths.socket,
        logFile: paths.controllerLog,
        entry: this.options.entry,
        env: this.options.env,
        startupTimeoutMs: this.options.startupTimeoutMs,
      });
    } catch (err) {
      slot.lastError = (err as Error).message;
      slot.failedStarts++;
      slot.restarts++;
      slot.nextStartAt = Date.now() + restartDelayMs(slot.restarts);
      this.options.logger.error({ err, city: slot.name }, 'could not spawn controller');
      return;
    }
    // Recorded now, not only once the controller has booted, so that a supervisor restarted in between finds it.
    this.writePidFile(slot.path, proc, slot.name, paths.socket);
    this.options.logger.info({ city: slot.name, pid: proc.pid }, 'controller starting');
    this.attach(slot, proc);
  }

  /** Finds a controller a previous supervisor left running for this city (or one still starting), and adopts it. */
  private adoptLeftover(slot: CitySlot): void {
    const leftover = findLeftoverController(slot.path, slot.name);
    if (!leftover) return;
    const proc = ControllerProcess.adopt(leftover.pid, leftover.name, leftover.socket, this.options.startupTimeoutMs);
    if (!leftover.fromPidFile) this.writePidFile(slot.path, proc, leftover.name, leftover.socket);
    // It serves the name it was started with; a pass restarts it if the registry now says otherwise.
    slot.name = leftover.name;
    this.options.logger.info({ city: slot.name, pid: proc.pid }, 'adopted running controller');
    this.attach(slot, proc);
  }

  private writePidFile(root: string, proc: ControllerProcess, name: string, socket: string): void {
    const pidFile: ControllerPidFile = {
      pid: proc.pid,
      name,
      socket,
      started_at: new Date(proc.startedAt).toISOString(),
    };
    try {
      writeFileAtomic(cityPaths(root).controllerPid, JSON.stringify(pidFile) + '\n');
    } catch (err) {
      this.options.logger.warn({ err, city: name }, 'could not write the controller pid file');
    }
  }

  private attach(slot: CitySlot, proc: ControllerProcess): void {
    slot.process = proc;
    proc.on('phase', () => this.emit('changed'));
    proc.on('ready', () => {
      slot.everReady = true;
      slot.lastError = undefined;
      this.options.logger.info({ city: slot.name, pid: proc.pid }, 'controller ready');
      this.wake();
    });
    proc.on('exit', (exit) => {
      slot.process = undefined;
      slot.stopping = false;
      if (exit.requested) {
        this.options.logger.info({ city: slot.name, pid: proc.pid }, 'controller stopped');
      } else if (exit.code === CITY_LOCKED_EXIT_CODE && !proc.readyAt) {
        // Another controller holds the city: the next start adopts it instead of counting a failure.
        this.options.logger.warn({ city: slot.name, pid: proc.pid }, exit.startupError ?? 'city locked');
        slot.nextStartAt = Date.now() + 200;
      } else {
        const now = Date.now();
        if (proc.readyAt && now - proc.readyAt >= HEALTHY_RUN_MS) slot.restarts = 0;
        slot.restarts++;
        if (!proc.readyAt) slot.failedStarts++;
        const delay = restartDelayMs(slot.restarts);
        slot.nextStartAt = now + delay;
        slot.lastError = exit.startupError ?? describeExit(exit.code, exit.signal);
        this.options.logger.warn(
          { city: slot.name, pid: proc.pid, code: exit.code, signal: exit.signal, restartInMs: delay },
          `controller crashed: ${slot.lastError}`,
        );
        const payload: ControllerCrashedPayload = {
          pid: proc.pid,
          exit_code: exit.code,
          signal: exit.signal,
          restarts: slot.restarts,
          restart_in_ms: delay,
        };
        const paths = cityPaths(slot.path);
        EventLog.at(paths.events, paths.eventsLock)
          .append({ type: 'controller.crashed', actor: 'ctl', subject: slot.name, message: slot.lastError, payload })
          .catch((err: unknown) => this.options.logger.error({ err }, 'could not record controller.crashed'));
      }
      this.wake();
    });
  }

  private stopSlot(slot: CitySlot): void {
    if (!slot.process || slot.stopping) return;
    slot.stopping = true;
    void slot.process.stop(this.options.stopGraceMs);
  }

  /** Emits the terminal event of a pending request once its outcome is known, then forgets the request. */
  private async settle(pending: PendingRequest, now: number): Promise<void> {
    if (this.settling.has(pending.request_id)) return;
    const slot = this.slots.get(pending.path);
    const registered = this.options.registry.cityAt(pending.path);
    let outcome: { type: string; payload: object } | undefined;
    if (pending.operation === 'city.create') {
      if (slot?.running) {
        const payload: CityCreateSucceededPayload = {
          request_id: pending.request_id,
          name: slot.name,
          path: pending.path,
        };
        outcome = { type: 'request.result.city.create', payload };
      } else if (!registered) {
        outcome = failure(pending, 'city_init_failed', 'the city was unregistered before its controller started');
      } else if (slot && slot.failedStarts > 0 && !slot.process) {
        outcome = failure(pending, 'city_init_failed', slot.lastError ?? 'the controller failed to start');
      }
    } else if (!slot?.process) {
      const payload: CityUnregisterSucceededPayload = {
        request_id: pending.request_id,
        name: pending.name,
        path: pending.path,
      };
      outcome = { type: 'request.result.city.unregister', payload };
    } else if (now - Date.parse(pending.accepted_at) > UNREGISTER_DEADLINE_MS) {
      outcome = failure(pending, 'city_unregister_failed', `controller (pid ${slot.process.pid}) did not stop`);
    }
    if (!outcome) return;
    this.settling.add(pending.request_id);
    try {
      await this.options.supervisorLog.append({
        type: outcome.type,
        actor: 'api',
        subject: pending.name,
        payload: outcome.payload,
      });
      await this.options.registry.update((draft) => {
        draft.pending = draft.pending.filter((p) => p.request_id !== pending.request_id);
      });
    } finally {
      this.settling.delete(pending.request_id);
    }
  }
}

function isTerminal(type: string): boolean {
  return type === 'request.failed' || type.startsWith('request.result.');
}

function failure(
  pending: PendingRequest,
  code: string,
  message: string,
): { type: string; payload: RequestFailedPayload } {
  return {
    type: 'request.failed',
    payload: { request_id: pending.request_id, operation: pending.operation, error_code: code, error_message: message },
  };
}
