import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Problem } from './problem.js';
import { newResponseId, REQUEST_ID_HEADER } from './request-id.js';

/**
 * The one problem writer for what answers without Koa (the access gates, the proxies' fast paths): the body
 * and headers Koa's problem handler would send, with the request id given (a new one when none is).
 */
export function answerProblem(
  req: IncomingMessage,
  res: ServerResponse,
  problem: Problem,
  requestId: string = newResponseId(),
): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(problem.toBody(req.url?.split('?')[0]));
  res.writeHead(problem.status, {
    ...problem.headers,
    'Content-Type': 'application/problem+json',
    'Content-Length': Buffer.byteLength(body),
    [REQUEST_ID_HEADER]: requestId,
    'Cache-Control': 'no-store',
    Vary: 'Origin',
  });
  res.end(body);
}

/** A refused upgrade: the problem as a plain HTTP answer, headers included, then the connection closes. */
export function refuseUpgradeWithProblem(socket: Duplex, problem: Problem): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(problem.toBody());
  const extra = Object.entries(problem.headers ?? {}).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\n${extra.join('')}` +
      `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${REQUEST_ID_HEADER}: ${newResponseId()}\r\nConnection: close\r\n\r\n${body}`,
  );
}
