import { decodeSegment } from './path-segment.js';
import { cityNotRunning, serviceProxyCityNotRunning, type Problem } from './problem.js';

const CITY_PATH = /^\/v0\/city\/([^/]+)(\/.*)?$/;

/** A per-city path, `/v0/city/{cityName}` and below. */
export interface CityPath {
  name: string;
  /** What follows the city name (`/status`, `/svc/web/x`, or ''). */
  rest: string;
  /** The raw workspace-service proxy (`svc/*`), outside the typed API. */
  serviceProxy: boolean;
}

export function parseCityPath(path: string): CityPath | undefined {
  const match = CITY_PATH.exec(path);
  if (!match) return undefined;
  const rest = match[2] ?? '';
  return { name: decodeSegment(match[1]!), rest, serviceProxy: rest === '/svc' || rest.startsWith('/svc/') };
}

/** The spec's 404 for a city that is not running: named for typed routes, static for `svc/*`. */
export function notRunning(path: CityPath): Problem {
  return path.serviceProxy ? serviceProxyCityNotRunning() : cityNotRunning(path.name);
}
