import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import type { SupervisorHealthOutputBody } from '../../shared/dto/health.js';
import { formatDuration } from '../../shared/duration.js';
import { ctlEntryPath, ctlHome, homePaths, packageRoot } from '../../shared/paths.js';
import type { ProgramEntry, SupervisorRunOptions } from '../../shared/run-options.js';
import { call, connect } from '../_api.js';
import { command, group } from '../_command.js';
import { CliError, NoAnswer } from '../_errors.js';
import { apiFlag, jsonFlag, timeout, timeoutFlag } from '../_flags.js';
import { exited, stopLeftoverControllers } from '../_leftover-controllers.js';
import { json, line, paint, progress, statusColour } from '../_output.js';
import { supervisorPid } from '../_supervisor-pid.js';
import { readSupervisorAddress } from '../../shared/supervisor-address.js';

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

const run = command({
  name: 'run',
  description: 'Run the supervisor in the foreground (logs: readable on a terminal, JSON lines otherwise)',
  examples: ['ctl supervisor run', 'ctl supervisor run --port 9000 2> supervisor.log'],
  args: addressArgs,
  async run({ args }) {
    const options = runOptions(args);
    // A literal path, so that the bundler (tools/build/bundle.mjs) follows it: the program is a chunk of ctl.
    const entry = (await import('../../supervisor/main.js')) as ProgramEntry<SupervisorRunOptions>;
    try {
      await entry.run(options);
    } catch (err) {
      throw new CliError((err as Error).message);
    }
  },
});

const start = command({
  name: 'start',
  description: 'Start the supervisor in the background; returns once its API answers',
  examples: ['ctl supervisor start', 'ctl supervisor start --port 9000 --json   # {"pid":…,"api":…,"log":…}'],
  args: { ...addressArgs, ...timeoutFlag('How long to wait for its API (default 15s)'), ...jsonFlag },
  async run({ args }) {
    await startInBackground(args);
  },
});

/** Starts `ctl supervisor run` detached and returns once its API answers (what start and restart do). */
async function startInBackground(args: {
  host?: string;
  port?: string;
  timeout?: string;
  json?: boolean;
}): Promise<void> {
  const options = runOptions(args);
  const waitMs = timeout(args.timeout, 15_000);
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
  child.nodeChildProcess.unref();
  const host =
    options.host === undefined || options.host === '0.0.0.0' || options.host === '::' ? undefined : options.host;
  const api = connect(
    options.port !== undefined || host !== undefined
      ? `http://${host ?? '127.0.0.1'}:${options.port ?? 8372}`
      : undefined,
  );
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    if (exited) throw new CliError(`supervisor exited during startup: ${lastLogError(paths.log)}`);
    try {
      const res = await fetch(`${api.base}/health`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) {
        const health = (await res.json()) as SupervisorHealthOutputBody;
        if (health.pid === child.pid) {
          if (args.json) return json({ pid: health.pid, api: api.base, log: paths.log });
          line(`Supervisor started (pid ${health.pid}) at ${api.base}`);
          return;
        }
      }
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new CliError(`supervisor did not answer at ${api.base} within ${formatDuration(waitMs)}; see ${paths.log}`);
}

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

const stop = command({
  name: 'stop',
  description: 'Stop the supervisor and every city controller; returns once it has exited',
  examples: [
    'ctl supervisor stop',
    'ctl supervisor stop --force --timeout 5s   # one that does not exit (frozen): kill it and its controllers',
    'ctl supervisor stop --json                 # {"pid":…,"killed":false,"controllers_stopped":0}',
  ],
  args: {
    ...timeoutFlag('How long to wait for it to exit (default 15s)'),
    force: {
      type: 'boolean',
      description: 'If it has not exited by then (frozen), kill it and the city controllers it leaves running',
    },
    ...jsonFlag,
  },
  async run({ args }) {
    const waitMs = timeout(args.timeout, 15_000);
    const pid = supervisorPid();
    if (!pid) throw new CliError('supervisor is not running');
    // The lock is held, so this pid file is the live supervisor's.
    process.kill(pid, 'SIGTERM');
    if (await exited(pid, waitMs)) {
      if (args.json) return json({ pid, killed: false, controllers_stopped: 0 });
      line('Supervisor stopped.');
      return;
    }
    if (!args.force) {
      throw new CliError(
        `supervisor (pid ${pid}) did not exit within ${formatDuration(waitMs)}; "ctl supervisor stop --force" kills it and its cities' controllers`,
      );
    }
    process.kill(pid, 'SIGKILL');
    if (!(await exited(pid, KILL_WAIT_MS))) {
      throw new CliError(`supervisor (pid ${pid}) was sent SIGKILL and is still there after ${KILL_WAIT_MS / 1000}s`);
    }
    // Killed, it could not stop its controllers (each in a process group of its own): they are still running.
    const controllers = await stopLeftoverControllers(ctlHome());
    if (args.json) return json({ pid, killed: true, controllers_stopped: controllers });
    line(
      `Supervisor (pid ${pid}) killed: it did not exit within ${formatDuration(waitMs)} of SIGTERM; ` +
        `${controllers} city controller${controllers === 1 ? '' : 's'} it left running stopped.`,
    );
  },
});

const restart = command({
  name: 'restart',
  description: 'Restart the supervisor in place: its cities, their controllers and sessions keep running',
  examples: ['ctl supervisor restart', 'ctl supervisor restart --json   # {"pid":…,"api":…,"log":…}'],
  args: { ...addressArgs, ...timeoutFlag('How long to wait for each step (default 15s)'), ...jsonFlag },
  async run({ args }) {
    const waitMs = timeout(args.timeout, 15_000);
    const pid = supervisorPid();
    if (!pid) throw new CliError('supervisor is not running ("ctl supervisor start" starts it)');
    // The next one listens where this one does (its `--host`/`--port` included) unless told otherwise.
    const address = readSupervisorAddress(homePaths(ctlHome()).address);
    const where =
      address?.pid === pid
        ? { host: args.host ?? address.bind, port: args.port ?? String(address.port) }
        : { host: args.host, port: args.port };
    // SIGHUP: it exits leaving every controller running; the new one adopts them.
    process.kill(pid, 'SIGHUP');
    if (!(await exited(pid, waitMs))) {
      throw new CliError(`supervisor (pid ${pid}) did not exit within ${formatDuration(waitMs)} of SIGHUP`);
    }
    progress(`Supervisor (pid ${pid}) exited; its cities kept running`);
    await startInBackground({ ...args, ...where });
  },
});

const status = command({
  name: 'status',
  description: 'Is the supervisor up? Exit status 1 when it is not',
  examples: ['ctl supervisor status', 'ctl supervisor status --json   # the /health document'],
  args: { ...jsonFlag, ...apiFlag },
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
    if (args.json) return json(health);
    const state =
      health.status === 'ok'
        ? ''
        : ` — ${paint(health.status, statusColour(health.status))}: reconciler last ran ${health.reconciler.last_tick_age_ms} ms ago`;
    line(
      `Supervisor is running (pid ${health.pid}) at ${api.base}: ${health.cities_running}/${health.cities_total} cities running, ` +
        `home ${health.home}, up ${health.uptime_sec}s${state}`,
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
# \`systemctl reload\` restarts the supervisor in place: on SIGHUP it exits leaving every city's controller (and
# its sessions) running, and systemd starts it again to adopt them.
ExecReload=/bin/kill -HUP $MAINPID
Restart=always
RestartSec=1
# The supervisor stops every controller within 10 s of SIGTERM (\`systemctl stop\`); it is killed after 15 s.
TimeoutStopSec=15
# Signals go to the supervisor alone: it stops its controllers itself on SIGTERM, and leaves them running on
# SIGHUP (which mixed or control-group would defeat by killing the rest of the unit once it exits).
KillMode=process
KillSignal=SIGTERM

[Install]
WantedBy=default.target
`;
}

const install = command({
  name: 'install',
  description: 'Write a systemd user unit that runs the supervisor',
  examples: [
    'ctl supervisor install && systemctl --user enable --now ctl-supervisor',
    'ctl supervisor install --print   # the unit, written nowhere',
  ],
  args: {
    force: { type: 'boolean', description: 'Overwrite an existing unit' },
    print: { type: 'boolean', description: 'Print the unit instead of writing it' },
    ...jsonFlag,
  },
  async run({ args }) {
    const unit = systemdUnit({
      node: process.execPath,
      entry: ctlEntryPath(),
      home: ctlHome(),
      path: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    });
    if (args.print) {
      if (args.json) return json({ unit });
      process.stdout.write(unit);
      return;
    }
    const configHome = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
    const file = join(configHome, 'systemd', 'user', 'ctl-supervisor.service');
    if (existsSync(file) && !args.force) throw new CliError(`${file} exists; pass --force to overwrite it`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, unit);
    if (args.json) return json({ path: file, unit });
    line(`Wrote ${file}`);
    line('Enable it with:');
    line('  systemctl --user daemon-reload');
    line('  systemctl --user enable --now ctl-supervisor');
  },
});

export const supervisorCommand = group({
  name: 'supervisor',
  description: 'Run, start, stop and inspect the supervisor',
  examples: ['ctl supervisor start', 'ctl supervisor status', 'ctl supervisor stop'],
  commands: { run, start, stop, restart, status, install },
});
