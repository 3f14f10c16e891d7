import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CityInfo } from '../shared/dto/cities.js';
import { call, connect } from './_api.js';
import { CliError } from './_errors.js';
import { allPages } from './_pages.js';
import type { Api } from './_types.js';
import type { ListedCity } from './_views.js';

// Which city a command is about: `--city` (a name or a directory), else CTL_CITY, else the city directory the
// working directory is in; none of them means the supervisor's scope.

/** The nearest directory at or above `start` holding `city.toml`. */
export function findCityRoot(start: string): string | undefined {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, 'city.toml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Every registered city, sorted by name (all pages). */
export async function listCities(api: Api): Promise<CityInfo[]> {
  return allPages(async (limit, cursor) => {
    const { data } = await call(
      api,
      api.client.GET('/v0/cities', { params: { query: { limit, ...(cursor ? { cursor } : {}) } } }),
    );
    return data;
  });
}

const SUSPENSION_ASK_MS = 1_000;

/**
 * The cities with, for each running one, whether it is suspended (its controller runs, none of its agents do):
 * a question to each running city, asked at once, its failure only leaving the mark out.
 */
export async function withSuspension(api: Api, cities: CityInfo[]): Promise<ListedCity[]> {
  return Promise.all(
    cities.map(async (c): Promise<ListedCity> => {
      if (!c.running) return c;
      // A frozen controller must not hold the list up: its mark is left out after a second.
      const reply = await api.client
        .GET('/v0/city/{cityName}/status', {
          params: { path: { cityName: c.name } },
          signal: AbortSignal.timeout(SUSPENSION_ASK_MS),
        })
        .catch((err: unknown) => ({ data: undefined, error: err }));
      return reply.data?.suspended ? { ...c, suspended: true } : c;
    }),
  );
}

/**
 * The registered city a command is about: `ref` (a registered name, or a path to a city directory), else
 * `CTL_CITY`, else the city the working directory is in. Undefined when none applies.
 */
export async function resolveCity(api: Api, ref: string | undefined): Promise<CityInfo | undefined> {
  const given = ref ?? process.env.CTL_CITY;
  if (given !== undefined && given !== '') {
    const cities = await listCities(api);
    const byName = cities.find((c) => c.name === given);
    const asPath = resolve(given);
    const byPath = cities.find((c) => c.path === asPath);
    if (byName && byPath && byName !== byPath) {
      throw new CliError(`${JSON.stringify(given)} is ambiguous: a city named so, and another city at ${asPath}`);
    }
    const city = byPath ?? byName;
    if (city) return city;
    if (existsSync(asPath) && (given.includes('/') || given.startsWith('.'))) {
      throw new CliError(`no registered city at ${asPath}; run "ctl cities" to see registered cities`);
    }
    throw new CliError(`no registered city named ${given}; run "ctl cities" to see registered cities`);
  }
  // Outside a city directory the scope is the supervisor's, known without asking it.
  const root = findCityRoot(process.cwd());
  if (!root) return undefined;
  const city = (await listCities(api)).find((c) => c.path === root);
  if (!city) throw new CliError(`the city at ${root} is not registered; run "ctl register"`);
  return city;
}

/** The API and the city in scope, for a command on a city's contents; a CliError when no city is. */
export async function inCity(args: { api?: string; city?: string }): Promise<{ api: Api; city: CityInfo }> {
  const api = connect(args.api);
  const city = await resolveCity(api, args.city);
  if (!city) throw new CliError('no city in scope; pass --city, set CTL_CITY, or run inside a city directory');
  return { api, city };
}

/** `{ cityName }`, the path parameter of every per-city route. */
export function cityPath(city: CityInfo): { cityName: string } {
  return { cityName: city.name };
}
