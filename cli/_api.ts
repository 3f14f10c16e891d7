import { setFlagsFromString } from 'node:v8';
import {
  createApiClient,
  InvalidPathParameter,
  problemText,
  resolveApiBase,
  transportText,
  type ApiClient,
} from '../shared/api-client.js';
import { ConfigError } from '../shared/config/config-error.js';
import { CliError } from './_command.js';

export const apiArg = {
  api: { type: 'string', description: 'Supervisor API base URL (default: CTL_API, then $CTL_HOME/supervisor.toml)' },
} as const;

/** The anti-CSRF header every mutation declares (the client also sends it by default). */
export const CSRF = { 'X-CTL-Request': 'ctl' } as const;

export interface Api {
  base: string;
  client: ApiClient;
}

let baselineWasm = false;

export function connect(explicit: string | undefined): Api {
  if (!baselineWasm) {
    // fetch parses HTTP with a WebAssembly module; V8 optimises it in the background and a process waits
    // for that work to finish before it exits — about 60 ms of every short command. The baseline compiler
    // alone is plenty for a CLI's few responses. Set before the first fetch, so it compiles that way.
    setFlagsFromString('--liftoff-only');
    baselineWasm = true;
  }
  let base: string;
  try {
    base = resolveApiBase(explicit);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
  try {
    new URL(base);
  } catch {
    throw new CliError(`invalid API URL ${JSON.stringify(base)}`);
  }
  return { base, client: createApiClient(base) };
}

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Awaits one API call: its data, or a CliError carrying the problem's detail or the transport failure. */
export async function call<T>(api: Api, request: Promise<FetchResult<T>>): Promise<{ data: T; response: Response }> {
  let result: FetchResult<T>;
  try {
    result = await request;
  } catch (err) {
    if (err instanceof InvalidPathParameter) throw new CliError(err.message);
    throw new CliError(transportText(err, api.base));
  }
  if (result.error !== undefined || !result.response.ok) {
    throw new CliError(problemText(result.error, result.response));
  }
  return { data: result.data as T, response: result.response };
}
