import type { Host } from '../../hosts/host.js';
import { TmuxControl } from './tmux-control.js';

/** No tmux command of ours may hang a session: each is bounded. */
const TMUX_TIMEOUT_MS = 5000;

/**
 * The city's tmux server, on a socket of its own in the city's runtime directory (`<city>/.ctl/tmux.sock`): a
 * person's own tmux sessions are never touched, and the server exits by itself once its last session has ended.
 */
export class TmuxServer {
  constructor(
    /** On its host. */
    readonly socket: string,
    private readonly host: Host,
  ) {}

  /** Runs `tmux -S <socket> …args` on its host; resolves with its stdout, rejects with its stderr. */
  async run(args: string[]): Promise<string> {
    // On a host over ssh: over the host's one control client, not an ssh command per screen read.
    if (this.host.remote && TmuxControl.carries(args)) {
      try {
        return await _controlOf(this.host, this.socket).command(args, TMUX_TIMEOUT_MS);
      } catch (err) {
        throw new Error(`tmux ${args[0]}: ${(err as Error).message}`, { cause: err });
      }
    }
    // `-f /dev/null`: our own settings only, never a person's ~/.tmux.conf (keys, status line, sizes).
    const result = await this.host.run(['tmux', '-f', '/dev/null', '-S', this.socket, ...args], {
      timeoutMs: TMUX_TIMEOUT_MS,
      // Run from inside a person's tmux, tmux would refuse to nest.
      env: { TMUX: '' },
    });
    if (result.code !== 0) {
      const why = result.timedOut ? `timed out after ${TMUX_TIMEOUT_MS} ms` : result.stderr.trim();
      throw new Error(`tmux ${args[0]}: ${why || `exit ${result.code ?? 'by a signal'}`}`);
    }
    return result.stdout;
  }

  /** The visible screen of a session's pane, as text lines (trailing blanks dropped). */
  async capture(target: string): Promise<string[]> {
    const text = await this.run(['capture-pane', '-p', '-t', target]);
    const lines = text.split('\n').map((l) => l.trimEnd());
    while (lines.length > 0 && lines.at(-1) === '') lines.pop();
    return lines;
  }

  sendKeys(target: string, keys: string[]): Promise<string> {
    return this.run(['send-keys', '-t', target, ...keys]);
  }

  /** Types `text` as it is (no key names). */
  type(target: string, text: string): Promise<string> {
    return this.run(['send-keys', '-t', target, '-l', text]);
  }
}

/** Each host's control client of each tmux server there: one channel per host and city, whoever asks. */
const controls = new WeakMap<Host, Map<string, TmuxControl>>();

function _controlOf(host: Host, socket: string): TmuxControl {
  let bySocket = controls.get(host);
  if (!bySocket) controls.set(host, (bySocket = new Map<string, TmuxControl>()));
  let control = bySocket.get(socket);
  if (!control) bySocket.set(socket, (control = new TmuxControl(host, socket)));
  return control;
}
