/**
 * What "who may use the API" costs (issue 25): the supervisor's access gate in front of a trivial handler,
 * against the same handler bare, in this process over real loopback connections —
 *  - per request on a kept-alive connection (the verdict is a WeakMap lookup; a bearer token is a SHA-256);
 *  - per new connection (a read of /proc/net/tcp and one search in it), with no other sockets open and with
 *    1,000 other loopback connections open (2,000 more lines in the file);
 *  - the peer lookup alone.
 * Prints tables and writes `.bench-out/access.json`. Run with `npm run bench -- access`.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import {
  Agent,
  createServer,
  request,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { PeerAccess } from '../shared/http/peer-access.js';
import { peerUid } from '../shared/http/peer-uid.js';
import { AccessGate } from '../supervisor/access-gate.js';
import { ApiTokens } from '../supervisor/api-tokens.js';
import { BrowserSessions } from '../supervisor/browser-sessions.js';
import { tempDir } from '../test/helpers/supervisor.js';
import { rounded, summarize, type Summary } from './stats.js';
import { formatTable, ms } from './table.js';

const KEPT_ALIVE = 5_000;
const NEW_CONNECTIONS = 500;
const LOOKUPS = 1_000;
const OTHER_SOCKETS = 1_000;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT_FILE = join(repoRoot, '.bench-out', 'access.json');

async function listen(
  handler: RequestListener,
  setup?: (server: Server) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer({ keepAliveTimeout: 65_000 }, handler);
  setup?.(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, port: (server.address() as { port: number }).port };
}

/** Milliseconds of each of `count` sequential GETs through `agent`. */
async function latencies(
  port: number,
  agent: Agent | false,
  count: number,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await new Promise<void>((done, fail) => {
      const req = request({ host: '127.0.0.1', port, path: '/v0/cities', agent, headers }, (res) => {
        if (res.statusCode !== 200) fail(new Error(`status ${res.statusCode}`));
        res.resume();
        res.on('end', done);
      });
      req.on('error', fail);
      req.end();
    });
    out.push(performance.now() - started);
  }
  return out;
}

/** `count` idle loopback connections to a server of their own: more sockets for the kernel to list. */
async function openSockets(count: number): Promise<() => void> {
  const sink = createTcpServer((s) => s.on('error', () => undefined));
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  const port = (sink.address() as { port: number }).port;
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    sockets.push(
      await new Promise<Socket>((done, fail) =>
        connect(port, '127.0.0.1')
          .once('connect', function (this: Socket) {
            done(this);
          })
          .once('error', fail),
      ),
    );
  }
  return () => {
    for (const s of sockets) s.destroy();
    sink.close();
  };
}

export async function runAccess(): Promise<void> {
  const home = tempDir('ctl-bench-access-');
  const ok: RequestListener = (_req, res) => res.end('{}');
  const tokens = new ApiTokens(join(home, 'tokens.json'));
  const secret = tokens.create({ name: 'bench' }, 'bench').token;
  const peers = new PeerAccess({ allowUsers: [], allowGroups: [] });
  const gate = new AccessGate({ peers, tokens, sessions: new BrowserSessions(), logger: pino({ level: 'silent' }) });
  const bare = await listen(ok);
  const gated = await listen(gate.requests(ok), (server) => peers.watch(server));
  const results: Record<string, Summary> = {};
  try {
    // Warm both paths (JIT, the first connection) before measuring.
    for (const port of [bare.port, gated.port])
      await latencies(port, new Agent({ keepAlive: true, maxSockets: 1 }), 200);

    const keptAlive = async (port: number, headers?: Record<string, string>) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        return rounded(summarize(await latencies(port, agent, KEPT_ALIVE, headers)), 4);
      } finally {
        agent.destroy();
      }
    };
    results.kept_alive_bare_ms = await keptAlive(bare.port);
    results.kept_alive_peer_ms = await keptAlive(gated.port);
    results.kept_alive_token_ms = await keptAlive(gated.port, { authorization: `Bearer ${secret}` });

    results.new_connection_bare_ms = rounded(summarize(await latencies(bare.port, false, NEW_CONNECTIONS)), 4);
    results.new_connection_peer_ms = rounded(summarize(await latencies(gated.port, false, NEW_CONNECTIONS)), 4);
    const lookup = async () => {
      const times: number[] = [];
      await new Promise<void>((done, fail) => {
        const measure = async (req: IncomingMessage, res: ServerResponse) => {
          const s = req.socket;
          const ends = {
            localAddress: s.localAddress!,
            localPort: s.localPort!,
            remoteAddress: s.remoteAddress!,
            remotePort: s.remotePort!,
          };
          for (let i = 0; i < LOOKUPS; i++) {
            const started = performance.now();
            await peerUid(ends);
            times.push(performance.now() - started);
          }
          res.end();
          probe.close();
        };
        const probe = createServer((req, res) => void measure(req, res).then(done, fail)).listen(0, '127.0.0.1', () => {
          request({ host: '127.0.0.1', port: (probe.address() as { port: number }).port, agent: false }, (res) =>
            res.resume(),
          ).end();
        });
      });
      return rounded(summarize(times), 4);
    };
    results.lookup_ms = await lookup();

    const close = await openSockets(OTHER_SOCKETS);
    try {
      results.new_connection_bare_1000_ms = rounded(summarize(await latencies(bare.port, false, NEW_CONNECTIONS)), 4);
      results.new_connection_peer_1000_ms = rounded(summarize(await latencies(gated.port, false, NEW_CONNECTIONS)), 4);
      results.lookup_1000_ms = await lookup();
    } finally {
      close();
    }
  } finally {
    bare.server.close();
    gated.server.close();
    bare.server.closeAllConnections();
    gated.server.closeAllConnections();
    rmSync(home, { recursive: true, force: true });
  }

  const r = results;
  const added = (with_: Summary, without: Summary) => {
    const us = (with_.median - without.median) * 1000;
    return `${us < 0 ? '−' : '+'}${ms(Math.abs(us), 1)} µs`;
  };
  console.log(
    formatTable(
      'Access gate: per request on a kept-alive connection (GET, trivial handler)',
      ['path', 'requests', 'p50', 'p99', 'added at p50'],
      [
        ['no gate', String(KEPT_ALIVE), ms(r.kept_alive_bare_ms.median, 3), ms(r.kept_alive_bare_ms.p99, 3), ''],
        [
          'same-user rule (cached verdict)',
          String(KEPT_ALIVE),
          ms(r.kept_alive_peer_ms.median, 3),
          ms(r.kept_alive_peer_ms.p99, 3),
          added(r.kept_alive_peer_ms, r.kept_alive_bare_ms),
        ],
        [
          'bearer token (SHA-256 each request)',
          String(KEPT_ALIVE),
          ms(r.kept_alive_token_ms.median, 3),
          ms(r.kept_alive_token_ms.p99, 3),
          added(r.kept_alive_token_ms, r.kept_alive_bare_ms),
        ],
      ],
    ),
  );
  console.log(
    formatTable(
      'Access gate: per new connection (connect, GET, close)',
      ['other sockets open', 'no gate p50', 'same-user p50', 'p99', 'added at p50', 'lookup alone p50', 'p99'],
      [
        [
          '0',
          ms(r.new_connection_bare_ms.median, 3),
          ms(r.new_connection_peer_ms.median, 3),
          ms(r.new_connection_peer_ms.p99, 3),
          added(r.new_connection_peer_ms, r.new_connection_bare_ms),
          ms(r.lookup_ms.median, 3),
          ms(r.lookup_ms.p99, 3),
        ],
        [
          String(OTHER_SOCKETS),
          ms(r.new_connection_bare_1000_ms.median, 3),
          ms(r.new_connection_peer_1000_ms.median, 3),
          ms(r.new_connection_peer_1000_ms.p99, 3),
          added(r.new_connection_peer_1000_ms, r.new_connection_bare_1000_ms),
          ms(r.lookup_1000_ms.median, 3),
          ms(r.lookup_1000_ms.p99, 3),
        ],
      ],
    ),
  );
  mkdirSync(dirname(OUT_FILE), { recursive: true });
  writeFileSync(OUT_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`wrote ${OUT_FILE}`);
}
