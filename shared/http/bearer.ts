import { Problem } from './problem.js';

/** The secret of an `Authorization: Bearer <secret>` header; a 401 for any other shape of the header. */
export function bearerSecret(authorization: string): string {
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!match) throw unauthorized('unauthorized: Authorization must be "Bearer <token>"');
  return match[1]!;
}

/** A 401 with the challenge RFC 6750 asks for; `error="invalid_token"` tells a client to get a new one. */
export function unauthorized(detail: string, why: 'invalid' | 'expired' | 'missing' = 'invalid'): Problem {
  const description = why === 'expired' ? 'The token expired' : 'The token is malformed, unknown or revoked';
  const challenge =
    why === 'missing'
      ? 'Bearer realm="ctl"'
      : `Bearer realm="ctl", error="invalid_token", error_description="${description}"`;
  return new Problem('unauthorized', detail, { headers: { 'WWW-Authenticate': challenge } });
}
