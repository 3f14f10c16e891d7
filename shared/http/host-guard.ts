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
 * since a browser page on another origin can otherwise reach a loopback API by a name it controls.
 */
export function hostGuard(allowedHosts: string[]): Middleware {
  const allowed = new Set(allowedHosts.map((h) => h.toLowerCase()));
  return async (ctx, next) => {
    const host = hostName(ctx.get('Host'));
    if (!isLoopbackHost(host) && !allowed.has(host)) {
      throw new Problem('host-not-allowed', `host_not_allowed: Host header ${JSON.stringify(host)} is not allowed`);
    }
    await next();
  };
}
