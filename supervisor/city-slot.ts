import type { CityInfo } from '../shared/dto/cities.js';
import type { ControllerProcess } from './controller-process.js';

/** Back-off after a controller crash: 0.5 s, doubling, at most 30 s. */
export function restartDelayMs(restarts: number): number {
  return Math.min(30_000, 500 * 2 ** Math.max(0, restarts - 1));
}

/** A crash after this long running counts as a fresh start: the back-off resets. */
export const HEALTHY_RUN_MS = 60_000;

/** The supervisor's runtime view of one city directory: its controller, if any, and its crash history. */
export class CitySlot {
  process: ControllerProcess | undefined;
  /** Consecutive crashes without a healthy minute in between. */
  restarts = 0;
  /** No start before this time (back-off after a crash). */
  nextStartAt = 0;
  /** The last start-up or crash error. */
  lastError: string | undefined;
  /** The controller has become ready at least once since this slot was created. */
  everReady = false;
  /**
   * In the registry when this supervisor started: its controller ran under an earlier supervisor, so until one
   * runs again the city is coming back, not new.
   */
  registeredAtBoot = false;
  /** Starts that ended before the controller became ready. */
  failedStarts = 0;
  /** Stopped on request (`POST …/stop`), as opposed to waiting for a restart. */
  stoppedByRequest = false;
  /** A stop was requested and the controller has not exited yet. */
  stopping = false;
  /** Our last start found the city lock held by this process (0: holder unknown), which we could not adopt. */
  lockedBy: number | undefined;
  /** The city's directory is gone (deleted, unmounted): its controller is stopped and not started again. */
  directoryMissing = false;

  constructor(
    public name: string,
    readonly path: string,
  ) {}

  /** Ready, and not on its way out: a controller being stopped no longer counts as running. */
  get running(): boolean {
    return this.process?.ready === true && !this.stopping;
  }

  info(): CityInfo {
    const info: CityInfo = { name: this.name, path: this.path, running: this.running };
    const proc = this.process;
    if (proc) info.pid = proc.pid;
    if (this.running) return info;
    if (this.directoryMissing) {
      info.status = 'directory_missing';
      info.error = `the city directory ${this.path} no longer exists`;
      return info;
    }
    if (proc) {
      info.status = this.stopping ? 'stopping' : proc.phase;
      if (proc.phasesCompleted.length) info.phases_completed = [...proc.phasesCompleted];
    } else if (this.stoppedByRequest) {
      info.status = 'stopped';
    } else if (this.lockedBy !== undefined) {
      info.status = 'locked';
    } else if (this.restarts > 0 || this.failedStarts > 0) {
      info.status = this.everReady ? 'restarting' : 'init_failed';
    } else {
      info.status = 'starting';
    }
    if (this.lastError) info.error = this.lastError;
    return info;
  }
}
