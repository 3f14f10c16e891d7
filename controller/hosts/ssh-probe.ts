import { spawn } from 'node:child_process';
import type { HostConfig, HostProbe } from './host-config.js';
import type { HostConnector } from './host-connector.js';

/** The probe's ssh gives up connecting after this long (an address nothing answers at). */
const CONNECT_TIMEOUT_S = 10;
/** The whole probe (connect, log in, run) is ended after this long. */
const PROBE_LIMIT_MS = 20_000;

/** Said of a host that answered: ctl cannot run sessions there until the `SshHost` connector is in. */
export const NOT_RUNNABLE_YET =
  'it answered, but this ctl does not run sessions over OpenSSH yet (the host connection is not built): nothing is placed there';

/**
 * The check of a `[[host]]` until `SshHost` (a ControlMaster connection that runs sessions there) replaces it: one
 * bounded `ssh` run, with the host key checked (`StrictHostKeyChecking=yes`) and no prompt of any kind, that says
 * whether the host answers and has git and tmux. It never finds a host `up`, since nothing could run there yet;
 * what it finds wrong (an unreachable address, a host key that does not match, a key refused) is the host's
 * `last_error`.
 */
export class SshProbe implements HostConnector {
  private readonly children = new Set<ReturnType<typeof spawn>>();

  constructor(private readonly config: HostConfig) {}

  check(): Promise<HostProbe> {
    const started = performance.now();
    return new Promise((resolve) => {
      const child = spawn('ssh', sshArgs(this.config), { stdio: ['ignore', 'pipe', 'pipe'] });
      this.children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk.slice(0, 4096)));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk.slice(0, 4096)));
      const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_LIMIT_MS);
      const done = (probe: HostProbe) => {
        clearTimeout(timer);
        this.children.delete(child);
        resolve(probe);
      };
      child.on('error', (err) => done({ ok: false, git: false, tmux: false, error: `ssh: ${err.message}` }));
      child.on('close', (code, signal) => {
        const rtt_ms = Math.round(performance.now() - started);
        if (signal === 'SIGKILL') {
          done({ ok: false, git: false, tmux: false, error: `no answer in ${PROBE_LIMIT_MS / 1000} s` });
          return;
        }
        if (code !== 0) {
          done({ ok: false, git: false, tmux: false, error: lastLine(stderr) ?? `ssh exited ${code}` });
          return;
        }
        const found = (key: string) => new RegExp(`^${key}=\\S`, 'm').test(stdout);
        const git = found('git');
        const tmux = found('tmux');
        const error = git ? NOT_RUNNABLE_YET : 'git is not installed there (ctl needs it on every host)';
        done({ ok: false, rtt_ms, git, tmux, error });
      });
    });
  }

  close(): Promise<void> {
    for (const child of this.children) child.kill('SIGKILL');
    return Promise.resolve();
  }
}

/** ssh's arguments for one probe: every prompt off, the host key checked, bounded in time. */
export function sshArgs(config: HostConfig): string[] {
  const options = [
    'BatchMode=yes',
    'StrictHostKeyChecking=yes',
    'PasswordAuthentication=no',
    'KbdInteractiveAuthentication=no',
    `ConnectTimeout=${CONNECT_TIMEOUT_S}`,
    'ServerAliveInterval=5',
    'ServerAliveCountMax=2',
    ...(config.identity_file ? ['IdentitiesOnly=yes'] : []),
    ...(config.known_hosts ? [`UserKnownHostsFile=${config.known_hosts}`, 'GlobalKnownHostsFile=/dev/null'] : []),
  ];
  return [
    ...options.flatMap((o) => ['-o', o]),
    ...(config.identity_file ? ['-i', config.identity_file] : []),
    '-p',
    String(config.port),
    '-l',
    config.user,
    '--',
    config.hostname,
    `printf 'git=%s\\ntmux=%s\\n' "$(git --version 2>/dev/null)" "$(tmux -V 2>/dev/null)"`,
  ];
}

function lastLine(text: string): string | undefined {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Warning: Permanently added'))
    .at(-1);
}
