import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Problem } from './problem.js';

/** Where an upgrade goes: a Unix socket, or a TCP host and port, and the path to ask for there. */
export interface UpgradeTarget {
  socketPath?: string;
  host?: string;
  port?: number;
  path: string;
  hostHeader: string;
  /** No connection within this long: a 504 to the client. */
  connectTimeoutMs?: number;
  /** Headers set for the upstream, replacing any of the same name the client sent. */
  setHeaders?: Record<string, string>;
  /**
   * Headers taken from `req.headers` as the server left them (rewritten or deleted by a gate) instead of as the
   * client sent them.
   */
  parsedHeaders?: string[];
}

/**
 * Carries an HTTP upgrade (a WebSocket) on: the request as it came (its `Connection` and `Upgrade` headers
 * included, `Host` set for the upstream) goes to the target, and from then on the two connections are spliced
 * byte for byte — the upstream's `101` (or its refusal) reaches the client as the upstream wrote it. Either side
 * closing closes the other. Nothing is buffered but what the kernel holds.
 */
export function tunnelUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: UpgradeTarget): void {
  const upstream: Socket = target.socketPath
    ? connect(target.socketPath)
    : connect(target.port ?? 80, target.host ?? '127.0.0.1');
  let connected = false;
  const timer = setTimeout(() => {
    if (connected) return;
    upstream.destroy();
    refuseUpgrade(client, 504, 'gateway_timeout: the upstream did not accept the connection in time');
  }, target.connectTimeoutMs ?? 5000);
  upstream.once('connect', () => {
    connected = true;
    clearTimeout(timer);
    const lines = [`${req.method ?? 'GET'} ${target.path} HTTP/1.1`];
    const raw = req.rawHeaders;
    const parsed = (target.parsedHeaders ?? []).map((n) => n.toLowerCase());
    const replaced = new Set(['host', ...parsed, ...Object.keys(target.setHeaders ?? {}).map((n) => n.toLowerCase())]);
    for (let i = 0; i < raw.length; i += 2) {
      if (replaced.has(raw[i]!.toLowerCase())) continue;
      lines.push(`${raw[i]}: ${raw[i + 1]}`);
    }
    lines.push(`Host: ${target.hostHeader}`);
    for (const name of parsed) {
      const value = req.headers[name];
      for (const one of value === undefined ? [] : Array.isArray(value) ? value : [value])
        lines.push(`${name}: ${one}`);
    }
    for (const [name, value] of Object.entries(target.setHeaders ?? {})) lines.push(`${name}: ${value}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    clearTimeout(timer);
    if (!connected) refuseUpgrade(client, 502, `bad_gateway: cannot reach the upstream: ${err.code ?? err.message}`);
    else client.destroy();
  });
  upstream.on('close', () => client.destroy());
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
}

/** Answers an upgrade request with a problem (the status's own when given a bare detail) and closes the connection. */
export function refuseUpgrade(client: Duplex, status: number, detail: string, problem?: Problem): void {
  if (client.destroyed) return;
  const body = JSON.stringify(
    problem?.toBody() ?? { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail },
  );
  client.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A Problem thrown while routing an upgrade, as its answer. */
export function refuseWithProblem(client: Duplex, problem: Problem): void {
  refuseUpgrade(client, problem.status, problem.detail, problem);
}
