import { EventEmitter } from 'node:events';
import { stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { CITY_LOCKED_EXIT_CODE } from '../shared/controller-ipc.js';
import type { CityLifecyclePayload, ControllerCrashedPayload } from '../shared/dto/events.js';
import { cityLog } from '../shared/events/city-log.js';
import type { EventLog } from '../shared/events/event-log.js';
import { bounded } from '../shared/fs/bounded.js';
import { cityPaths } from '../shared/paths.js';
import type { CityInfo } from '../shared/dto/cities.js';
import { CitySlot, restartDelayMs } from './city-slot.js';
import { ControllerProcess, describeExit, endpointOf, type ControllerEndpoint } from './controller-process.js';
import { findLeftoverController, flockHolder } from '../shared/leftover-controller.js';
import type { Registry } from './registry.js';
import { RequestSettlement } from './request-settlement.js';

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
  /** A crash after running this long counts as a fresh start: the back-off resets. */
  healthyRunMs: number;
}

/** How long an unregistered city's log still feeds the supervisor's event view. */
export const UNREGISTERED_LINGER_MS = 120_000;

/** How long `adoptLeftovers` waits for adopted controllers to answer before the API opens. */
const ADOPT_PROBE_MS = 2000;

/**
 * Makes the running controllers match the registry: starts what should run (with back-off after crashes),
 * stops what should not, adopts controllers a previous supervisor left behind, and finishes pending
 * asynchronous requests with exactly one terminal event each. A pass is cheap and idempotent; it runs when
 * woken (a request, a controller event) and on a periodic tick.
 */
export class Reconciler extends EventEmitter<{ changed: [] }> {
  private readonly slots = new Map<string, CitySlot>();
  /** Recently unregistered cities, by name, whose logs the event view still includes. */
  private readonly recentlyUnregistered = new Map<string, { path: string; at: number }>();
  lastPassAt = Date.now();
  passes = 0;
  private interval: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private passAgain = false;
  private closed = false;
  private readonly requests: RequestSettlement;
  /** Events about controllers being written. */
  private readonly recording = new Set<Promise<unknown>>();

  constructor(private readonly options: ReconcilerOptions) {
    super();
    this.setMaxListeners(0);
    this.requests = new RequestSettlement(options.registry, options.supervisorLog);
  }

  /**
   * Before the API opens: learns which pending requests already have their terminal event (a previous
   * supervisor died between recording it and forgetting the request), and adopts the controllers a previous
   * supervisor left running, waiting briefly for them to answer, so the first city list is already right.
   */
  async adoptLeftovers(): Promise<void> {
    const { registry } = this.options;
    this.requests.learnRecorded();
    const probes: Promise<void>[] = [];
    const adopt = (slot: CitySlot) => {
      const probe = this.adoptLeftover(slot);
      if (probe) probes.push(probe);
    };
    for (const city of registry.cities) {
      const slot = new CitySlot(city.name, city.path);
      slot.registeredAtBoot = true;
      this.slots.set(city.path, slot);
      adopt(slot);
    }
    for (const pending of registry.pending) {
      if (pending.operation === 'city.unregister' && !this.slots.has(pending.path)) {
        const slot = new CitySlot(pending.name, pending.path);
        adopt(slot);
        if (slot.process) this.slots.set(pending.path, slot);
      }
    }
    await Promise.race([Promise.all(probes), new Promise((resolve) => setTimeout(resolve, ADOPT_PROBE_MS).unref())]);
  }

  /** Starts the periodic pass and runs one now. */
  start(): void {
    this.interval = setInterval(() => this.wake(), this.options.intervalMs);
    this.wake();
  }

  /** Runs a pass as soon as possible (passes never overlap; wakes during a pass cause one more). */
  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.passAgain = true;
      return;
    }
    this.running = new Promise((resolve) => setImmediate(resolve)).then(() => this.runPasses());
  }

  /** Cities unregistered in the last two minutes (by name), whose logs the event view still shows. */
  recentlyUnregisteredCities(): Iterable<[string, { path: string }]> {
    return this.recentlyUnregistered.entries();
  }

  /** How the city at `path` is listed, with the name its controller serves; undefined before the first pass. */
  listing(path: string): { info: CityInfo; servedName: string } | undefined {
    const slot = this.slots.get(path);
    return slot ? { info: slot.info(), servedName: slot.name } : undefined;
  }

  /** Whether a controller process (starting, running or stopping) is attached to the city at `path`. */
  hasController(path: string): boolean {
    return this.slots.get(path)?.process !== undefined;
  }

  isRunning(path: string): boolean {
    return this.slots.get(path)?.running === true;
  }

  /** Starts that ended before the controller became ready, for the city at `path`. */
  failedStarts(path: string): number {
    return this.slots.get(path)?.failedStarts ?? 0;
  }

  /** A person asked for a start: skip any crash back-off, and run a pass. */
  startNow(path: string): void {
    const slot = this.slots.get(path);
    if (slot && !slot.process) slot.nextStartAt = 0;
    this.wake();
  }

  /** The controller serving city `name` (registered at `path`) and where it listens, while it runs under that name. */
  controllerFor(path: string, name: string): { pid: number; endpoint: ControllerEndpoint } | undefined {
    const slot = this.slots.get(path);
    if (!slot?.running || !slot.process || slot.name !== name) return undefined;
    return { pid: slot.process.pid, endpoint: slot.process.endpoint };
  }

  /**
   * Whether a registered city is only on its way back: starting, restarting after a crash, or not yet started
   * by a supervisor that just came up — not stopped on request, not without its directory.
   */
  isComingBack(path: string): boolean {
    const city = this.options.registry.cityAt(path);
    if (!city || city.stopped) return false;
    const slot = this.slots.get(path);
    return !slot || (!slot.running && !slot.directoryMissing && !slot.stoppedByRequest);
  }

  /**
   * For a registered city that ran before and is only on its way back (crash back-off, a restart, this
   * supervisor's start-up), the seconds a client should wait before trying again; undefined for any other city
   * (unknown, stopped, never yet run, or failing every start), which is not running, full stop.
   */
  restartingRetryAfter(path: string): number | undefined {
    if (!this.isComingBack(path)) return undefined;
    const slot = this.slots.get(path);
    if (slot && (!(slot.everReady || slot.registeredAtBoot) || slot.lockedBy !== undefined)) return undefined;
    if (!slot || slot.process) return 1;
    return Math.max(1, Math.ceil((slot.nextStartAt - Date.now()) / 1000) + 1);
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

  /**
   * Stops the reconciler (after any pass in flight, so nothing starts behind our back) and every
   * controller, concurrently; bounded by the stop grace period.
   */
  /**
   * Stops reconciling but leaves every controller running (each in its own process group, logging to its own
   * file): a supervisor restarting in place, whose successor adopts them. Their sessions never notice.
   */
  async detach(): Promise<void> {
    this.closed = true;
    clearInterval(this.interval);
    clearTimeout(this.wakeTimer);
    await this.running;
    await Promise.all([...this.recording]);
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.interval);
    clearTimeout(this.wakeTimer);
    await this.running;
    const stops = [...this.slots.values()].map(
      (slot) => slot.process?.stop(slot.process.stopGraceMs(this.options.stopGraceMs)) ?? Promise.resolve(),
    );
    await Promise.all(stops);
    // The stop and crash events of those exits, before the process goes.
    await Promise.all([...this.recording]);
  }

  /** Keeps an event being recorded in mind until it is written, so that `close` can wait for it. */
  private track(recording: Promise<unknown>): void {
    this.recording.add(recording);
    void recording.finally(() => this.recording.delete(recording));
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
      this.running = undefined;
    }
  }

  private async pass(): Promise<void> {
    if (this.closed) return;
    const { registry } = this.options;
    const now = Date.now();
    let nextWake = Infinity;

    const present = await directoriesPresent(registry.cities.map((c) => c.path));
    for (const city of registry.cities) {
      let slot = this.slots.get(city.path);
      if (!slot) {
        slot = new CitySlot(city.name, city.path);
        this.slots.set(city.path, slot);
      }
      slot.stoppedByRequest = city.stopped;
      if (present.get(city.path) === false) {
        if (!slot.directoryMissing) this.directoryVanished(slot);
        if (slot.process) this.stopSlot(slot);
        continue;
      }
      slot.directoryMissing = false;
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
        if (!registry.cityAt(gone.path)) cityLog(gone.path).close();
      }
    }

    for (const pending of registry.pending) await this.requests.settle(pending, this.slots.get(pending.path), now);

    if (nextWake < Infinity) {
      clearTimeout(this.wakeTimer);
      this.wakeTimer = setTimeout(() => this.wake(), Math.max(0, nextWake - Date.now()));
    }
  }

  /** A city's directory is gone: say so once (in our own log, the city's went with it); a pass stops it. */
  private directoryVanished(slot: CitySlot): void {
    slot.directoryMissing = true;
    const message = `the city directory ${slot.path} no longer exists; its controller is stopped until it is back`;
    this.options.logger.warn({ city: slot.name, path: slot.path }, message);
    const payload: CityLifecyclePayload = { name: slot.name, path: slot.path };
    this.track(
      this.options.supervisorLog
        .append({ type: 'city.directory_missing', actor: 'ctl', subject: slot.name, message, payload })
        .catch((err: unknown) => this.options.logger.error({ err }, 'could not record city.directory_missing')),
    );
  }

  private startSlot(slot: CitySlot): void {
    // A controller from a previous supervisor (or one run by hand) may hold the city: adopt it instead.
    if (this.closed || this.adoptLeftover(slot)) return;
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
    this.options.logger.info({ city: slot.name, controllerPid: proc.pid }, 'controller starting');
    this.attach(slot, proc);
  }

  /**
   * Adopts a controller already running for this city (left by a previous supervisor, or run by hand), if
   * there is one; resolves the returned promise after its first health probe.
   */
  private adoptLeftover(slot: CitySlot): Promise<void> | undefined {
    const leftover = findLeftoverController(slot.path, slot.name);
    if (!leftover) return undefined;
    const { proc, firstProbe } = ControllerProcess.adopt(
      leftover.pid,
      leftover.name,
      endpointOf(leftover.listen),
      this.options.startupTimeoutMs,
    );
    // It serves the name it was started with; a pass restarts it if the registry now says otherwise.
    slot.name = leftover.name;
    slot.lockedBy = undefined;
    this.options.logger.info(
      { city: slot.name, controllerPid: proc.pid, listen: leftover.listen },
      'adopted running controller',
    );
    this.attach(slot, proc);
    return firstProbe;
  }

  private attach(slot: CitySlot, proc: ControllerProcess): void {
    slot.process = proc;
    proc.on('phase', () => this.emit('changed'));
    proc.on('ready', () => {
      slot.everReady = true;
      slot.lastError = undefined;
      slot.lockedBy = undefined;
      this.options.logger.info({ city: slot.name, controllerPid: proc.pid }, 'controller ready');
      this.wake();
    });
    proc.on('exit', (exit) => {
      slot.process = undefined;
      slot.stopping = false;
      const now = Date.now();
      if (exit.requested && exit.forced) {
        // It could not record its own stop: we do, and an unregister waiting on it did not end cleanly.
        const message = `the controller (pid ${proc.pid}) did not stop within ${proc.stopGraceMs(this.options.stopGraceMs)} ms of SIGTERM and was killed`;
        this.options.logger.warn({ city: slot.name, controllerPid: proc.pid }, message);
        this.requests.forcedStop(slot.path, message);
        this.track(
          cityLog(slot.path)
            .append({ type: 'controller.stopped', actor: 'ctl', subject: slot.name, message, payload: {} })
            .catch((err: unknown) => this.options.logger.error({ err }, 'could not record controller.stopped')),
        );
      } else if (exit.requested) {
        this.options.logger.info({ city: slot.name, controllerPid: proc.pid }, 'controller stopped');
      } else if (exit.code === CITY_LOCKED_EXIT_CODE && !proc.readyAt) {
        // Another process holds the city lock. Not a crash of this city: back off and, on the next start,
        // adopt the holder if it is a controller of this city.
        slot.restarts++;
        slot.nextStartAt = now + restartDelayMs(slot.restarts);
        slot.lockedBy = flockHolder(cityPaths(slot.path).controllerLock) ?? 0;
        slot.lastError = exit.startupError ?? 'another process holds the city lock';
        this.options.logger.warn({ city: slot.name, holder: slot.lockedBy }, slot.lastError);
      } else {
        if (proc.readyAt && now - proc.readyAt >= this.options.healthyRunMs) slot.restarts = 0;
        slot.restarts++;
        if (!proc.readyAt) slot.failedStarts++;
        const delay = restartDelayMs(slot.restarts);
        slot.nextStartAt = now + delay;
        slot.lastError = exit.startupError ?? describeExit(exit.code, exit.signal);
        this.options.logger.warn(
          { city: slot.name, controllerPid: proc.pid, code: exit.code, signal: exit.signal, restartInMs: delay },
          `controller crashed: ${slot.lastError}`,
        );
        const payload: ControllerCrashedPayload = {
          pid: proc.pid,
          exit_code: exit.code,
          signal: exit.signal,
          restarts: slot.restarts,
          restart_in_ms: delay,
        };
        this.track(
          cityLog(slot.path)
            .append({ type: 'controller.crashed', actor: 'ctl', subject: slot.name, message: slot.lastError, payload })
            .catch((err: unknown) => this.options.logger.error({ err }, 'could not record controller.crashed')),
        );
      }
      this.wake();
    });
  }

  private stopSlot(slot: CitySlot): void {
    if (!slot.process || slot.stopping) return;
    slot.stopping = true;
    void slot.process.stop(slot.process.stopGraceMs(this.options.stopGraceMs));
  }

  /** The longest any of the running controllers may take to stop (its grace after SIGTERM). */
  longestStopGraceMs(): number {
    let longest = this.options.stopGraceMs;
    for (const slot of this.slots.values()) {
      if (slot.process) longest = Math.max(longest, slot.process.stopGraceMs(this.options.stopGraceMs));
    }
    return longest;
  }

  /** How long the controller of the city at `path` may take to stop. */
  stopGraceOf(path: string): number {
    const proc = [...this.slots.values()].find((s) => s.path === path)?.process;
    return proc ? proc.stopGraceMs(this.options.stopGraceMs) : this.options.stopGraceMs;
  }
}

/**
 * Which of these directories exist, checked concurrently and bounded in time: a directory whose filesystem does
 * not answer counts as present (we cannot tell), and never holds up the pass for long.
 */
async function directoriesPresent(paths: string[]): Promise<Map<string, boolean>> {
  const answers = await Promise.all(
    paths.map(async (path): Promise<[string, boolean]> => {
      try {
        return [path, (await bounded(`stat ${path}`, stat(path), 2000)).isDirectory()];
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        return [path, code !== 'ENOENT' && code !== 'ENOTDIR'];
      }
    }),
  );
  return new Map(answers);
}
