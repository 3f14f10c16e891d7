import createClient from 'openapi-fetch';
import type { components, paths } from '../../shared/generated/api-types.js';

// The page is one more client of the control plane: the same typed client the CLI builds on (openapi-fetch over
// the types generated from our OpenAPI document), same origin (the session cookie or the local-user rule lets
// it in), every mutation marked with X-CTL-Request as the API requires.

export type Schemas = components['schemas'];

export const api = createClient<paths>({
  baseUrl: location.origin,
  headers: { 'X-CTL-Request': 'ctl-ui' },
});

/** A refused or failed request, with the problem's own words. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

interface Problemish {
  detail?: string;
  title?: string;
}

/** The text of a problem response: its detail, else its title, else the status. */
export function problemText(error: unknown, response: Response | undefined): string {
  const problem = error as Problemish | undefined;
  if (problem && typeof problem === 'object') {
    if (problem.detail) return problem.detail;
    if (problem.title) return problem.title;
  }
  return response ? `HTTP ${response.status} ${response.statusText}` : 'the supervisor did not answer';
}

/** The data of a typed call, or an ApiError with the problem's words. */
export async function must<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (err) {
    throw new ApiError(`cannot reach the supervisor: ${(err as Error).message}`, 0);
  }
  if (result.error !== undefined || !result.response.ok) {
    throw new ApiError(problemText(result.error, result.response), result.response.status);
  }
  return result.data as T;
}

/** An event as both streams and both lists carry it (the typed union narrowed to what the page reads). */
export interface LiveEvent {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  message?: string;
  payload?: Record<string, unknown>;
  /** The supervisor's merged stream names the city (`__supervisor__` for its own events). */
  city?: string;
}

export const cityPath = (city: string) => ({ cityName: city });

/** The header every mutation carries (the API refuses one without it: a form on another site cannot send it). */
export const CSRF = { 'X-CTL-Request': 'ctl-ui' } as const;
