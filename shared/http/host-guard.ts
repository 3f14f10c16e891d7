import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { Problem } from './problem.js';

/** A host and an optional port, lowercased, as a Host header or a request target's authority names them. */
export interface Authority {
  host: string;
  port: number | undefined;
}

// Exactly `host[:port]`: a bracketed IP literal or a run of name characters, then at most a port of digits.
// Anything after it (`:8372.evil.com`, `@evil.com`, `/x`, a second port) fails the match instead of being
// cut off, which is how a lenient split let `127.0.0.1:8372.evil.com` through.
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::([0-9]{1,5}))?$/;
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const LOOPBACK_IPV4 = new RegExp(`^127\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
// An absolute-form request target (RFC 9112 §3.2.2); we serve plain HTTP only.
const ABSOLUTE_TARGET = /^http:\/\/([^/?#]*)([/?].*)?$/i;

/** `host[:port]` with a port of 1–65535, split; undefined for anything else. */
export function parseAuthority(value: string): Authority | undefined {
  const match = AUTHORITY.exec(value.toLowerCase());
  if (!match) return undefined;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  return { host: match[1]!, port };
}

/** `localhost`, a dotted-quad address in 127.0.0.0/8, or ::1 (bracketed, or bare as a bind address is written). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || host === '::1' || LOOPBACK_IPV4.test(host);
}

/**
 * Answers 421 unless the Host header is exactly a loopback name or one of `allowedHosts` with an optional port:
 * a DNS-rebinding guard, since a browser page on another origin can otherwise reach a loopback API by a name it
 * controls. A request target in absolute form (`http://host:port/path`) must name the same host and port, and
 * is then served as its path. An HTTP/1.1 request without a Host header, or any with two, is a 400
 * (RFC 9112 §3.2); node:http's own check for the first is turned off (`requireHostHeader: false`) so that the
 * answer is a problem with a request id.
 */
export function hostGuard(allowedHosts: string[]): Middleware {
  const check = hostCheck(allowedHosts);
  return async (ctx, next) => {
    const url = check(ctx.req);
    if (url !== undefined) ctx.url = url;
    await next();
  };
}

/**
 * The Host rules as a function of a request: throws the problem of a request they refuse; returns the path to
 * serve when the target was in absolute form, else undefined.
 */
export function hostCheck(allowedHosts: string[]): (req: IncomingMessage) => string | undefined {
  const allowed = new Set(allowedHosts.map((h) => h.toLowerCase()));
  const accepted = (authority: Authority | undefined): authority is Authority =>
    authority !== undefined && (isLoopbackHost(authority.host) || allowed.has(authority.host));
  return (req) => {
    const raw = req.rawHeaders;
    let hosts = 0;
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') hosts++;
    if (hosts > 1) throw new Problem('invalid-request', 'invalid: more than one Host header');
    if (hosts === 0 && req.httpVersion !== '1.0') {
      throw new Problem('invalid-request', 'invalid: an HTTP/1.1 request needs a Host header');
    }
    const header = req.headers.host ?? '';
    const host = parseAuthority(header);
    if (!accepted(host)) throw notAllowed(`Host header ${JSON.stringify(header)} is not allowed`);
    const url = req.url ?? '/';
    if (url.startsWith('/') || (url === '*' && req.method === 'OPTIONS')) return undefined;
    return originForm(url, host, accepted);
  };
}

/** The path and query of an absolute-form target naming the same accepted host and port as the Host header. */
function originForm(
  target: string,
  host: Authority,
  accepted: (authority: Authority | undefined) => authority is Authority,
): string {
  const match = ABSOLUTE_TARGET.exec(target);
  if (!match) {
    throw new Problem(
      'invalid-request',
      `invalid: request target ${JSON.stringify(target)} is neither a path nor an http:// URL`,
    );
  }
  const authority = parseAuthority(match[1]!);
  if (!accepted(authority)) throw notAllowed(`request target host ${JSON.stringify(match[1])} is not allowed`);
  if (authority.host !== host.host || (authority.port ?? 80) !== (host.port ?? 80)) {
    throw notAllowed(`request target host ${JSON.stringify(match[1])} is not the Host header's`);
  }
  const rest = match[2] ?? '/';
  return rest.startsWith('?') ? `/${rest}` : rest;
}

function notAllowed(why: string): Problem {
  return new Problem('host-not-allowed', `host_not_allowed: ${why}`);
}
