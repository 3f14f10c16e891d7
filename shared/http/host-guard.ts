import type { Middleware } from 'koa';
import { Problem } from './problem.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host part of a Host header value, lowercased, without the port. */
export function hostName(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end > 0 ? value.slice(0, end + 1) : value;
  }
  const colon = value.lastIndexOf(':');
  return colon >= 0 ? value.slice(0, colon) : value;
}

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Answers 421 unless the Host header names a loopback address or one of `allowedHosts`: a DNS-rebinding guard,
 * since a browser page on another origin can otherwise reach a loopback API by a name it controls. An
 * HTTP/1.1 request without a Host header, or any with two, is a 400 (RFC 9112 §3.2); node:http's own check
 * for the first is turned off (`requireHostHeader: false`) so that the answer is a problem with a request id.
 */
export function hostGuard(allowedHosts: string[]): Middleware {
  const allowed = new Set(allowedHosts.map((h) => h.toLowerCase()));
  return async (ctx, next) => {
    const raw = ctx.req.rawHeaders;
    let hosts = 0;
    for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === 'host') hosts++;
    if (hosts > 1) throw new Problem('invalid-request', 'invalid: more than one Host header');
    if (hosts === 0 && ctx.req.httpVersion !== '1.0') {
      throw new Problem('invalid-request', 'invalid: an HTTP/1.1 request needs a Host header');
    }
    const host = hostName(ctx.get('Host'));
    if (!isLoopbackHost(host) && !allowed.has(host)) {
      throw new Problem('host-not-allowed', `host_not_allowed: Host header ${JSON.stringify(host)} is not allowed`);
    }
    await next();
  };
}
