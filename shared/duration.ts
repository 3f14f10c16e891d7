// Durations and points in time, one grammar for all of them: terms of a number and a unit (`300ms`, `1.5h`,
// `1h30m`).
//  - `parseDuration`: the API's query parameters (`since`, `wait`) and the config files, in Go's syntax exactly
//    (units ns … h; a bare number only `0`), as the reference's clients send them.
//  - `parseFlagDuration`: every duration a person types to `ctl` (flags, CTL_TIMEOUT): Go's units plus `d`
//    (24 h), and a bare number counts as seconds, as `--timeout` took before.
//  - `parsePointInTime`: a flag meaning a moment (`--since`, `--defer-until`): an RFC 3339 time, or a flag
//    duration counted back (or forward) from now.

const GO_UNITS_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const FLAG_UNITS_MS: Record<string, number> = { ...GO_UNITS_MS, d: 86_400_000 };

const NUMBER = /^(\d+(?:\.\d*)?|\.\d+)/;

/** Milliseconds of a sum of terms, each a number and one of `units`; throws Go's `time: …` messages. */
function sumOfTerms(text: string, units: Record<string, number>): number {
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
    const number = NUMBER.exec(rest);
    if (!number) throw new Error(`time: invalid duration ${JSON.stringify(input)}`);
    rest = rest.slice(number[0].length);
    const unit = /^[^\d.]*/.exec(rest)![0];
    if (unit === '') throw new Error(`time: missing unit in duration ${JSON.stringify(input)}`);
    if (!Object.hasOwn(units, unit)) {
      throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${JSON.stringify(input)}`);
    }
    total += Number(number[1]) * units[unit]!;
    rest = rest.slice(unit.length);
  }
  return sign * total;
}

/** Milliseconds of a Go duration string; throws an Error whose message mirrors Go's `time: …` text. */
export function parseDuration(text: string): number {
  return sumOfTerms(text, GO_UNITS_MS);
}

/** What a flag duration looks like, for error messages. */
export const FLAG_DURATION_SYNTAX = 'a duration such as 90s, 5m, 1h30m or 1d (a bare number is seconds)';

/**
 * Milliseconds of a duration typed to `ctl`: `90s`, `5m`, `1h30m`, `1d`, `500ms`, or a bare number of seconds.
 * Negative durations are refused.
 */
export function parseFlagDuration(text: string): number {
  const trimmed = text.trim();
  if (/^(\d+(?:\.\d*)?|\.\d+)$/.test(trimmed)) return Number(trimmed) * 1000;
  let ms: number;
  try {
    ms = sumOfTerms(trimmed, FLAG_UNITS_MS);
  } catch {
    throw new Error(`expected ${FLAG_DURATION_SYNTAX}`);
  }
  if (ms < 0) throw new Error('must not be negative');
  return ms;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * A moment typed to `ctl`, in ms since the epoch: an RFC 3339 time (`2026-11-23T09:00:00Z`, with an offset), or
 * a flag duration counted back from `now` (`ago`, for `--since`) or forward (for `--defer-until`).
 */
export function parsePointInTime(text: string, direction: 'ago' | 'ahead', now = Date.now()): number {
  const trimmed = text.trim();
  if (RFC3339.test(trimmed)) {
    const ms = Date.parse(trimmed.replace(' ', 'T'));
    if (Number.isFinite(ms)) return ms;
  }
  let ms: number;
  try {
    ms = parseFlagDuration(trimmed);
  } catch {
    throw new Error(`expected an RFC 3339 time (2026-11-23T09:00:00Z) or ${FLAG_DURATION_SYNTAX}`);
  }
  return direction === 'ago' ? now - ms : now + ms;
}

/** A human duration for messages: `850ms`, `2.5s`, `3m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}
