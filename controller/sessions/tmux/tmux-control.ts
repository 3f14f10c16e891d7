import type { Host, HostProcess } from '../../hosts/host.js';

/** The session a control client sits in: it holds nothing of a person's or an agent's. */
const CONTROL_SESSION = 'ctl-control';

interface Pending {
  resolve: (output: string) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One tmux client in control mode (`tmux -C`) on a host, for that host's city tmux server: each command is a line
 * written to it and its answer the `%begin … %end` (or `%error`) block tmux writes back, in order — a screen read
 * over one channel in milliseconds rather than one ssh command (and its handshake over the connection) each.
 * tmux's notifications (`%output`, `%window-add`, …) arrive between blocks and are not ours to read.
 *
 * It sits in a session of its own, so the city's server lives while it does; on a host that is the watchdog's to
 * end with the run. A client that died (its channel, its host) rejects what waits, and the next command starts a
 * new one.
 */
export class TmuxControl {
  private client: HostProcess | undefined;
  private starting: Promise<HostProcess> | undefined;
  private readonly waiting: Pending[] = [];
  /** The block being read: its output lines so far. */
  private block: { lines: string[]; tag: string } | undefined;
  /** The first block answers the command the client was started with. */
  private startupPending = true;

  constructor(
    private readonly host: Host,
    readonly socket: string,
  ) {}

  /** Runs one tmux command (its words, `;` between commands), resolving with its output or rejecting with its error. */
  async command(args: string[], timeoutMs: number): Promise<string> {
    const client = await this._client();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Answers come in order: one that never came leaves every later one unknowable. Start afresh.
        this._fail(new Error(`no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.push({ resolve, reject, timer });
      client.stdin.write(`${args.map(_tmuxWord).join(' ')}\n`);
    });
  }

  /** Whether `args` can go over the control channel (one line: a word holding a newline cannot). */
  static carries(args: string[]): boolean {
    return args.every((arg) => !/[\r\n]/.test(arg));
  }

  close(): void {
    this._fail(new Error('the tmux control client closed'));
  }

  private _client(): Promise<HostProcess> {
    if (this.client) return Promise.resolve(this.client);
    this.starting ??= this._start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async _start(): Promise<HostProcess> {
    const client = await this.host.spawn({
      argv: ['tmux', '-f', '/dev/null', '-S', this.socket, '-C', 'new-session', '-A', '-s', CONTROL_SESSION, 'cat'],
      cwd: '/',
      env: { TMUX: undefined },
      what: 'tmux control client',
    });
    this.startupPending = true;
    this.block = undefined;
    let partial = '';
    client.stdout.setEncoding('utf8');
    client.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) this._line(line.replace(/\r$/, ''));
    });
    client.stderr.resume();
    void client.exited.then(() => {
      if (this.client === client) this._fail(new Error('the tmux control client ended'));
    });
    this.client = client;
    return client;
  }

  private _line(line: string): void {
    if (this.block) {
      const end = /^%(end|error) (\S+ \S+)/.exec(line);
      if (end && end[2] === this.block.tag) {
        const { lines } = this.block;
        this.block = undefined;
        if (this.startupPending) {
          this.startupPending = false;
          return;
        }
        const pending = this.waiting.shift();
        if (!pending) return;
        clearTimeout(pending.timer);
        if (end[1] === 'end') pending.resolve(lines.join('\n'));
        else pending.reject(new Error(lines.join('\n') || 'failed'));
        return;
      }
      this.block.lines.push(line);
      return;
    }
    const begin = /^%begin (\S+ \S+)/.exec(line);
    if (begin) this.block = { lines: [], tag: begin[1]! };
  }

  private _fail(err: Error): void {
    const client = this.client;
    this.client = undefined;
    this.block = undefined;
    for (const pending of this.waiting.splice(0)) {
      clearTimeout(pending.timer);
      pending.reject(err);
    }
    client?.stdin.end();
    client?.signal('SIGKILL');
  }
}

/** One word of a tmux command line: `;` between commands as it is, everything else single-quoted. */
function _tmuxWord(word: string): string {
  if (word === ';') return ';';
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
