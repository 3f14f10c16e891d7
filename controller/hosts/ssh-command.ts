import type { HostConfig } from './host-config.js';

/** How long ssh waits for a host to answer before it says so (a host that is down never hangs anything). */
export const CONNECT_TIMEOUT_S = 5;
/** The master's keep-alive: a partition ends it after ALIVE_INTERVAL_S × ALIVE_COUNT seconds of silence. */
export const ALIVE_INTERVAL_S = 2;
export const ALIVE_COUNT = 3;

/** One word for the host's POSIX shell, whatever it holds. */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** A command line for the host's shell, each word quoted. */
export function shellLine(argv: string[]): string {
  return argv.map(shellQuote).join(' ');
}

/**
 * The options of every ssh this controller runs to `host`: the host key always checked (against its
 * `known_hosts`, else the user's own), never a prompt, a bounded connect, nothing forwarded but what we ask for.
 * The person's own ssh configuration is read (a `ProxyJump` there is honoured); what we depend on is set here,
 * and options given on the command line win over it. `terminal`: for a person's own terminal there (`-tt`).
 */
export function sshOptions(host: HostConfig, controlPath: string, terminal = false): string[] {
  const options: Record<string, string> = {
    BatchMode: 'yes',
    StrictHostKeyChecking: 'yes',
    ConnectTimeout: String(CONNECT_TIMEOUT_S),
    ServerAliveInterval: String(ALIVE_INTERVAL_S),
    ServerAliveCountMax: String(ALIVE_COUNT),
    ControlPath: controlPath,
    ForwardAgent: 'no',
    ForwardX11: 'no',
    PermitLocalCommand: 'no',
    LogLevel: 'ERROR',
  };
  // A channel carries bytes unchanged (a terminal would turn \n into \r\n and echo what it is sent).
  if (!terminal) options.RequestTTY = 'no';
  if (host.known_hosts !== undefined) options.UserKnownHostsFile = host.known_hosts;
  if (host.identity_file !== undefined) options.IdentitiesOnly = 'yes';
  const args = Object.entries(options).flatMap(([name, value]) => ['-o', `${name}=${value}`]);
  if (host.identity_file !== undefined) args.push('-i', host.identity_file);
  args.push('-p', String(host.port), '-l', host.user);
  return args;
}

/** The first line of what ssh said on stderr that is about the connection, for a host's `last_error`. */
export function sshError(stderr: string, code: number | null): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('Warning: Permanently added'));
  const line = lines.find((l) => /host key|Permission denied|Connection|timed out|resolve|No route|refused/i.test(l));
  if (lines.some((l) => l.includes('HOST IDENTIFICATION HAS CHANGED')))
    return "the host's key does not match its known_hosts (REMOTE HOST IDENTIFICATION HAS CHANGED): nothing was run";
  const unknown = lines.find((l) => /host key is known for/.test(l));
  if (unknown) return `the host's key is not in its known_hosts (${unknown.replace(/ and you have requested.*$/, '')})`;
  if (line?.includes('Host key verification failed'))
    return "the host's key could not be verified against its known_hosts";
  return line ?? lines.at(-1) ?? `ssh exited ${code ?? 'on a signal'}`;
}
