import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { Problem } from '../../shared/http/problem.js';
import { newResponseId, REQUEST_ID_HEADER } from '../../shared/http/request-id.js';
import type { CityRuntime } from '../city-runtime.js';
import { routeService } from './service-proxy.js';
import { HOP_BY_HOP } from '../../shared/http/hop-by-hop.js';

/**
 * The `svc/*` proxy's fast path, before Koa: a GET or HEAD without a body or an Origin to a service that is up
 * goes to it over undici's connection pool, its answer streamed back as it comes (SSE included). Anything else
 * — a refusal, a mutation, a CORS request, a service that is down — returns false and takes the Koa path, which
 * answers it by the same rules. Services are often chatty (a dashboard polling, a WebSocket's page), and Koa's
 * context and middleware cost several times what the forwarding does.
 */
export function serviceFastPath(city: CityRuntime): (req: IncomingMessage, res: ServerResponse) => boolean {
  const prefix = `/v0/city/${encodeURIComponent(city.name)}/svc/`;
  const pools = new Map<string, Pool>();
  return (req, res) => {
    const url = req.url;
    if (url === undefined || !url.startsWith(prefix)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const headers = req.headers;
    if (headers.origin !== undefined || headers['transfer-encoding'] !== undefined) return false;
    if (headers['content-length'] !== undefined && headers['content-length'] !== '0') return false;
    const q = url.indexOf('?');
    let routed;
    try {
      routed = routeService(city, (q < 0 ? url : url.slice(0, q)).slice(prefix.length - 1));
    } catch {
      return false; // refused: the long way says why
    }
    const { target, tail } = routed;
    const key = 'socketPath' in target ? `unix:${target.socketPath}` : `${target.host}:${target.port}`;
    let pool = pools.get(key);
    if (!pool) {
      pool =
        'socketPath' in target
          ? new Pool('http://localhost', { socketPath: target.socketPath, connections: 64 })
          : new Pool(`http://${target.host}:${target.port}`, { connections: 64 });
      pools.set(key, pool);
    }
    forward(req, res, pool, {
      path: `${'basePath' in target ? target.basePath : ''}${tail || '/'}${q < 0 ? '' : url.slice(q)}`,
      host: target.hostHeader,
    });
    return true;
  };
}

function forward(req: IncomingMessage, res: ServerResponse, pool: Pool, to: { path: string; host: string }): void {
  const id = newResponseId();
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  headers.host = to.host;
  // A client that goes away (an SSE reader closing its tab) ends the request upstream too.
  let upstream: { abort: (reason: Error) => void } | undefined;
  let gone = false;
  res.once('close', () => {
    if (res.writableFinished) return;
    gone = true;
    upstream?.abort(new Error('the client went away'));
  });
  pool.dispatch(
    { path: to.path, method: req.method!, headers: headers as Record<string, string> },
    {
      onRequestStart(controller) {
        upstream = controller;
        if (gone) controller.abort(new Error('the client went away'));
      },
      onResponseStart(_controller, statusCode, upstream) {
        for (const [name, value] of Object.entries(upstream)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) res.setHeader(name, value);
        }
        res.setHeader(REQUEST_ID_HEADER, id);
        res.writeHead(statusCode);
        if (upstream['content-length'] === undefined) res.flushHeaders();
      },
      onResponseData(controller, chunk) {
        if (!res.write(chunk)) {
          controller.pause();
          res.once('drain', () => controller.resume());
        }
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError(_controller, err) {
        if (res.headersSent || res.destroyed) {
          res.destroy();
          return;
        }
        const code = (err as NodeJS.ErrnoException).code ?? err.message;
        const problem = new Problem('bad-gateway', `bad_gateway: the service did not answer: ${code}`);
        const body = JSON.stringify(problem.toBody(req.url?.split('?')[0]));
        res.writeHead(problem.status, {
          'Content-Type': 'application/problem+json',
          'Content-Length': Buffer.byteLength(body),
          [REQUEST_ID_HEADER]: id,
        });
        res.end(body);
      },
    },
  );
}
