import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { join, posix } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { LAUNCH_MARK, type LaunchSpec } from './on-host/launch-protocol.js';
import type { HostConfig, HostProbe } from './host-config.js';
import type { Host, HostCommandResult, HostGitRepository, HostProcess, HostRunOptions, HostSpawnSpec } from './host.js';
import { installOnHost, type HostInstall } from './host-install.js';
import { shellLine, shellQuote, sshOptions } from './ssh-command.js';
import { SshConnection } from './ssh-connection.js';

/** A host's watchdog ends what runs there once it has heard nothing for this long (a partition, a stalled link). */
export const WATCHDOG_DEADLINE_MS = 8_000;
/** How often the controller tells the watchdog it is there: several beats fit in one deadline. */
const HEARTBEAT_MS = 1_000;
/** Past this, a program whose launcher has not said its pid is not starting (a stalled connection). */
const SPAWN_BOUND_MS = 30_000;
/** A short command on the host: a signal, a liveness check. */
const SHORT_MS = 10_000;
/** sun_path is 108 bytes; ssh adds a 17-character suffix while it binds. */
const MAX_CONTROL_PATH = 100 - 17;

export interface SshHostOptions {
  /** Where what goes wrong that nobody waits on is said (a signal the host could not be reached for). */
  logger?: Logger;
  cityName: string;
  /** The city's directory on this machine (it names the city's own directory on the host). */
  cityRoot: string;
  /** The city's `.ctl/` (the connection's socket is under it). */
  runtimeDir: string;
  /** Called when a prepared host stops answering (its connection or its watchdog ended): `why` for a person. */
  onLost?: (why: string) => void;
  /**
   * Opens the city's gateway for this host and resolves with its socket here: the reverse tunnel of the host's
   * connection ends in it, so that a session's `ctl` there reaches its city (host-gateway.ts). None: no tunnel.
   */
  gateway?: () => Promise<string>;
  watchdogDeadlineMs?: number;
}

/** What a prepared host is: where ctl is there, and the channels that keep its programs tethered. */
interface Prepared {
  home: string;
  git: string | undefined;
  tmux: string | undefined;
  install: HostInstall;
  /** The city's own directory on the host: its runs, its sessions' files, its tmux socket. */
  cityDir: string;
  runDir: string;
  watchdog: ChildProcess;
  heartbeat: NodeJS.Timeout;
  pings: Map<string, () => void>;
}

/**
 * A host reached over OpenSSH (`[[host]]` in city.toml): every program runs through `on-host/launch.js` on a
 * channel of the host's one connection (`SshConnection`), with the host's login environment plus exactly the
 * variables it is given; the connection's watchdog channel (`on-host/watchdog.js`) ends every one of them when the
 * controller stops answering, however it ended. `prepare` connects, ships ctl's Node and tools when the host lacks
 * this version (`installOnHost`), reaps what a dead controller of this city left there, and starts the watchdog;
 * every operation prepares first, so a host that comes back is used again.
 */
export class SshHost implements Host {
  readonly remote = true;
  readonly fenceMs: number;
  private lostWhy: string | undefined;
  readonly name: string;
  private readonly conn: SshConnection;
  private prepared: Prepared | undefined;
  private preparing: Promise<Prepared> | undefined;
  private closed = false;

  constructor(
    readonly config: HostConfig,
    private readonly options: SshHostOptions,
  ) {
    this.name = config.name;
    // Its deadline, the watchdog's grace between SIGTERM and SIGKILL, and a beat of slack either side.
    this.fenceMs = (options.watchdogDeadlineMs ?? WATCHDOG_DEADLINE_MS) + 2000 + 2 * HEARTBEAT_MS;
    this.conn = new SshConnection(config, controlPathOf(options.runtimeDir, config.name), (why) => this._lost(why));
  }

  lost(): string | undefined {
    return this.lostWhy;
  }

  /** Connects and readies the host (idempotent); rejects with a reason for a person. */
  async prepare(): Promise<void> {
    await this._prepared();
  }

  /** Whether the host answers and has what ctl needs, with its round trip and versions. */
  async check(): Promise<HostProbe> {
    let ready: Prepared;
    try {
      ready = await this._prepared();
    } catch (err) {
      return { ok: false, git: false, tmux: false, error: (err as Error).message };
    }
    let rtt: number;
    try {
      rtt = await this._ping(ready);
    } catch (err) {
      return { ok: false, git: ready.git !== undefined, tmux: ready.tmux !== undefined, error: (err as Error).message };
    }
    const probe: HostProbe = {
      ok: ready.git !== undefined,
      rtt_ms: Math.round(rtt * 10) / 10,
      node_version: ready.install.nodeVersion,
      ctl_version: ready.install.ctlVersion,
      git: ready.git !== undefined,
      tmux: ready.tmux !== undefined,
    };
    if (!probe.ok) probe.error = 'git is not installed on the host (ctl needs it there)';
    return probe;
  }

  async spawn(spec: HostSpawnSpec): Promise<HostProcess> {
    const ready = await this._prepared();
    const launch: LaunchSpec = {
      argv: spec.argv,
      cwd: spec.cwd,
      env: Object.fromEntries(Object.entries(spec.env).map(([name, value]) => [name, value ?? null])),
      runDir: ready.runDir,
      what: spec.what,
    };
    const arg = Buffer.from(JSON.stringify(launch)).toString('base64url');
    const ssh = this.conn.channel(
      `exec ${shellLine([ready.install.node, posix.join(ready.install.tools, 'launch.js'), arg])}`,
      spec.what,
    );
    return new Promise((resolve, reject) => {
      const stderr = new PassThrough();
      let pid: number | undefined;
      let ended: { code: number | null; signal: string | null; lost?: string } | undefined;
      let sshSaid = '';
      let partial = '';
      const timer = setTimeout(() => {
        try {
          process.kill(-ssh.pid!, 'SIGKILL');
        } catch {
          // gone
        }
        reject(
          new Error(`cannot start ${spec.argv.join(' ')} on ${this.name}: no answer in ${SPAWN_BOUND_MS / 1000} s`),
        );
      }, SPAWN_BOUND_MS);
      ssh.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot run ssh: ${err.message}`));
      });
      // The launcher's marked lines are ours; the rest is the program's stderr, passed on line by line.
      ssh.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          if (!line.startsWith(LAUNCH_MARK)) {
            if (pid === undefined) sshSaid += `${line}\n`;
            else stderr.write(`${line}\n`);
            continue;
          }
          const said = line.slice(LAUNCH_MARK.length);
          if (said.startsWith('pid ')) {
            pid = Number(said.slice(4));
            clearTimeout(timer);
            resolve(this._process(pid, ssh, stderr, exited));
          } else if (said.startsWith('exit ')) {
            ended = JSON.parse(said.slice(5)) as { code: number | null; signal: string | null };
          } else if (said.startsWith('failed ')) {
            clearTimeout(timer);
            const why = JSON.parse(said.slice(7)) as string;
            reject(new Error(`cannot start ${spec.argv.join(' ')} on ${this.name}: ${why}`));
          }
        }
      });
      const exited = new Promise<{ code: number | null; signal: string | null; lost?: string }>((done) => {
        ssh.once('close', (code) => {
          if (partial && pid !== undefined) stderr.write(partial);
          stderr.end();
          clearTimeout(timer);
          if (pid === undefined) {
            const why = sshSaid.trim() || `ssh exited ${code ?? 'on a signal'}`;
            reject(new Error(`cannot start ${spec.argv.join(' ')} on ${this.name}: ${why}`));
          }
          // Without the launcher's word the connection went: the program's end is the watchdog's to make.
          done(ended ?? { code: null, signal: 'SIGHUP', lost: this.lostWhy ?? `the connection to ${this.name} ended` });
        });
      });
    });
  }

  async stage(fromDir: string, files: string[], toDir: string): Promise<void> {
    await this._prepared();
    const tar = spawn('tar', ['-C', fromDir, '-cf', '-', '--', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
    let tarError = '';
    tar.stderr.setEncoding('utf8').on('data', (chunk: string) => (tarError += chunk));
    const to = shellQuote(toDir);
    // No files: only the directory (tar refuses an empty archive).
    const result = await this.conn.run(`mkdir -p -m 700 ${to}${files.length ? ` && tar -xpf - -C ${to}` : ''}`, {
      input: files.length ? tar.stdout : '',
      timeoutMs: 60_000,
    });
    if (files.length === 0) tar.kill();
    if (result.code !== 0) {
      throw new Error(`cannot stage files in ${toDir} on ${this.name}: ${(tarError || result.stderr).trim()}`);
    }
  }

  async tether(pid: number, what: string): Promise<void> {
    const ready = await this._prepared();
    ready.watchdog.stdin!.write(`+${pid} ${what.replaceAll('\n', ' ')}\n`);
  }

  release(pid: number): void {
    this.prepared?.watchdog.stdin!.write(`-${pid}\n`);
  }

  async signalGroup(pid: number, signal: NodeJS.Signals): Promise<void> {
    await this._prepared();
    // dash's kill takes no `--`: a negative pid after the signal is the group.
    await this.conn.run(`kill -${signal.replace(/^SIG/, '')} -${pid} 2>/dev/null; true`, { timeoutMs: SHORT_MS });
  }

  async isAlive(pid: number): Promise<boolean> {
    await this._prepared();
    const result = await this.conn.run(`cat /proc/${pid}/stat 2>/dev/null; true`, { timeoutMs: SHORT_MS });
    const stat = result.stdout;
    const close = stat.lastIndexOf(')');
    return close > 0 && stat[close + 2] !== 'Z';
  }

  async reap(): Promise<number[]> {
    const ready = await this._prepared();
    return this._reap(ready);
  }

  async run(argv: string[], options: HostRunOptions): Promise<HostCommandResult> {
    const ready = await this._prepared();
    const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
    const line = `cd ${shellQuote(options.cwd ?? ready.home)} && exec ${shellLine(env.length ? ['env', ...env, ...argv] : argv)}`;
    return this.conn.run(line, { input: options.input, timeoutMs: options.timeoutMs });
  }

  terminal(argv: string[]): string[] {
    return [
      'ssh',
      ...sshOptions(this.config, this.conn.controlPath, true),
      '-tt',
      this.config.hostname,
      '--',
      shellLine(argv),
    ];
  }

  /** The host's `ctl` (ctl's shipped CLI on its shipped Node), once prepared. */
  get ctl(): string {
    return this._ready().install.ctl;
  }

  apiSocket(): string | undefined {
    return this.options.gateway ? posix.join(this._ready().cityDir, 'api.sock') : undefined;
  }

  ctlBin(): string {
    return posix.dirname(this.ctl);
  }

  sessionDir(sessionId: string): string {
    return posix.join(this._ready().cityDir, 'sessions', sessionId);
  }

  tmuxSocket(): string {
    return posix.join(this._ready().cityDir, 'tmux.sock');
  }

  gitRepository(name: string): HostGitRepository {
    const path = posix.join(this._ready().cityDir, 'repos', `${name}.git`);
    const at = this.config.hostname.includes(':') ? `[${this.config.hostname}]` : this.config.hostname;
    // A channel of the connection (never a master of its own): git's pack goes over the host's one connection.
    const ssh = shellLine(['ssh', ...sshOptions(this.config, this.conn.controlPath), '-o', 'ControlMaster=no']);
    return { path, url: `ssh://${at}${path}`, env: { GIT_SSH_COMMAND: ssh } };
  }

  /** Ends the watchdog channel (which ends every program of this run on the host) and the connection. */
  async close(): Promise<void> {
    this.closed = true;
    const ready = this.prepared;
    this.prepared = undefined;
    if (ready) {
      clearInterval(ready.heartbeat);
      const gone = new Promise<void>((resolve) => ready.watchdog.once('close', () => resolve()));
      ready.watchdog.stdin!.end();
      // The watchdog ends the run's groups (a grace of 2 s) before it exits; the connection goes after it.
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
    }
    await this.conn.close();
  }

  private _ready(): Prepared {
    if (!this.prepared) throw new Error(`host ${this.name} is not connected`);
    return this.prepared;
  }

  private _prepared(): Promise<Prepared> {
    if (this.prepared) return Promise.resolve(this.prepared);
    if (this.closed) return Promise.reject(new Error(`host ${this.name} is closed`));
    this.preparing ??= this._prepare().finally(() => (this.preparing = undefined));
    return this.preparing;
  }

  private async _prepare(): Promise<Prepared> {
    await this.conn.open();
    const facts = await this.conn.run(
      'printf "%s\\n" "$HOME" "$(uname -m)"; git --version 2>/dev/null || echo; tmux -V 2>/dev/null || echo',
      { timeoutMs: SHORT_MS },
    );
    if (facts.code !== 0) throw new Error(`the host did not answer a first command: ${facts.stderr.trim()}`);
    const [home = '', arch = '', git = '', tmux = ''] = facts.stdout.split('\n');
    const root = resolveWorkRoot(this.config.work_root, home);
    const install = await installOnHost(this.conn, root, arch);
    const cityDir = posix.join(root, 'cities', cityKey(this.options.cityName, this.options.cityRoot));
    const ready = {
      home,
      git: git || undefined,
      tmux: tmux || undefined,
      install,
      cityDir,
      runDir: posix.join(cityDir, 'run', `${Date.now().toString(36)}-${process.pid}`),
    };
    await this._reap(ready);
    const pings = new Map<string, () => void>();
    const watchdog = await this._watch(ready, pings);
    const heartbeat = setInterval(() => watchdog.stdin!.write('.\n'), HEARTBEAT_MS).unref();
    if (this.options.gateway) await this._tunnel(cityDir, await this.options.gateway());
    this.prepared = { ...ready, watchdog, heartbeat, pings };
    this.lostWhy = undefined;
    return this.prepared;
  }

  /**
   * The reverse tunnel from `<city dir>/api.sock` on the host to the gateway's socket here, over the host's
   * connection: sshd makes the socket with its StreamLocalBindMask (0600 by default), and one left by an earlier
   * connection is removed first (sshd would refuse to bind over it).
   */
  private async _tunnel(cityDir: string, gatewaySocket: string): Promise<void> {
    const remote = posix.join(cityDir, 'api.sock');
    await this.conn.run(`rm -f ${shellQuote(remote)}`, { timeoutMs: SHORT_MS });
    await this.conn.forwardRemote(remote, gatewaySocket);
  }

  /** Starts the run's watchdog and resolves once it watches. */
  private _watch(ready: Pick<Prepared, 'install' | 'runDir' | 'cityDir'>, pings: Prepared['pings']) {
    const deadline = this.options.watchdogDeadlineMs ?? WATCHDOG_DEADLINE_MS;
    const watchdog = this.conn.channel(
      `exec ${shellLine([
        ready.install.node,
        posix.join(ready.install.tools, 'watchdog.js'),
        'watch',
        ready.runDir,
        String(deadline),
        posix.join(ready.cityDir, 'tmux.sock'),
      ])}`,
      'watchdog',
    );
    return new Promise<ChildProcess>((resolve, reject) => {
      let watching = false;
      let said = '';
      let buffer = '';
      watchdog.stderr!.setEncoding('utf8').on('data', (chunk: string) => (said = (said + chunk).slice(-4096)));
      watchdog.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (buffer + chunk).split('\n');
        buffer = lines.pop()!;
        for (const line of lines) {
          if (line === 'watching' && !watching) {
            watching = true;
            resolve(watchdog);
          } else if (line.startsWith('!')) {
            pings.get(line.slice(1))?.();
          }
        }
      });
      watchdog.once('close', (code) => {
        if (!watching) reject(new Error(`the host's watchdog did not start: ${said.trim() || `exit ${code}`}`));
        else if (this.prepared?.watchdog === watchdog) this._lost(said.trim() || `the watchdog on ${this.name} ended`);
      });
    });
  }

  private async _reap(ready: Pick<Prepared, 'install' | 'cityDir'>): Promise<number[]> {
    const result = await this.conn.run(
      shellLine([ready.install.node, posix.join(ready.install.tools, 'watchdog.js'), 'reap', ready.cityDir]),
      { timeoutMs: 30_000 },
    );
    if (result.code !== 0)
      throw new Error(`cannot reap what an earlier controller left on the host: ${result.stderr.trim()}`);
    return JSON.parse(result.stdout.trim() || '[]') as number[];
  }

  /** The round trip of one line over the watchdog's channel, in ms; rejects when no answer comes in time. */
  private _ping(ready: Prepared): Promise<number> {
    const token = Math.random().toString(36).slice(2);
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        ready.pings.delete(token);
        reject(new Error(`no answer from the host's watchdog in ${SHORT_MS / 1000} s`));
      }, SHORT_MS);
      ready.pings.set(token, () => {
        clearTimeout(timer);
        ready.pings.delete(token);
        resolve(performance.now() - started);
      });
      ready.watchdog.stdin!.write(`?${token}\n`);
    });
  }

  private _process(pid: number, ssh: ChildProcess, stderr: PassThrough, exited: HostProcess['exited']): HostProcess {
    let running = true;
    void exited.then(() => (running = false));
    return {
      pid,
      stdin: ssh.stdin!,
      stdout: ssh.stdout!,
      stderr,
      exited,
      signal: (signal) => {
        // After the exit only the group's stragglers are left (the launcher ended them already). A signal the host
        // cannot be reached for is not lost: its watchdog ends the group at its deadline, and the host is lost.
        if (running || signal === 'SIGKILL')
          void this.signalGroup(pid, signal).catch((err: unknown) =>
            this.options.logger?.info({ err, host: this.name, pid, signal }, 'could not signal a group on its host'),
          );
      },
    };
  }

  private _lost(why: string): void {
    const ready = this.prepared;
    if (!ready) return;
    this.prepared = undefined;
    this.lostWhy = why;
    clearInterval(ready.heartbeat);
    ready.watchdog.kill('SIGKILL');
    if (!this.closed) this.options.onLost?.(why);
  }
}

/** The host's own directory of a city: its name, and a digest of where it lives here (two cities of one name). */
function cityKey(cityName: string, cityRoot: string): string {
  const digest = createHash('sha256').update(`${hostname()}\n${cityRoot}`).digest('hex').slice(0, 12);
  return `${cityName.replace(/[^\w.-]/g, '_')}-${digest}`;
}

/** `work_root` with `~` read as the host's home. */
function resolveWorkRoot(workRoot: string, home: string): string {
  const path = workRoot === '~' ? home : workRoot.startsWith('~/') ? posix.join(home, workRoot.slice(2)) : workRoot;
  if (!posix.isAbsolute(path))
    throw new Error(`work_root ${workRoot} is not an absolute path on the host (HOME is ${home || 'unset'})`);
  return path;
}

/** The connection's socket: under the city's `.ctl/`, or a short per-host path where that would be too long. */
function controlPathOf(runtimeDir: string, name: string): string {
  const path = join(runtimeDir, 'hosts', name, 'ssh.sock');
  if (Buffer.byteLength(path) <= MAX_CONTROL_PATH) return path;
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 16);
  return join('/tmp', `ctl-${process.getuid?.() ?? 0}`, `${digest}.ssh`);
}
