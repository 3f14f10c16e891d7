import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineCommand } from 'citty';
import { execa } from 'execa';
import type { SupervisorHealthOutputBody } from '../../shared/dto/health.js';
import { ctlEntryPath, ctlHome, homePaths, packageRoot } from '../../shared/paths.js';
import type { ProgramEntry, SupervisorRunOptions } from '../../shared/run-options.js';
import { apiArg, call, connect, NoAnswer } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { exited, stopLeftoverControllers } from '../_leftover-controllers.js';
import { supervisorPid } from '../_supervisor-pid.js';

const addressArgs = {
  host: { type: 'string', description: 'Address to bind (overrides [supervisor] bind)' },
  port: { type: 'string', description: 'Port to listen on (overrides [supervisor] port)' },
} as const;

function runOptions(args: { host?: string; port?: string }): SupervisorRunOptions {
  const options: SupervisorRunOptions = {};
  if (args.host !== undefined) {
    if (args.host.trim() === '') throw new CliError('--host must not be empty');
    options.host = args.host;
  }
  if (args.port !== undefined) {
    const port = Number(args.port);
    if (!/^\d+$/.test(args.port) || port > 65535) throw new CliError(`--port ${args.port}: not a port number`);
    options.port = port;
  }
  return options;
}

const run = leafCommand('supervisor run', {
  meta: { name: 'run', description: 'Run the supervisor in the foreground' },
  args: addressArgs,
  async run({ args }) {
    const options = runOptions(args);
    const entry = (await import(
      new URL('../../supervisor/main.js', import.meta.url).href
    )) as ProgramEntry<SupervisorRunOptions>;
    try {
      await entry.run(options);
    } catch (err) {
      throw new CliError((err as Error).message);
    }
  },
});

const start = leafCommand('supervisor start', {
  meta: { name: 'start', description: 'Start the supervisor in the background; returns once its API answers' },
  args: { ...addressArgs, timeout: { type: 'string', description: 'Seconds to wait for the API (default 15)' } },
  async run({ args }) {
    const options = runOptions(args);
    const timeoutSec = args.timeout === undefined ? 15 : Number(args.timeout);
    if (!Number.isFinite(timeoutSec) || timeoutSec <= 0)
      throw new CliError(`--timeout ${args.timeout}: not a number of seconds`);
    const running = supervisorPid();
    if (running) throw new CliError(`supervisor is already running (pid ${running})`);
    const paths = homePaths(ctlHome());
    mkdirSync(paths.home, { recursive: true, mode: 0o700 });
    const flags = [
      ...(options.host !== undefined ? ['--host', options.host] : []),
      ...(options.port !== undefined ? ['--port', String(options.port)] : []),
    ];
    // Output the supervisor writes before its logger is up (or a crash trace) lands in its log file.
    const out = openSync(paths.log, 'a') as 1; // execa's types list only fds 1–9; any open fd works
    const child = execa(process.execPath, [ctlEntryPath(), 'supervisor', 'run', ...flags], {
      detached: true,
      cleanup: false,
      reject: false,
      stdin: 'ignore',
      stdout: out,
      stderr: out,
      env: { ...process.env, CTL_LOG_STDERR: '0' },
      buffer: false,
    });
    closeSync(out);
    let exited = false;
    void child.then(() => (exited = true));
    child.unref();
    const host = options.host === undefined || options.host === '0.0.0.0' ? undefined : options.host;
    const api = connect(
      options.port !== undefined || host !== undefined
        ? `http://${host ?? '127.0.0.1'}:${options.port ?? 8372}`
        : undefined,
    );
    const deadline = Date.now() + timeoutSec * 1000;
    while (Date.now() < deadline) {
      if (exited) throw new CliError(`supervisor exited during startup: ${lastLogError(paths.log)}`);
      try {
        const res = await fetch(`${api.base}/health`, { signal: AbortSignal.timeout(1000) });
        if (res.ok) {
          const health = (await res.json()) as SupervisorHealthOutputBody;
          if (health.pid === child.pid) {
            process.stdout.write(`Supervisor started (pid ${health.pid}) at ${api.base}\n`);
            return;
          }
        }
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    throw new CliError(`supervisor did not answer at ${api.base} within ${timeoutSec}s; see ${paths.log}`);
  },
});

function lastLogError(logFile: string): string {
  try {
    const lines = readFileSync(logFile, 'utf8').trim().split('\n').reverse();
    for (const line of lines) {
      if (line.startsWith('ctl supervisor run: ')) return line.slice('ctl supervisor run: '.length);
      try {
        const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
        if ((entry.level ?? 0) >= 50) return entry.err?.message ?? entry.msg ?? line;
      } catch {
        // a plain text line
      }
    }
  } catch {
    // no log
  }
  return `see ${logFile}`;
}

/** How long a SIGKILLed supervisor may take to be gone (it cannot refuse; this only bounds the wait). */
const KILL_WAIT_MS = 5_000;

const stop = leafCommand('supervisor stop', {
  meta: { name: 'stop', description: 'Stop the supervisor and every city controller; returns once it has exited' },
  args: {
    timeout: { type: 'string', description: 'Seconds to wait for it to exit (default 15)' },
    force: {
      type: 'boolean',
      description: 'If it has not exited by then (frozen), kill it and the city controllers it leaves running',
    },
  },
  async run({ args }) {
    const timeoutSec = args.timeout === undefined ? 15 : Number(args.timeout);
    if (!Number.isFinite(timeoutSec) || timeoutSec <= 0)
      throw new CliError(`--timeout ${args.timeout}: not a number of seconds`);
    const pid = supervisorPid();
    if (!pid) throw new CliError('supervisor is not running');
    // The lock is held, so this pid file is the live supervisor's.
    process.kill(pid, 'SIGTERM');
    if (await exited(pid, timeoutSec * 1000)) {
      process.stdout.write('Supervisor stopped.\n');
      return;
    }
    if (!args.force) {
      throw new CliError(
        `supervisor (pid ${pid}) did not exit within ${timeoutSec}s; "ctl supervisor stop --force" kills it and its cities' controllers`,
      );
    }
    process.kill(pid, 'SIGKILL');
    if (!(await exited(pid, KILL_WAIT_MS))) {
      throw new CliError(`supervisor (pid ${pid}) was sent SIGKILL and is still there after ${KILL_WAIT_MS / 1000}s`);
    }
    // Killed, it could not stop its controllers (each in a process group of its own): they are still running.
    const controllers = await stopLeftoverControllers(ctlHome());
    process.stdout.write(
      `Supervisor (pid ${pid}) killed: it did not exit within ${timeoutSec}s of SIGTERM; ` +
        `${controllers} city controller${controllers === 1 ? '' : 's'} it left running stopped.\n`,
    );
  },
});

const status = leafCommand('supervisor status', {
  meta: { name: 'status', description: 'Is the supervisor up? Exit status 1 when it is not' },
  args: { ...apiArg, json: { type: 'boolean', description: 'Print the health document as JSON' } },
  async run({ args }) {
    const api = connect(args.api);
    let health: SupervisorHealthOutputBody;
    try {
      ({ data: health } = await call(api, api.client.GET('/health')));
    } catch (err) {
      // Something that connects and never answers is running, only not well: the time-out line says so.
      if (err instanceof NoAnswer) throw err;
      throw new CliError(`supervisor is not running at ${api.base}`);
    }
    if (args.json) {
      process.stdout.write(JSON.stringify(health) + '\n');
      return;
    }
    process.stdout.write(
      `Supervisor is running (pid ${health.pid}) at ${api.base}: ${health.cities_running}/${health.cities_total} cities running, ` +
        `home ${health.home}, up ${health.uptime_sec}s${health.status === 'ok' ? '' : ` — ${health.status}: reconciler last ran ${health.reconciler.last_tick_age_ms} ms ago`}\n`,
    );
  },
});

/** The systemd user unit that runs `ctl supervisor run`. */
export function systemdUnit(options: { node: string; entry: string; home: string; path: string }): string {
  return `[Unit]
Description=ctl supervisor (cities of AI coding agents)
Documentation=file://${join(packageRoot, 'docs', 'systemd.md')}
After=network.target

[Service]
Type=simple
ExecStart=${options.node} ${options.entry} supervisor run
Environment=CTL_HOME=${options.home}
Environment=PATH=${options.path}
Restart=on-failure
RestartSec=2
# The supervisor stops every controller within 10 s of SIGTERM; anything left after 15 s is killed.
TimeoutStopSec=15
# SIGTERM to the supervisor alone (it stops its controllers in order), then SIGKILL to the whole group.
KillMode=mixed
KillSignal=SIGTERM

[Install]
WantedBy=default.target
`;
}

const install = leafCommand('supervisor install', {
  meta: { name: 'install', description: 'Write a systemd user unit that runs the supervisor' },
  args: {
    force: { type: 'boolean', description: 'Overwrite an existing unit' },
    print: { type: 'boolean', description: 'Print the unit instead of writing it' },
  },
  async run({ args }) {
    const unit = systemdUnit({
      node: process.execPath,
      entry: ctlEntryPath(),
      home: ctlHome(),
      path: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    });
    if (args.print) {
      process.stdout.write(unit);
      return;
    }
    const configHome = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
    const file = join(configHome, 'systemd', 'user', 'ctl-supervisor.service');
    if (existsSync(file) && !args.force) throw new CliError(`${file} exists; pass --force to overwrite it`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, unit);
    process.stdout.write(
      `Wrote ${file}\nEnable it with:\n  systemctl --user daemon-reload\n  systemctl --user enable --now ctl-supervisor\n`,
    );
  },
});

export const supervisorCommand = defineCommand({
  meta: { name: 'supervisor', description: 'Run, start, stop and inspect the supervisor' },
  subCommands: { run, start, stop, status, install },
});
