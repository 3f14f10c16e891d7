import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { releaseGroup, tetherGroup } from '../process-tether.js';
import type { HostConfig } from './host-config.js';
import type { HostCommandResult } from './host.js';
import { CONNECT_TIMEOUT_S, shellQuote, sshError, sshOptions } from './ssh-command.js';

/** Output a short command may leave before it is cut off: a host command is a probe, not a transfer. */
const RUN_OUTPUT_LIMIT = 4 * 1024 * 1024;
/** Past ssh's own connect bound, how long authentication and the first reply may take. */
const OPEN_BOUND_MS = (CONNECT_TIMEOUT_S + 10) * 1000;
/** What the master's own session prints once the host has let us in. */
const READY = 'ctl-ready';

/**
 * One multiplexed OpenSSH connection to a host (a ControlMaster on a private socket): every channel a host needs —
 * a program, the watchdog, a short command, a copy — is a session of it, so only the first pays the handshake.
 *
 * The master is this controller's child, tethered like every program (it ends when the controller does, which closes
 * the connection and so every channel on the host), and runs a session of its own that holds it open. A master that
 * has ended (a partition ends it by its keep-alive; a host crash at once) is seen by its exit, and the next use opens
 * a new one; a socket left by a master that died with an earlier controller is removed before a new one listens.
 * Channels never start a master of their own, and every one is bounded, so nothing waits on a dead connection.
 */
export class SshConnection {
  private master: ChildProcess | undefined;
  private opening: Promise<void> | undefined;
  /** How long the last open took (the first handshake). */
  openMs: number | undefined;

  constructor(
    readonly config: HostConfig,
    readonly controlPath: string,
    /** Called once each time an open master ends: `why` for a person. */
    private readonly ended: (why: string) => void = () => undefined,
  ) {}

  get isOpen(): boolean {
    return this.master !== undefined && this.opening === undefined;
  }

  /** Opens the master unless one is open; rejects with a reason for a person when the host cannot be reached. */
  open(): Promise<void> {
    if (this.master && !this.opening) return Promise.resolve();
    this.opening ??= this._open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** Starts `line` on the host's shell as a channel of the connection (its stdio ours, piped). */
  channel(line: string, what: string): ChildProcess {
    const child = spawn('ssh', [...this._channelArgs(), '--', line], { detached: true, stdio: 'pipe' });
    child.once('spawn', () => tetherGroup(child.pid!, `ssh ${this.config.name}: ${what}`));
    child.once('close', () => child.pid !== undefined && releaseGroup(child.pid));
    child.stdin?.on('error', () => undefined);
    return child;
  }

  /**
   * Runs `line` on the host's shell, bounded there too (`timeout`: a plain `ssh host prog` leaves `prog` running
   * when the ssh on this side is killed), and resolves with how it ended, never rejecting for it.
   */
  async run(line: string, options: { input?: string | Readable; timeoutMs: number }): Promise<HostCommandResult> {
    const seconds = Math.max(1, Math.ceil(options.timeoutMs / 1000));
    const bounded = `timeout -k 1 ${seconds} sh -c ${shellQuote(line)}`;
    return new Promise((resolve) => {
      const child = spawn('ssh', [...this._channelArgs(), '--', bounded], { detached: true, stdio: 'pipe' });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let size = 0;
      let timedOut = false;
      const collect = (into: Buffer[]) => (chunk: Buffer) => {
        size += chunk.length;
        if (size <= RUN_OUTPUT_LIMIT) into.push(chunk);
      };
      child.stdout.on('data', collect(out));
      child.stderr.on('data', collect(err));
      // The host's own timeout ends the command; this one ends an ssh that cannot reach the host in time.
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone
        }
      }, options.timeoutMs + 3000);
      child.once('error', (e) => {
        clearTimeout(timer);
        resolve({ code: null, stdout: '', stderr: `cannot run ssh: ${e.message}`, timedOut: false });
      });
      child.once('close', (code) => {
        clearTimeout(timer);
        const stderr = Buffer.concat(err).toString('utf8');
        // `timeout` says 124 when it had to end the command.
        const hostTimedOut = code === 124 || code === 137;
        // As execa gives a local command's: without the one final newline.
        resolve({
          code: timedOut || hostTimedOut ? null : code,
          stdout: Buffer.concat(out)
            .toString('utf8')
            .replace(/\r?\n$/, ''),
          stderr: code === 255 && !timedOut ? sshError(stderr, code) : stderr.replace(/\r?\n$/, ''),
          timedOut: timedOut || hostTimedOut,
        });
      });
      child.stdin.on('error', () => undefined);
      if (typeof options.input === 'object') options.input.pipe(child.stdin);
      else child.stdin.end(options.input ?? '');
    });
  }

  /** Asks the master to forward `remoteSocket` on the host to `localSocket` here; rejects with ssh's reason. */
  async forwardRemote(remoteSocket: string, localSocket: string): Promise<void> {
    const { execa } = await import('execa');
    const result = await execa(
      'ssh',
      [
        ...sshOptions(this.config, this.controlPath),
        '-O',
        'forward',
        '-R',
        `${remoteSocket}:${localSocket}`,
        this.config.hostname,
      ],
      { reject: false, timeout: OPEN_BOUND_MS, stdin: 'ignore' },
    );
    if (result.exitCode !== 0) {
      throw new Error(
        `cannot open the tunnel to the city's API on the host: ${String(result.stderr).trim() || result.message}`,
      );
    }
  }

  /** Ends the master (and with it every channel); the next use opens a new one. */
  async close(): Promise<void> {
    const master = this.master;
    if (!master) return;
    this.master = undefined;
    const gone = new Promise<void>((resolve) => {
      if (master.exitCode !== null || master.signalCode !== null) resolve();
      else master.once('close', () => resolve());
    });
    master.stdin?.end();
    const timer = setTimeout(() => master.kill('SIGKILL'), 2000);
    master.kill('SIGTERM');
    await gone;
    clearTimeout(timer);
    rmSync(this.controlPath, { force: true });
  }

  private async _open(): Promise<void> {
    mkdirSync(dirname(this.controlPath), { recursive: true, mode: 0o700 });
    // A socket here belongs to a master that died with an earlier controller: ssh would try it first.
    rmSync(this.controlPath, { force: true });
    const started = performance.now();
    const master = spawn(
      'ssh',
      [
        ...sshOptions(this.config, this.controlPath),
        '-o',
        'ControlMaster=yes',
        '-o',
        'ControlPersist=no',
        '-T',
        this.config.hostname,
        '--',
        // Holds the connection open for as long as its stdin, ours, stays open.
        `echo ${READY}; exec cat >/dev/null`,
      ],
      { detached: true, stdio: 'pipe' },
    );
    let stderr = '';
    master.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-8192)));
    master.stdin.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const fail = (why: string) => {
        clearTimeout(timer);
        try {
          process.kill(-master.pid!, 'SIGKILL');
        } catch {
          // gone
        }
        reject(new Error(why));
      };
      const timer = setTimeout(
        () => fail(`no answer from ${this.config.hostname}:${this.config.port} in ${OPEN_BOUND_MS / 1000} s`),
        OPEN_BOUND_MS,
      );
      master.once('error', (e) => fail(`cannot run ssh: ${e.message}`));
      master.once('spawn', () => tetherGroup(master.pid!, `ssh ${this.config.name}: connection`));
      master.stdout.setEncoding('utf8').on('data', function ready(chunk: string) {
        out += chunk;
        if (!out.includes(READY)) return;
        master.stdout.off('data', ready);
        clearTimeout(timer);
        resolve();
      });
      master.once('close', (code) => {
        if (master.pid !== undefined) releaseGroup(master.pid);
        if (!out.includes(READY)) fail(sshError(stderr, code));
      });
    });
    this.openMs = performance.now() - started;
    this.master = master;
    master.once('close', (code) => {
      if (this.master !== master) return;
      this.master = undefined;
      rmSync(this.controlPath, { force: true });
      this.ended(stderr.trim() ? sshError(stderr, code) : `the connection to ${this.config.name} ended`);
    });
  }

  /** A channel's ssh: the master's socket, never a master of its own; `-T`: bytes through unchanged. */
  private _channelArgs(): string[] {
    return [...sshOptions(this.config, this.controlPath), '-o', 'ControlMaster=no', '-T', this.config.hostname];
  }
}
