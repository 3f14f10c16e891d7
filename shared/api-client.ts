import createClient, { defaultPathSerializer, type Client } from 'openapi-fetch';
import { readSupervisorConfig } from './config/supervisor-config.js';
import type { ErrorModel } from './dto/errors.js';
import type { paths } from './generated/api-types.js';
import { ctlHome, homePaths } from './paths.js';
import { readSupervisorAddress } from './supervisor-address.js';

export type ApiClient = Client<paths>;

/**
 * The supervisor's base URL: `--api`, else `CTL_API`, else where the running supervisor of `$CTL_HOME` said it
 * listens (`supervisor.address`, so one started with `--port` is found), else `[supervisor] bind`/`port` of
 * `$CTL_HOME/supervisor.toml` (a wildcard bind means loopback), else `http://127.0.0.1:8372`.
 */
export function resolveApiBase(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = explicit?.trim() || env.CTL_API?.trim();
  if (chosen) return chosen.replace(/\/+$/, '');
  const paths = homePaths(ctlHome(env));
  const running = readSupervisorAddress(paths.address);
  if (running) return running.api;
  const config = readSupervisorConfig(paths.config, env);
  let host = config.bind;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::' || host === '[::]') host = '[::1]';
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  return `http://${host}:${config.port}`;
}

/**
 * A path parameter no URL can carry: `.` and `..` are path segments of their own (even percent-encoded), so a
 * bead id `..` would silently address another resource; the request is refused instead.
 */
export class InvalidPathParameter extends Error {}

function pathOf(pathname: string, params: Record<string, unknown>): string {
  for (const [name, value] of Object.entries(params ?? {})) {
    if (value === '.' || value === '..')
      throw new InvalidPathParameter(`${JSON.stringify(value)} is not a valid ${name}`);
  }
  return defaultPathSerializer(pathname, params);
}

/**
 * A typed client for the control plane (generated from our OpenAPI document). Every request is CSRF-marked.
 * `fetchImpl`: how requests are sent (the CLI's has time-outs); the global fetch by default.
 */
export function createApiClient(baseUrl: string, fetchImpl?: typeof fetch): ApiClient {
  return createClient<paths>({
    baseUrl,
    headers: { 'X-CTL-Request': 'ctl' },
    pathSerializer: pathOf,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
}

/** The human text of a problem response: its `detail`, else its title, else the status. */
export function problemText(error: unknown, response: Response): string {
  const problem = error as ErrorModel | undefined;
  if (problem && typeof problem === 'object') {
    if (problem.detail) return problem.detail;
    if (problem.title) return problem.title;
  }
  return `API returned HTTP ${response.status}`;
}

/** A transport failure (no HTTP answer) as one line. */
export function transportText(err: unknown, baseUrl: string): string {
  const cause = (err as { cause?: { code?: string } }).cause;
  const code = cause?.code ?? (err as { code?: string }).code;
  if (code === 'ECONNREFUSED' || code === 'ENOENT') {
    return `cannot reach the supervisor at ${baseUrl} (connection refused); start it with "ctl supervisor start" or pass --api`;
  }
  return `request to ${baseUrl} failed: ${code ?? (err as Error).message}`;
}
