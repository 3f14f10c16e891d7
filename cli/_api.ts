import { setFlagsFromString } from 'node:v8';
import {
  createApiClient,
  InvalidPathParameter,
  problemText,
  resolveApiBase,
  transportText,
} from '../shared/api-client.js';
import { ConfigError } from '../shared/config/config-error.js';
import type { ErrorModel } from '../shared/dto/errors.js';
import { formatDuration, parseFlagDuration } from '../shared/duration.js';
import { FetchTimeout, timedFetch, type FetchLimits } from '../shared/timed-fetch.js';
import { ApiProblem, CliError, NoAnswer } from './_errors.js';
import type { Api, FetchResult } from './_types.js';

/** The anti-CSRF header every mutation declares (the client also sends it by default). */
export const CSRF = { 'X-CTL-Request': 'ctl' } as const;

/** Unless `CTL_CONNECT_TIMEOUT` / `CTL_TIMEOUT` say otherwise. */
const DEFAULT_LIMITS = { connectMs: 3_000, answerMs: 10_000 } as const;

let baselineWasm = false;

export function connect(explicit: string | undefined): Api {
  if (!baselineWasm) {
    // Request and Response (which the typed client builds even over our node:http fetch) load undici, and
    // with it a WebAssembly HTTP parser; V8 optimises that in the background and a process waits for the work
    // to finish before it exits — about 40 ms of every short command. The baseline compiler alone is plenty
    // for a CLI. Set before the first request, so it compiles that way. Undici itself is loaded first: a flag
    // set at run time changes V8's flag hash, and Node's built-in modules compiled after that cannot use their
    // code cache (undici alone then compiles in ~40 ms instead of ~10).
    void globalThis.Request;
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
  const limits = fetchLimits();
  return {
    base,
    client: createApiClient(base, withToken(timedFetch(limits))),
    limits,
    streamFetch: withToken(timedFetch({ connectMs: limits.connectMs })),
  };
}

/**
 * Requests carrying `CTL_TOKEN` as a bearer token, when it is set: how someone other than the supervisor's user
 * (or on another machine) uses `ctl`. Unset, nothing is added and the supervisor knows us by our account.
 */
function withToken(send: typeof fetch, env: NodeJS.ProcessEnv = process.env): typeof fetch {
  const token = env.CTL_TOKEN?.trim();
  if (!token) return send;
  return (input, init) => {
    const request = new Request(input, init);
    if (!request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
    return send(request);
  };
}

/** `CTL_CONNECT_TIMEOUT` and `CTL_TIMEOUT` (durations as flags take them: `3s`, `500ms`, `1m`), or the defaults. */
function fetchLimits(env: NodeJS.ProcessEnv = process.env): Required<FetchLimits> {
  return {
    connectMs: envDuration(env, 'CTL_CONNECT_TIMEOUT', DEFAULT_LIMITS.connectMs),
    answerMs: envDuration(env, 'CTL_TIMEOUT', DEFAULT_LIMITS.answerMs),
  };
}

function envDuration(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  let ms: number;
  try {
    ms = parseFlagDuration(text);
  } catch (err) {
    throw new CliError(`invalid ${name} ${JSON.stringify(text)}: ${(err as Error).message}`);
  }
  if (!(ms > 0)) throw new CliError(`invalid ${name} ${JSON.stringify(text)}: must be positive`);
  return ms;
}

/**
 * The same API for an operation the server itself may spend up to `serverWaitMs` on (starting a city, waiting
 * for a compression): its answer time-out allows for that wait on top of the usual one.
 */
export function patient(api: Api, serverWaitMs: number): Api {
  const limits = { ...api.limits, answerMs: api.limits.answerMs + serverWaitMs };
  return { ...api, client: createApiClient(api.base, withToken(timedFetch(limits))), limits };
}

/** Awaits one API call: its data; an ApiProblem for a problem answer, a CliError for no answer. */
export async function call<T>(api: Api, request: Promise<FetchResult<T>>): Promise<{ data: T; response: Response }> {
  let result: FetchResult<T>;
  try {
    result = await request;
  } catch (err) {
    if (err instanceof InvalidPathParameter) throw new CliError(err.message);
    if (err instanceof FetchTimeout) throw new NoAnswer(await failureText(err, api));
    throw new CliError(await failureText(err, api));
  }
  if (result.error !== undefined || !result.response.ok) {
    const problem = result.error as ErrorModel | undefined;
    const errors = Array.isArray(problem?.errors) ? problem.errors : [];
    throw new ApiProblem(problemText(problem, result.response), result.response.status, errors);
  }
  return { data: result.data as T, response: result.response };
}

/** A request that got no HTTP answer, as one line: a time-out names the supervisor's pid when it is known. */
export async function failureText(err: unknown, api: Api): Promise<string> {
  if (!(err instanceof FetchTimeout)) return transportText(err, api.base);
  // Loaded only now: it reads the home's lock with a native addon, which an answered command never needs.
  const { supervisorPidAt } = await import('./_supervisor-pid.js');
  const pid = supervisorPidAt(api.base);
  const who = pid === undefined ? 'the supervisor' : `the supervisor (pid ${pid})`;
  const what =
    err.phase === 'connect'
      ? `could not connect to ${who} at ${api.base} within ${formatDuration(err.ms)}`
      : `${who} at ${api.base} did not answer within ${formatDuration(err.ms)}`;
  return pid === undefined
    ? `${what}; is it overloaded or frozen? (CTL_TIMEOUT and CTL_CONNECT_TIMEOUT set how long to wait)`
    : `${what}; it may be frozen: "ctl supervisor stop --force"`;
}
