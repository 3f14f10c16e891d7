import { chmodSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { CityInfo, SupervisorCitiesOutputBody } from '../../shared/dto/cities.js';
import type { WhoamiResponse } from '../../shared/dto/whoami.js';
import { bearerSecret, unauthorized } from '../../shared/http/bearer.js';
import { ACTOR_HEADER } from '../../shared/http/peer-gate.js';
import { Problem } from '../../shared/http/problem.js';
import { answerProblem, refuseUpgradeWithProblem } from '../../shared/http/refusal.js';
import { newResponseId, REQUEST_ID_HEADER } from '../../shared/http/request-id.js';
import { forwardRequest } from '../../shared/http/upstream.js';
import type { UpstreamAddress } from '../../shared/http/upstream-pools.js';
import { WEBHOOK_PEER_HEADER } from '../../shared/http/webhook-path.js';
import { unixApiUrl } from '../../shared/unix-api-url.js';
import { ASSIGNED_SESSION } from '../beads/work-schema.js';
import { ensureOwnSocketDir } from '../private-runtime-dir.js';
import type { SessionCredentials } from './session-credentials.js';
import { checkBody, namesOf, sessionScope, type Ownership, type SessionGrant } from './session-scope.js';

/** A body a gate must read to check (a close, a comment, a mail): more than this is no agent's. */
const MAX_CHECKED_BODY = 1024 * 1024;
/** Requests of one host's sessions in flight to the controller at once; more wait for a connection. */
const CONNECTIONS = 64;
// sun_path is 108 bytes on Linux; leave room for the terminating NUL (shared/paths.ts does the same).
const MAX_SOCKET_PATH = 100;
const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** How long a call made while this controller starts waits for its API to listen. */
const UPSTREAM_WAIT_MS = 30_000;

export interface HostGatewayOptions {
  /** The city's name, and its directory (what `GET /v0/cities` says of it). */
  city: string;
  cityRoot: string;
  host: string;
  /** Where to listen: a Unix socket path (its directory is made ours, 0700). */
  socketPath: string;
  /** This controller's own API, where requests in scope go. */
  upstream: UpstreamAddress;
  /**
   * Resolves once this controller's API listens: a session's program started before that (a controller starting its
   * sessions again) has its first calls wait for it rather than fail. None: it listens already.
   */
  upstreamListening?: Promise<void>;
  credentials: SessionCredentials;
  logger: Logger;
}

/**
 * The API of a city as its sessions on one remote host see it: a Unix socket (0600, in a 0700 directory) that the
 * host's reverse tunnel (`ssh -R <socket there>:<this socket>`) forwards to, serving HTTP. Every request carries a
 * session credential (`Authorization: Bearer ctls_…`, the session's `CTL_TOKEN`): none or a bad one is a 401, a
 * session of another host or a request out of its scope (session-scope.ts) a 403 `forbidden: …`. A request in
 * scope goes on to this controller's API with the session's agent as its actor (`X-CTL-Actor`, which the
 * controller takes from whoever can open its socket — here only we can: the header a client sent is dropped,
 * and so is its credential, which nothing behind us has any use for). What the CLI asks the supervisor before a
 * city call, `GET /v0/whoami` and `GET /v0/cities`, it answers itself, for its session and its one city.
 * Streams pass through as they come, each on a connection of its own.
 */
export class HostGateway {
  /** The answers in progress of each session (its streams, mostly), ended when its credential is. */
  private readonly answersOf = new Map<string, Set<ServerResponse>>();
  private readonly stopListening: () => void;

  private constructor(
    private readonly o: HostGatewayOptions,
    private readonly server: Server,
    private readonly pool: Dispatcher,
    private readonly streamConnection: () => Dispatcher,
  ) {
    this.stopListening = o.credentials.onRevoke((sessionId) => {
      for (const res of this.answersOf.get(sessionId) ?? []) res.destroy();
      this.answersOf.delete(sessionId);
    });
  }

  get socketPath(): string {
    return this.o.socketPath;
  }

  get host(): string {
    return this.o.host;
  }

  /** Listens; rejects when the socket cannot be made (its directory another account's, the path taken). */
  static async open(o: HostGatewayOptions): Promise<HostGateway> {
    // undici (~1 MB) loads only when a city has a remote host at all (shared/http/upstream-pools.ts).
    const { UpstreamPools, ownConnection } = await import('../../shared/http/upstream-pools.js');
    const pool = new UpstreamPools(CONNECTIONS).get(o.host, o.upstream);
    const server = createServer({ requireHostHeader: false });
    const gateway = new HostGateway(o, server, pool, () => ownConnection(o.upstream));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => gateway.serve(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex) => gateway.refuseUpgrade(req, socket));
    server.keepAliveTimeout = 65_000;
    try {
      ensureOwnSocketDir(dirname(o.socketPath));
      // The directory is ours and 0700, and the city's lock is: a socket in it is a dead controller's gateway's.
      rmSync(o.socketPath, { force: true });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      });
      chmodSync(o.socketPath, 0o600);
    } catch (err) {
      gateway.stopListening();
      await pool.destroy();
      throw new Error(`cannot open the gateway of host ${o.host} at ${o.socketPath}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return gateway;
  }

  /** Stops listening and ends every connection, streams too (the tunnel is gone or the host is). */
  async close(): Promise<void> {
    this.stopListening();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await this.pool.destroy();
    rmSync(this.o.socketPath, { force: true });
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const requestId = newResponseId();
    this.handle(req, res, requestId).catch((err: unknown) => {
      if (!(err instanceof Problem)) {
        this.o.logger.error({ err, requestId, host: this.o.host }, 'the host gateway failed a request');
        err = new Problem('internal', 'internal: the host gateway failed; see the controller log');
      }
      answerProblem(req, res, err as Problem, requestId);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const grant = this.grantOf(req);
    this.track(grant.sessionId, res);
    const method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const verdict = sessionScope(grant, method, target);
    if (verdict.kind === 'refuse') throw new Problem('forbidden', verdict.detail);
    if (verdict.kind === 'answer') {
      return answerJson(res, requestId, verdict.what === 'whoami' ? this.whoami(grant) : this.cities());
    }
    await this.untilUpstreamListens();
    if (verdict.owns) await this.checkOwnership(grant, verdict.owns, requestId);
    let body: Buffer | undefined;
    if (verdict.body) {
      const checked = checkBody(grant, verdict.body, (await readBody(req)).toString('utf8'));
      if (!checked.ok) throw new Problem('forbidden', checked.detail);
      body = Buffer.from(checked.text, 'utf8');
    }
    // Its credential ended while it was checked (the revocation destroyed the answer): nothing goes on.
    if (res.destroyed) return;
    for (const name of ['authorization', 'cookie', ACTOR_HEADER, WEBHOOK_PEER_HEADER]) delete req.headers[name];
    req.headers[ACTOR_HEADER] = grant.actor;
    const stream = (method === 'GET' || method === 'HEAD') && target.split('?')[0]!.endsWith('/stream');
    const own = stream ? this.streamConnection() : undefined;
    try {
      await forwardRequest(req, res, own ?? this.pool, {
        path: target,
        hostHeader: 'localhost',
        requestId,
        upstreamName: `the controller of ${this.o.city}`,
        ...(body ? { body } : {}),
      });
    } finally {
      // Closing only ends the connection: it has nobody to report to.
      if (own) void own.destroy();
    }
  }

  private async untilUpstreamListens(): Promise<void> {
    if (!this.o.upstreamListening) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), UPSTREAM_WAIT_MS)));
    const outcome = await Promise.race([this.o.upstreamListening.then(() => 'listening' as const), late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      throw new Problem('bad-gateway', `bad_gateway: the controller of ${this.o.city} is not serving its API yet`);
    }
  }

  private track(sessionId: string, res: ServerResponse): void {
    let answers = this.answersOf.get(sessionId);
    if (!answers) this.answersOf.set(sessionId, (answers = new Set()));
    answers.add(res);
    res.once('close', () => {
      answers.delete(res);
      if (answers.size === 0 && this.answersOf.get(sessionId) === answers) this.answersOf.delete(sessionId);
    });
  }

  /** The session a request's credential stands for, when it may come through this host's gateway. */
  private grantOf(req: IncomingMessage): SessionGrant {
    const authorization = req.headers.authorization;
    if (authorization === undefined) {
      throw unauthorized(
        "unauthorized: a session credential is required (Authorization: Bearer ctls_…, the session's CTL_TOKEN)",
        'missing',
      );
    }
    const grant = this.o.credentials.check(bearerSecret(authorization));
    if (grant.host !== this.o.host || grant.city !== this.o.city) {
      throw new Problem(
        'forbidden',
        `forbidden: session ${grant.sessionName} runs on host ${grant.host} of city ${grant.city}, not through ` +
          `host ${this.o.host}'s gateway`,
      );
    }
    return grant;
  }

  /**
   * Refuses a mutation of what the session does not own, asked of the controller as the session itself. A thing
   * that is not there (or a lookup that fails) goes on: the controller answers it as it would anyone.
   */
  private async checkOwnership(grant: SessionGrant, owns: Ownership, requestId: string): Promise<void> {
    const base = `/v0/city/${encodeURIComponent(this.o.city)}`;
    const [path, mine, what] =
      'bead' in owns
        ? [
            `${base}/bead/${encodeURIComponent(owns.bead)}`,
            (v: Record<string, unknown>) =>
              (v.metadata as Record<string, string> | undefined)?.[ASSIGNED_SESSION] === grant.sessionId,
            `bead ${owns.bead}, which it does not hold`,
          ]
        : 'wait' in owns
          ? [
              `${base}/wait/${encodeURIComponent(owns.wait)}`,
              (v: Record<string, unknown>) => v.session_id === grant.sessionId,
              `wait ${owns.wait}, another session's`,
            ]
          : [
              `${base}/mail/${encodeURIComponent(owns.mail)}`,
              (v: Record<string, unknown>) => namesOf(grant).includes(v.to as string),
              `mail ${owns.mail}, which is not to it`,
            ];
    let found: Record<string, unknown> | undefined;
    try {
      const answer = await this.pool.request({
        path,
        method: 'GET',
        headers: { host: 'localhost', [ACTOR_HEADER]: grant.actor, [REQUEST_ID_HEADER.toLowerCase()]: requestId },
      });
      const text = await answer.body.text();
      if (answer.statusCode === 200) found = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new Problem('bad-gateway', `bad_gateway: the controller of ${this.o.city} did not answer: ${code}`);
    }
    if (found === undefined) return;
    if (!mine(found)) {
      throw new Problem(
        'forbidden',
        `forbidden: session ${grant.sessionName} (${grant.sessionId}) may not change ${what}`,
      );
    }
  }

  private whoami(grant: SessionGrant): WhoamiResponse {
    return {
      actor: grant.actor,
      kind: 'session',
      name: grant.sessionId,
      session_name: grant.sessionName,
      city: grant.city,
      read_only: false,
      browser_session: false,
    };
  }

  private cities(): SupervisorCitiesOutputBody {
    const city: CityInfo = { name: this.o.city, path: this.o.cityRoot, running: true };
    return { items: [city], total: 1 };
  }

  private refuseUpgrade(req: IncomingMessage, socket: Duplex): void {
    let problem: Problem;
    try {
      const grant = this.grantOf(req);
      problem = new Problem(
        'forbidden',
        `forbidden: session ${grant.sessionName} (${grant.sessionId}) may not open a WebSocket through its host's gateway`,
      );
    } catch (err) {
      problem =
        err instanceof Problem ? err : new Problem('forbidden', 'forbidden: the caller could not be identified');
    }
    refuseUpgradeWithProblem(socket, problem);
  }
}

/**
 * The gateways of one city's remote hosts, one per host, each at `.ctl/hosts/<host>/api.sock` (a short path in
 * the per-user socket directory when the city's is too long for a socket, as the controller's own).
 */
export class HostGateways {
  private readonly gateways = new Map<string, Promise<HostGateway>>();

  private listening: () => void = () => undefined;
  private readonly upstreamListening = new Promise<void>((resolve) => (this.listening = resolve));

  constructor(private readonly o: Omit<HostGatewayOptions, 'host' | 'socketPath'> & { runtimeDir: string }) {}

  /** This controller's API listens now: calls that waited for it go on. */
  apiListening(): void {
    this.listening();
  }

  /** Where `host`'s gateway listens, opened if it is not yet (once, however many ask at once). */
  async open(host: string): Promise<string> {
    let gateway = this.gateways.get(host);
    if (!gateway) {
      gateway = HostGateway.open({
        ...this.o,
        host,
        socketPath: this.socketPathOf(host),
        upstreamListening: this.upstreamListening,
      });
      this.gateways.set(host, gateway);
      gateway.catch(() => this.gateways.delete(host));
    }
    return (await gateway).socketPath;
  }

  /** Closes `host`'s gateway and ends the credentials of its sessions (the host is gone, or no longer ours). */
  async close(host: string): Promise<void> {
    const gateway = this.gateways.get(host);
    this.o.credentials.revokeHost(host);
    if (!gateway) return;
    this.gateways.delete(host);
    // One that never opened has nothing to close; its failure was its opener's to say.
    const opened = await gateway.catch((err: unknown) => {
      this.o.logger.debug({ err, host }, 'a gateway closed before it opened');
      return undefined;
    });
    await opened?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.gateways.keys()].map((host) => this.close(host)));
  }

  /** Where `host`'s gateway listens (or will). */
  socketPathOf(host: string): string {
    if (!HOST_NAME.test(host)) throw new Error(`invalid host name ${JSON.stringify(host)} for a gateway`);
    const path = join(this.o.runtimeDir, 'hosts', host, 'api.sock');
    if (Buffer.byteLength(path) <= MAX_SOCKET_PATH) return path;
    const { createHash } = process.getBuiltinModule('node:crypto');
    const digest = createHash('sha256').update(this.o.runtimeDir).digest('hex').slice(0, 16);
    return join(tmpdir(), `ctl-${process.getuid?.() ?? 0}`, `${digest}-${host}`, 'api.sock');
  }
}

/** The environment a session on a remote host reaches its city with, besides the CTL_* set every session has. */
export function remoteApiEnv(o: { remoteSocketPath: string; credential: string }): Record<string, string> {
  return { CTL_API: unixApiUrl(o.remoteSocketPath), CTL_TOKEN: o.credential };
}

function answerJson(res: ServerResponse, requestId: string, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    [REQUEST_ID_HEADER]: requestId,
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_CHECKED_BODY) {
      throw new Problem(
        'payload-too-large',
        `payload_too_large: a session's request body is over ${MAX_CHECKED_BODY} bytes`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
