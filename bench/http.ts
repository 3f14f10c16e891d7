import { Agent, request, type RequestOptions } from 'node:http';
import { performance } from 'node:perf_hooks';
import { summarize, type Summary } from './stats.js';

/** Where a GET goes: a loopback TCP port or a Unix socket, with the agent (connection pool) to use. */
export interface GetTarget {
  label: string;
  options: RequestOptions;
}

export interface GetResult {
  status: number;
  body: Buffer;
}

/** A keep-alive connection pool. */
export function keepAliveAgent(maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
}

/** One GET, body read to the end. */
export function get(target: GetTarget): Promise<GetResult> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target.options, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** One request with a JSON body (a mutation: it carries `X-CTL-Request`), body read to the end. */
export function sendJson(target: GetTarget, method: string, body: unknown): Promise<GetResult> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...target.options,
        method,
        headers: {
          ...target.options.headers,
          'content-type': 'application/json',
          'content-length': payload.length,
          'x-ctl-request': 'bench',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** One GET that must answer 200 with JSON; the parsed body. */
export async function getJson<T>(target: GetTarget): Promise<T> {
  const res = await get(target);
  if (res.status !== 200) throw new Error(`${target.label}: HTTP ${res.status}: ${res.body.toString()}`);
  return JSON.parse(res.body.toString()) as T;
}

/** Latencies (ms) of `count` GETs sent one after another; throws on anything but 200. */
export async function sequentialLatencies(target: GetTarget, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await get(target);
    latencies.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`${target.label}: HTTP ${res.status}: ${res.body.toString()}`);
  }
  return latencies;
}

export interface LoadResult {
  concurrency: number;
  elapsedMs: number;
  ok: number;
  failed: number;
  rps: number;
  latency: Summary;
}

/** `concurrency` clients, each sending GETs back to back for `durationMs`; requests started before the end count. */
export async function closedLoopLoad(target: GetTarget, concurrency: number, durationMs: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const client = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        const res = await get(target);
        if (res.status === 200) ok++;
        else failed++;
      } catch {
        failed++;
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsedMs = performance.now() - started;
  return { concurrency, elapsedMs, ok, failed, rps: (ok / elapsedMs) * 1000, latency: summarize(latencies) };
}
