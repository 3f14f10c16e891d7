import type { StatusTick } from '../shared/dto/health.js';

/** How many runs the figures cover. */
const WINDOW = 256;

/** How often something periodic ran and how long its last runs took (the tick, the order scheduler). */
export class RunStats {
  private readonly durations: number[] = [];
  private runs = 0;
  private lastMs = 0;
  private lastAt = 0;

  record(ms: number): void {
    this.runs++;
    this.lastMs = ms;
    this.lastAt = Date.now();
    this.durations.push(ms);
    if (this.durations.length > WINDOW) this.durations.shift();
  }

  stats(): StatusTick {
    const sorted = [...this.durations].sort((a, b) => a - b);
    const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0);
    const round = (n: number) => Math.round(n * 1000) / 1000;
    return {
      runs: this.runs,
      last_ms: round(this.lastMs),
      p50_ms: round(at(0.5)),
      p99_ms: round(at(0.99)),
      last_run_age_ms: this.lastAt ? Date.now() - this.lastAt : 0,
    };
  }
}
