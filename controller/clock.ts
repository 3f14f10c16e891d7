import { readFileSync, unwatchFile, watchFile } from 'node:fs';

/**
 * The time orders and gates go by. Normally the machine's clock; with `CTL_CLOCK_FILE` set, the time written in
 * that file (RFC 3339, or milliseconds since the epoch) — so a test or a rehearsal can move a city's day forward
 * and watch its cron orders and timers fire, without waiting for them. Only orders and gates read it: bead and
 * event times stay real.
 */
export interface Clock {
  now(): number;
  /** Calls `moved` when the time jumps (the file changed); a real clock never jumps. */
  onMoved(moved: () => void): void;
  stop(): void;
}

export function cityClock(env: NodeJS.ProcessEnv = process.env): Clock {
  const file = env.CTL_CLOCK_FILE;
  if (!file) return { now: () => Date.now(), onMoved: () => undefined, stop: () => undefined };
  let offset = 0;
  const read = () => {
    try {
      const text = readFileSync(file, 'utf8').trim();
      const at = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
      if (!Number.isNaN(at)) offset = at - Date.now();
    } catch {
      // No file (yet): the real time.
    }
  };
  read();
  const listeners: (() => void)[] = [];
  watchFile(file, { interval: 100 }, () => {
    read();
    for (const moved of listeners) moved();
  });
  return {
    // The file sets the time once; it then runs on from there, as a clock does.
    now: () => Date.now() + offset,
    onMoved: (moved) => listeners.push(moved),
    stop: () => unwatchFile(file),
  };
}
