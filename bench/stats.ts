/** Order statistics of a sample of numbers (milliseconds, KiB, …). */
export interface Summary {
  n: number;
  min: number;
  median: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** The q-quantile (0 ≤ q ≤ 1) of sorted values, linearly interpolated between the closest ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((acc, v) => acc + v, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? NaN,
    median: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/** A number rounded to `digits` decimals, for the JSON report. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Every field of a summary rounded, for the JSON report. */
export function rounded(summary: Summary, digits = 3): Summary {
  return {
    n: summary.n,
    min: round(summary.min, digits),
    median: round(summary.median, digits),
    p90: round(summary.p90, digits),
    p99: round(summary.p99, digits),
    max: round(summary.max, digits),
    mean: round(summary.mean, digits),
  };
}
