import { parseFlagDuration, parsePointInTime } from '../shared/duration.js';
import { CliError, type ApiProblem } from './_errors.js';
import type { Flags } from './_types.js';

// Flags more than one command has, and the checks of flag values. A value's syntax is checked here, before any
// request; what the API judges (limits, states) is left to it, and its 422s are told back in flags
// (`problemInFlags`).

export const apiFlag = {
  api: {
    type: 'string',
    description: 'Supervisor API base URL (default: CTL_API, then $CTL_HOME/supervisor.toml)',
    valueHint: 'URL',
  },
} as const;

export const cityFlag = {
  city: {
    type: 'string',
    description: 'City name or directory (default: CTL_CITY, or the city you are in)',
    valueHint: 'NAME|DIR',
    complete: 'cities',
  },
} as const;

export const jsonFlag = {
  json: { type: 'boolean', description: 'Print JSON for programs: one value per line' },
} as const;

/** A command on a city's contents: the city, JSON output, the API. */
export const inCityFlags = { ...cityFlag, ...jsonFlag, ...apiFlag } as const;

/** Flags `main.ts` also takes before the command name (`ctl --city alpha bead list`). */
export const GLOBAL_FLAGS: Flags = { ...apiFlag, ...cityFlag, ...jsonFlag };

export const limitFlag = {
  limit: { type: 'string', description: 'At most this many (default 100; pages through the API)', valueHint: 'N' },
} as const;

export const idempotencyFlag = {
  'idempotency-key': {
    type: 'string',
    description: 'Makes a retried request safe: the same key gets the first answer again',
    valueHint: 'KEY',
  },
} as const;

/** `--timeout DURATION`, saying what it bounds and its default. */
export function timeoutFlag(description: string) {
  return { timeout: { type: 'string', description, valueHint: 'DURATION' } } as const;
}

/** Whether a flag was given: present, not `--no-…`, not blank. */
export function given(value: unknown): boolean {
  return value !== undefined && value !== false && !(typeof value === 'string' && value.trim() === '');
}

/** Refuses the first pair of flags given together that cannot be: `--a and --b are mutually exclusive`. */
export function refuseTogether(args: Record<string, unknown>, pairs: [string, string][]): void {
  for (const [a, b] of pairs) {
    if (given(args[a]) && given(args[b])) throw new CliError(`--${a} and --${b} are mutually exclusive`);
  }
}

/** A duration flag's milliseconds (`90s`, `5m`, `1h30m`, `1d`; a bare number is seconds), `fallback` if absent. */
export function duration(value: string | undefined, flag: string, fallback: number): number;
export function duration(value: string | undefined, flag: string): number | undefined;
export function duration(value: string | undefined, flag: string, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  let ms: number;
  try {
    ms = parseFlagDuration(value);
  } catch (err) {
    throw new CliError(`invalid --${flag} ${JSON.stringify(value)}: ${(err as Error).message}`);
  }
  return ms;
}

/** A time-out flag: a duration greater than zero. */
export function timeout(value: string | undefined, fallbackMs: number, flag = 'timeout'): number {
  const ms = duration(value, flag, fallbackMs);
  if (!(ms > 0)) throw new CliError(`invalid --${flag} ${JSON.stringify(value)}: must be more than zero`);
  return ms;
}

/** A moment flag (ms since the epoch): RFC 3339, or a duration back from now (`ago`) or ahead of it. */
export function pointInTime(value: string | undefined, flag: string, direction: 'ago' | 'ahead'): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parsePointInTime(value, direction);
  } catch (err) {
    throw new CliError(`invalid --${flag} ${JSON.stringify(value)}: ${(err as Error).message}`);
  }
}

/** An integer flag (the API judges its range; this refuses only what is not a number). */
export function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value.trim())) {
    throw new CliError(`invalid --${flag} ${JSON.stringify(value)}: expected an integer`);
  }
  return Number(value.trim());
}

/** `--limit`: a positive integer, default 100. */
export function listLimit(value: string | undefined): number {
  const limit = integer(value, 'limit') ?? 100;
  if (limit < 1) throw new CliError(`invalid --limit ${limit}: must be at least 1`);
  return limit;
}

/** `KEY=VALUE` values of a repeatable flag as a map (`KEY=` keeps the empty value); undefined when none. */
export function keyValues(values: string[], flag: string): Record<string, string> | undefined {
  if (values.length === 0) return undefined;
  const map: Record<string, string> = {};
  for (const value of values) {
    const eq = value.indexOf('=');
    if (eq <= 0) throw new CliError(`invalid --${flag} ${JSON.stringify(value)}: expected KEY=VALUE`);
    map[value.slice(0, eq)] = value.slice(eq + 1);
  }
  return map;
}

/** A name compared loosely: `start_command`, `start-command` and `startCommand` are one. */
function loose(name: string): string {
  return name.replace(/[-_]/g, '').toLowerCase();
}

/**
 * The flag (`--title`) or argument (`TITLE`) of `flags` that carried the request field at `location`
 * (`body.title`, `query.limit`, `path.id`, `header.idempotency-key`), if one did.
 */
export function flagForLocation(location: string, flags: Flags): string | undefined {
  const [part = '', field] = location.split(/[.[]/);
  if (!['body', 'query', 'path', 'header'].includes(part) || !field) return undefined;
  for (const [name, flag] of Object.entries(flags)) {
    // A repeatable flag fills a list or map named in the plural: `--var` carries `body.vars`.
    const carries = loose(flag.field ?? name);
    if (carries !== loose(field) && !(flag.repeatable && !flag.field && `${carries}s` === loose(field))) continue;
    return flag.type === 'positional' ? (flag.valueHint ?? name).toUpperCase() : `--${name}`;
  }
  return undefined;
}

/**
 * A validation problem (422 with `errors[]`) told in the words of the command line: `invalid --title: …`
 * for `body.title`, the location kept where no flag carried it. Undefined when it names no field.
 */
export function problemInFlags(problem: ApiProblem, flags: Flags): string | undefined {
  const located = problem.errors.filter((e) => e.location);
  if (located.length === 0) return undefined;
  return located
    .map((e) => `invalid ${flagForLocation(e.location!, flags) ?? e.location}: ${e.message ?? 'invalid'}`)
    .join('; ');
}
