import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { createApiClient, type ApiClient } from '../../shared/api-client.js';
import type { WireTaggedEvent } from '../../shared/dto/events.js';
import { ctlEntryPath } from '../../shared/paths.js';
import { runCtl, type CliResult } from './cli.js';
import { isAlive, killAllMentioning } from './processes.js';
import { tempDir } from './temp-dir.js';
import { WAIT_MS, waitUntil } from './wait.js';

// The process-level files take their temporary directories from here, beside the supervisor that lives in one.
export { tempDir };

export const CSRF = { 'X-CTL-Request': 'test' } as const;

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface SupervisorOptions {
  /** Extra `[supervisor]` settings, as TOML lines. */
  config?: string[];
  env?: NodeJS.ProcessEnv;
  /** Reuse this test root (home and cities) instead of a new one, e.g. to restart a supervisor. */
  root?: string;
  port?: number;
  /** Files to put in `$CTL_HOME` before the supervisor starts (`tokens.json`, say), by name. */
  homeFiles?: Record<string, string>;
  /** Serve webhook deliveries (`[webhooks] listen`) on a free loopback port: `hooksBase`. */
  webhookListener?: boolean;
}

/**
 * A real supervisor process (`ctl supervisor run`) on a free loopback port, with its own `CTL_HOME` and a
 * directory for cities, both under one temporary root that `cleanup()` removes after killing every process
 * whose command line mentions it.
 */
export class TestSupervisor {
  readonly home: string;
  readonly citiesDir: string;
  readonly base: string;
  readonly api: ApiClient;
  readonly env: NodeJS.ProcessEnv;
  process: ResultPromise | undefined;
  output = '';
  /** The webhook listener's base URL (`webhookListener`), else undefined. */
  hooksBase: string | undefined;

  private constructor(
    readonly root: string,
    readonly port: number,
    env: NodeJS.ProcessEnv,
  ) {
    this.home = join(root, 'home');
    this.citiesDir = join(root, 'cities');
    this.base = `http://127.0.0.1:${port}`;
    this.api = createApiClient(this.base);
    this.env = { ...process.env, CTL_HOME: this.home, CTL_API: this.base, HOME: root, ...env };
  }

  static async start(options: SupervisorOptions = {}): Promise<TestSupervisor> {
    const root = options.root ?? tempDir();
    const port = options.port ?? (await freePort());
    const sup = new TestSupervisor(root, port, {
      CTL_SSE_HEARTBEAT_MS: '15000',
      ...options.env,
    });
    mkdirSync(sup.home, { recursive: true });
    mkdirSync(sup.citiesDir, { recursive: true });
    const hooksPort = options.webhookListener ? await freePort() : undefined;
    if (hooksPort) sup.hooksBase = `http://127.0.0.1:${hooksPort}`;
    writeFileSync(
      join(sup.home, 'supervisor.toml'),
      [
        '[supervisor]',
        `port = ${port}`,
        // Tests want a quick reconciler; a config that sets its own interval (a benchmark's) wins.
        ...(options.config?.some((l) => l.startsWith('patrol_interval')) ? [] : ['patrol_interval = "1s"']),
        ...(options.config ?? []),
        ...(hooksPort ? ['[webhooks]', `listen = "127.0.0.1:${hooksPort}"`] : []),
      ].join('\n') + '\n',
    );
    for (const [name, content] of Object.entries(options.homeFiles ?? {})) {
      writeFileSync(join(sup.home, name), content, { mode: 0o600 });
    }
    await sup.launch();
    return sup;
  }

  /** Starts (or restarts) the supervisor process and waits until it answers. */
  async launch(): Promise<void> {
    // CTL_TEST_ENTRY runs another build's supervisor (and so its controllers): a benchmark's before and after.
    const entry = process.env.CTL_TEST_ENTRY ?? ctlEntryPath();
    const child = execa(process.execPath, [entry, 'supervisor', 'run'], {
      env: this.env,
      reject: false,
      stdin: 'ignore',
      all: true,
      buffer: false,
      // We measure the supervisor's own bounded shutdown; execa must not SIGKILL it after 5 s.
      forceKillAfterDelay: false,
    });
    this.process = child;
    child.all?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
    });
    let exited = false;
    void child.then(() => (exited = true));
    await waitUntil('the supervisor to answer /health', async () => {
      if (exited) throw new Error(`supervisor exited:\n${this.output}`);
      const res = await fetch(`${this.base}/health`);
      if (!res.ok) return false;
      const health = (await res.json()) as { pid: number };
      return health.pid === child.pid;
    });
  }

  get pid(): number {
    return this.process!.pid!;
  }

  /** SIGTERM and wait for exit; resolves with the exit code. */
  async stop(): Promise<number | undefined> {
    const child = this.process;
    if (!child || !isAlive(child.pid!)) return undefined;
    child.kill('SIGTERM');
    const result = await child;
    return result.exitCode;
  }

  /** SIGKILL: a supervisor crash. Its controllers are left running. */
  async kill9(): Promise<void> {
    const child = this.process;
    if (!child) return;
    child.kill('SIGKILL');
    await child;
  }

  async cleanup(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([this.stop(), new Promise((resolve) => (timer = setTimeout(resolve, 12_000)))]);
    } finally {
      clearTimeout(timer);
      killAllMentioning(this.root);
      rmSync(this.root, { recursive: true, force: true });
    }
  }

  ctl(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {}): Promise<CliResult> {
    return runCtl(args, { env: { ...this.env, ...options.env }, cwd: options.cwd ?? this.root, input: options.input });
  }

  cityDir(name: string): string {
    return join(this.citiesDir, name);
  }

  /** Every matching event of `GET /v0/events` (all its pages), oldest first. */
  async events(query: { type?: string } = {}): Promise<WireTaggedEvent[]> {
    const pages: WireTaggedEvent[][] = [];
    let cursor: string | undefined;
    do {
      const { data, error } = await this.api.GET('/v0/events', {
        params: { query: { ...query, limit: 1000, ...(cursor ? { cursor } : {}) } },
      });
      if (error || !data) throw new Error(`GET /v0/events failed: ${JSON.stringify(error)}`);
      pages.push(data.items);
      cursor = data.next_cursor;
    } while (cursor);
    return pages.reverse().flat();
  }

  /** The terminal event of an asynchronous request, once recorded. */
  async terminalEvent(requestId: string, timeoutMs = WAIT_MS): Promise<WireTaggedEvent> {
    const types = ['request.result.city.create', 'request.result.city.unregister', 'request.failed'];
    return waitUntil(
      `the terminal event of ${requestId}`,
      async () => {
        for (const type of types) {
          const found = (await this.events({ type })).find(
            (e) => (e.payload as { request_id?: string }).request_id === requestId,
          );
          if (found) return found;
        }
        return undefined;
      },
      timeoutMs,
    );
  }

  /** Creates a city with a start command and waits until it runs; returns its 202 body. */
  async createCity(
    name: string,
    body: { start_command?: string; provider?: string } = { start_command: 'sleep 3600' },
  ): Promise<{ request_id: string; event_cursor: string }> {
    const { data, error, response } = await this.api.POST('/v0/city', {
      params: { header: CSRF },
      body: { dir: this.cityDir(name), ...body },
    });
    if (!data) throw new Error(`POST /v0/city ${response.status}: ${JSON.stringify(error)}`);
    const terminal = await this.terminalEvent(data.request_id);
    if (terminal.type !== 'request.result.city.create') {
      throw new Error(`create failed: ${JSON.stringify(terminal.payload)}`);
    }
    return data;
  }

  /** Reconciler passes finished since the supervisor started (`/health` `reconciler.ticks`). */
  async reconcilerTicks(): Promise<number> {
    const { data, error } = await this.api.GET('/health');
    if (!data) throw new Error(`GET /health failed: ${JSON.stringify(error)}`);
    return data.reconciler.ticks;
  }

  /**
   * Resolves once `count` reconciler passes have run from start to end after the call (a pass under way when
   * it is called does not count). To show that something does not happen however often the reconciler looks
   * (a second terminal event, a controller started for a stopped city), wait for the passes, then check.
   */
  async reconcilerPasses(count: number, timeoutMs = WAIT_MS): Promise<void> {
    // Passes never overlap: the first tick after `start` may end a pass begun before the call.
    const start = await this.reconcilerTicks();
    await waitUntil(
      `${count} reconciler passes after tick ${start}`,
      async () => (await this.reconcilerTicks()) > start + count,
      timeoutMs,
    );
  }

  async city(name: string) {
    const { data } = await this.api.GET('/v0/cities');
    return data?.items.find((c) => c.name === name);
  }
}

/**
 * For the describe it is called in: a supervisor of its own, started in a `before` and handed to `use` (which
 * may set up more: a city), and cleaned up in an `after` (which mocha runs even when the `before` failed).
 */
export function withSupervisor(
  use: (sup: TestSupervisor) => void | Promise<void>,
  options: SupervisorOptions = {},
): void {
  let sup: TestSupervisor | undefined;
  before(async function () {
    sup = await TestSupervisor.start(options);
    await use(sup);
  });
  after(async function () {
    await sup?.cleanup();
  });
}
