import type { ArgsDef, CommandDef } from 'citty';
import type { CityInfo } from '../shared/dto/cities.js';
import { apiArg, connect, type Api } from './_api.js';
import { CliError, leafCommand } from './_command.js';
import { resolveCity } from './_scope.js';

// Helpers shared by the commands on a city's work units (`ctl bead`, `ctl mail`, `ctl convoy`).

/** `--city`, `--api` and `--json`: every work command has them. */
export const cityArgs = {
  city: { type: 'string', description: 'City name or directory (default: CTL_CITY, or the city you are in)' },
  json: { type: 'boolean', description: 'Print the API response as JSON' },
  ...apiArg,
} as const;

/** The API and the city in scope; a CliError when no city is. */
export async function inCity(a: { api?: unknown; city?: unknown }): Promise<{ api: Api; city: CityInfo }> {
  const api = connect(optString(a.api, 'api'));
  const city = await resolveCity(api, optString(a.city, 'city'));
  if (!city) throw new CliError('no city in scope; pass --city, set CTL_CITY, or run inside a city directory');
  return { api, city };
}

/** `{ cityName }` (and more) for a city route's path parameters. */
export function cityPath(city: CityInfo): { cityName: string } {
  return { cityName: city.name };
}

export function write(line: string): void {
  process.stdout.write(`${line}\n`);
}

export function writeJson(data: unknown): void {
  process.stdout.write(`${JSON.stringify(data)}\n`);
}

/**
 * A string flag's value, or undefined when absent. citty turns `--no-x` into `false` and a trailing `--x`
 * into `true` or `''`; neither is a value.
 */
export function optString(value: unknown, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value === false) throw new CliError(`unknown flag --no-${flag}`);
  throw new CliError(`--${flag} needs a value`);
}

/**
 * Every value of a repeatable flag (citty keeps one), in order; `--add-label` also as `--addLabel`, the
 * spelling `--help` shows.
 */
export function repeated(rawArgs: string[], flag: string): string[] {
  const names = new Set([flag, flag.replace(/(?<=\w)-([a-z])/g, (_, c: string) => c.toUpperCase())]);
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i];
    if (arg === '--') break;
    const eq = arg.indexOf('=');
    if (names.has(arg)) {
      if (i + 1 >= rawArgs.length) throw new CliError(`${flag} needs a value`);
      values.push(rawArgs[++i]);
    } else if (eq > 0 && names.has(arg.slice(0, eq))) values.push(arg.slice(eq + 1));
  }
  return values;
}

/** An integer flag within bounds (the API judges its own limits; this only refuses what is not a number). */
export function optInteger(value: unknown, flag: string): number | undefined {
  const text = optString(value, flag);
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text.trim()))
    throw new CliError(`invalid --${flag} ${JSON.stringify(text)}: expected an integer`);
  return Number(text.trim());
}

/** `--meta k=v` values as a map (`k=` keeps the empty value, which an update uses to remove the key). */
export function parseMeta(values: string[]): Record<string, string> | undefined {
  if (values.length === 0) return undefined;
  const meta: Record<string, string> = {};
  for (const value of values) {
    const eq = value.indexOf('=');
    if (eq <= 0) throw new CliError(`invalid --meta ${JSON.stringify(value)}: expected KEY=VALUE`);
    meta[value.slice(0, eq)] = value.slice(eq + 1);
  }
  return meta;
}

/** A cell: the value, or `-` when there is none. */
export function cell(value: string | number | undefined | null): string {
  return value === undefined || value === null || value === '' ? '-' : String(value);
}

/** `--limit`: a positive integer, default 100. */
export function listLimit(value: unknown): number {
  const limit = optInteger(value, 'limit') ?? 100;
  if (limit < 1) throw new CliError(`invalid --limit ${limit}: must be at least 1`);
  return limit;
}

/** Names of a command's flags that take a value (so the word after them is not a positional). */
function valuedFlags(args: ArgsDef): Set<string> {
  const valued = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type !== 'string' && def.type !== 'enum') continue;
    valued.add(`--${name}`);
    valued.add(`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
    const aliases = def.alias ? (Array.isArray(def.alias) ? def.alias : [def.alias]) : [];
    for (const alias of aliases) valued.add(alias.length === 1 ? `-${alias}` : `--${alias}`);
  }
  return valued;
}

/** The indices of the positional words of a raw argument list, in order. */
function positionalIndices(rawArgs: string[], args: ArgsDef): number[] {
  const valued = valuedFlags(args);
  const out: number[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const raw = rawArgs[i];
    if (raw === '--') {
      for (let j = i + 1; j < rawArgs.length; j++) out.push(j);
      break;
    }
    if (raw.startsWith('-') && raw !== '-') {
      if (!raw.includes('=') && valued.has(raw)) i++;
      continue;
    }
    out.push(i);
  }
  return out;
}

/** The positional words of a raw argument list, in order. */
export function positionals(rawArgs: string[], args: ArgsDef): string[] {
  return positionalIndices(rawArgs, args).map((i) => rawArgs[i]);
}

/**
 * A leaf command whose last positional takes every remaining word (`ctl convoy add ID ITEM…`): leafCommand
 * checks the flags, and sees only as many positionals as are declared.
 */
export function variadicCommand<T extends ArgsDef>(path: string, def: CommandDef<T>): CommandDef<T> {
  const leaf = leafCommand(path, def);
  return {
    ...leaf,
    setup: async (context) => {
      const args: ArgsDef = (typeof def.args === 'function' ? await def.args() : await def.args) ?? {};
      const declared = Object.values(args).filter((d) => d.type === 'positional').length;
      const extra = new Set(positionalIndices(context.rawArgs, args).slice(declared));
      const checked = context.rawArgs.filter((_, i) => !extra.has(i));
      await leaf.setup?.({ ...context, rawArgs: checked });
    },
  };
}

/** `Key: value` lines, values aligned; pairs without a value are left out. */
export function renderFields(pairs: [string, string | number | undefined][]): string {
  const present = pairs.filter(([, v]) => v !== undefined && v !== '') as [string, string | number][];
  const width = Math.max(0, ...present.map(([k]) => k.length + 1));
  return present.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v}`).join('\n') + '\n';
}
