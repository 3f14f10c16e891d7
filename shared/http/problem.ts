import { STATUS_CODES } from 'node:http';
import type { Context } from 'koa';
import type { ErrorDetail, ErrorModel } from '../dto/errors.js';

/** Every problem code either process answers with; documented in the OpenAPI document under `x-ctl-problem-types`. */
export const PROBLEM_CODES = {
  'invalid-request': 400,
  'invalid-cursor': 400,
  unauthorized: 401,
  'webhook-rejected': 401,
  forbidden: 403,
  'city-not-found': 404,
  'bead-not-found': 404,
  'mail-not-found': 404,
  'convoy-not-found': 404,
  'session-not-found': 404,
  'agent-not-found': 404,
  'provider-not-found': 404,
  'formula-not-found': 404,
  'run-not-found': 404,
  'workflow-not-found': 404,
  'order-not-found': 404,
  'wait-not-found': 404,
  'rig-not-found': 404,
  'route-not-found': 404,
  'service-not-found': 404,
  'host-not-found': 404,
  'review-not-found': 404,
  'pack-not-found': 404,
  'command-not-found': 404,
  'patch-not-found': 404,
  'adapter-not-found': 404,
  'token-not-found': 404,
  'extmsg-group-not-found': 404,
  'method-not-allowed': 405,
  'request-timeout': 408,
  'conflict-wrong-state': 409,
  'conflict-concurrent-modify': 409,
  'operation-in-progress': 409,
  'pack-credential-required': 409,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'host-not-allowed': 421,
  'validation-failed': 422,
  'idempotency-mismatch': 422,
  'headers-too-large': 431,
  internal: 500,
  'not-implemented': 501,
  'bad-gateway': 502,
  'pack-fetch-failed': 502,
  'service-unavailable': 503,
  'provider-not-ready': 503,
  'gateway-timeout': 504,
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

const TITLES: Partial<Record<ProblemCode, string>> = {
  'city-not-found': 'City Not Found',
  'bead-not-found': 'Bead Not Found',
  'mail-not-found': 'Mail Not Found',
  'convoy-not-found': 'Convoy Not Found',
  'session-not-found': 'Session Not Found',
  'agent-not-found': 'Agent Not Found',
  'provider-not-found': 'Provider Not Found',
  'formula-not-found': 'Formula Not Found',
  'run-not-found': 'Run Not Found',
  'workflow-not-found': 'Workflow Not Found',
  'order-not-found': 'Order Not Found',
  'wait-not-found': 'Wait Not Found',
  'rig-not-found': 'Rig Not Found',
  'idempotency-mismatch': 'Idempotency Mismatch',
  'route-not-found': 'Not Found',
  'service-not-found': 'Service Not Found',
  'host-not-found': 'Host Not Found',
  'review-not-found': 'Review Not Found',
  'pack-not-found': 'Pack Not Found',
  'command-not-found': 'Command Not Found',
  'adapter-not-found': 'Adapter Not Found',
  'token-not-found': 'Token Not Found',
  'extmsg-group-not-found': 'Group Not Found',
  'patch-not-found': 'Patch Not Found',
  'pack-credential-required': 'Pack Credential Required',
  'pack-fetch-failed': 'Pack Fetch Failed',
  'conflict-wrong-state': 'Conflict',
  'conflict-concurrent-modify': 'Concurrent Modification',
  'operation-in-progress': 'Operation In Progress',
  'validation-failed': 'Validation Failed',
  'invalid-cursor': 'Invalid Cursor',
  'provider-not-ready': 'Provider Not Ready',
  'webhook-rejected': 'Webhook Rejected',
};

/**
 * An error that becomes an RFC 9457 problem response. Throw it from anywhere in a request; the problem
 * middleware renders it. `detail` keeps the spec's `prefix: text` form.
 */
export class Problem extends Error {
  readonly status: number;

  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    options: { status?: number; errors?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.status = options.status ?? PROBLEM_CODES[code];
    this.errors = options.errors;
    this.headers = options.headers;
  }

  readonly errors: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  toBody(instance?: string): ErrorModel {
    return {
      type: `urn:ctl:error:${this.code}`,
      title: TITLES[this.code] ?? STATUS_CODES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      ...(instance ? { instance } : {}),
      ...(this.errors ? { errors: this.errors } : {}),
      code: this.code,
    };
  }
}

/** `404 not_found: city not found or not running: <name>`, the answer of every typed per-city route until it runs. */
export function cityNotRunning(name: string): Problem {
  return new Problem('city-not-found', `not_found: city not found or not running: ${name}`);
}

/** The static detail the raw `svc/*` proxy answers while a city is not running. */
export function serviceProxyCityNotRunning(): Problem {
  return new Problem('city-not-found', 'not_found: city not found or not running');
}

export function sendProblem(ctx: Context, problem: Problem): void {
  ctx.status = problem.status;
  if (problem.headers) ctx.set(problem.headers);
  ctx.type = 'application/problem+json';
  ctx.body = problem.toBody(ctx.path);
}
