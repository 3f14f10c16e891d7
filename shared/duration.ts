// Go-style duration strings ("300ms", "1.5h", "1h30m"), the syntax of `since`, `wait` and config intervals.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const TERM = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;

/** Milliseconds of a Go duration string; throws an Error whose message mirrors Go's `time: …` text. */
export function parseDuration(text: string): number {
  const input = text.trim();
  let rest = input;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new Error(`time: invalid duration ${JSON.stringify(input)}`);
  let total = 0;
  while (rest.length > 0) {
    const match = TERM.exec(rest);
    if (!match) {
      const number = /^(\d+(?:\.\d*)?|\.\d+)/.exec(rest);
      if (!number) throw new Error(`time: invalid duration ${JSON.stringify(input)}`);
      const unit = rest.slice(number[0].length).replace(/[\d.].*$/, '');
      if (unit === '') throw new Error(`time: missing unit in duration ${JSON.stringify(input)}`);
      throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${JSON.stringify(input)}`);
    }
    total += Number(match[1]) * UNIT_MS[match[2]];
    rest = rest.slice(match[0].length);
  }
  return sign * total;
}

/** A human duration for messages: `850ms`, `2.5s`, `3m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}
