import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SessionProgramStatus } from '../../../shared/dto/sessions.js';
import { commandArgv } from '../pipe/child-program.js';
import { programArgs } from '../pipe/pipe-runtime.js';
import { sameToolCall, toolCallText, type ProgramHook } from '../program-hooks.js';
import type { ProgramExit, RuntimeCapabilities, RuntimeOptions, RuntimeSink, SessionRuntime } from '../runtime.js';
import { typeMessage } from './message-typing.js';
import { loadScreenRules, type ScreenRules } from './screen-rules.js';
import { askedSinceMessage, inputLine, replyOf, statusOf } from './screen-reading.js';
import { TmuxServer } from './tmux.js';

/** How often the screen is read. */
const POLL_MS = 100;
/** A state read off the screen counts once two reads in a row agree (a screen caught mid-draw does not). */
const AGREEING_READS = 2;
/** A startup dialog's keys are sent at most this often (the screen may not have redrawn yet). */
const DIALOG_REPEAT_MS = 1000;
/** How long an answer to a permission prompt has to make the prompt go away. */
const ANSWER_WAIT_MS = 3000;
/** A permission prompt counts while it is among this many last non-empty lines of the screen. */
const ASKING_LINES = 8;
/**
 * Once its hooks report, the screen ends a turn only after showing the program idle for this long without a
 * `Stop` hook: a turn a person interrupted, or a prompt denied with Esc, ends with no hook at all. Counted in
 * time, not reads: on a loaded machine a read (two tmux commands) can take half a second.
 */
const HOOK_GRACE_MS = 2000;
/** The screen's size: wide enough that a reply is not wrapped into pieces a person would not write. */
const COLUMNS = '200';
const ROWS = '50';

/** The socket of a city's tmux server: `<city>/.ctl/tmux.sock` (a session's state dir is `<city>/.ctl/sessions/<id>`). */
export function tmuxSocketOf(stateDir: string): string {
  return join(stateDir, '..', '..', 'tmux.sock');
}

/**
 * The tmux runtime, for interactive terminal programs with no structured interface: the program runs in a tmux
 * session of the city's own tmux server, and what it shows is read off its screen by the provider's screen rules
 * (`screen-rules.ts`): ready, busy, asking, startup dialogs. A person can join it (`ctl session attach`).
 *
 * - A message is typed as it is (`send-keys -l`), then Enter, and is delivered only once the screen shows it was
 *   submitted (the input line no longer holds it, or the program went busy). An attempt the screen does not
 *   confirm is tried again after a back-off, never typing the message twice (`message-typing.ts`); after the last
 *   one the delivery fails with why. Nothing is typed while the program works or asks (messages wait their turn
 *   in the session's queue, one turn at a time), so a message never lands in a menu.
 * - A turn ends when the screen shows the program waiting again; its reply is what appeared between the echoed
 *   input and the new prompt (busy lines left out). Screen reading sees only what is on the screen: a reply
 *   longer than the screen keeps its last lines.
 * - A permission prompt on the screen is a pending interaction; `respond` sends the rule's keys and checks that the
 *   prompt went away.
 * - The pane's process is the program: its exit (status kept by `remain-on-exit`) is the program's exit. Its pid is
 *   in the pid file like any program's, so a controller that died leaves nothing the next one does not reap.
 */
export class TmuxRuntime implements SessionRuntime {
  readonly capabilities: RuntimeCapabilities;
  private readonly rules: ScreenRules;
  private readonly server: TmuxServer;
  /** The tmux session's name. */
  readonly target: string;
  private panePid: number | undefined;
  private running = false;
  private stopRequested = false;
  private reported = false;
  private poller: NodeJS.Timeout | undefined;
  private polling = false;
  private isReady = false;
  private readyReads = 0;
  private idleReads = 0;
  /** When the reads that show it idle began. */
  private idleSince = 0;
  /** Reads in a row without the permission prompt while one is pending: a redraw can hide it for one read. */
  private promptGoneReads = 0;
  /** The turn in progress: what was typed, and whether the program has been seen working on it since. */
  private turn: { text: string; working: boolean; echoed?: string; byPerson?: boolean } | undefined;
  /**
   * The permission prompt, as a pending interaction: seen on its screen, or reported by a hook (`tool`: the call
   * it is about); `seenAt` once it shows on the screen; `answering` while respond sends its keys.
   */
  private asked:
    { requestId: string; seenAt?: number; answering?: boolean; tool?: { name?: string; input?: unknown } } | undefined;
  private lastDialogAt = 0;
  private lastScreen: string[] = [];
  /** Its hooks were heard from: they report its turns and permission prompts, the screen is the fallback. */
  private hooksLive = false;
  /** Between a `UserPromptSubmit` and the `Stop` that ends it (a late tool hook after `Stop` says nothing). */
  private hookTurnOpen = false;
  /** When its last `UserPromptSubmit` came (a message it shows as submitted). */
  private promptSubmittedAt = 0;
  /** A message is being typed: a turn's end reported meanwhile waits until it is delivered. */
  private delivering = false;
  private deferredHooks: ProgramHook[] = [];
  private status: SessionProgramStatus = { status: 'starting', source: 'screen', at: new Date().toISOString() };
  private clientCount = 0;

  constructor(
    private readonly options: RuntimeOptions,
    private readonly sink: RuntimeSink,
  ) {
    const { provider, workDir } = options;
    if (!provider.screen_rules) throw new Error(`provider ${provider.name} runs in tmux but names no screen_rules`);
    this.rules = loadScreenRules(provider.screen_rules, workDir);
    this.server = new TmuxServer(options.host.tmuxSocket(tmuxSocketOf(options.stateDir)), options.host);
    this.target = `ctl-${options.sessionId}`;
    this.capabilities = {
      interrupt: true,
      pending: this.rules.permission !== undefined,
      liveModeChange: false,
      concurrentTurns: false,
    };
  }

  get pid(): number | undefined {
    return this.panePid;
  }

  /** The pane's pid where its program's status file can be read here (a remote host's files are not ours). */
  private get statusPid(): number | undefined {
    return this.options.host.remote ? undefined : this.panePid;
  }

  /** Where a person joins it: the socket and the session's name (on its host), and the command that does. */
  get attach(): { socket: string; target: string; command: string[] } {
    const { socket } = this.server;
    const command = this.options.host.terminal(['tmux', '-S', socket, 'attach-session', '-t', this.target]);
    return { socket, target: this.target, command };
  }

  /** The tmux clients showing its session (`#{session_attached}`, read with every poll). */
  get clients(): number {
    return this.clientCount;
  }

  get programStatus(): SessionProgramStatus {
    return { ...this.status };
  }

  async start(): Promise<void> {
    const { provider, workDir, env } = this.options;
    let argv = commandArgv(provider.command, programArgs(provider, this.options));
    // On a host, PATH is what goes before the host's own (the shipped ctl): `-e` would replace it outright.
    const prependPath = this.options.host.remote ? env.PATH : undefined;
    if (prependPath !== undefined) argv = ['sh', '-c', 'PATH="$0:$PATH"; export PATH; exec "$@"', prependPath, ...argv];
    // The program's environment goes on its command line (`-e`): a tmux server started by an earlier session
    // has its own, and would hand that on.
    const envFlags = Object.entries(env).flatMap(([key, value]) =>
      value === undefined || key === 'TMUX' || (key === 'PATH' && prependPath !== undefined)
        ? []
        : ['-e', `${key}=${value}`],
    );
    try {
      await this.server.run([
        'new-session',
        '-d',
        '-s',
        this.target,
        '-x',
        COLUMNS,
        '-y',
        ROWS,
        '-c',
        workDir,
        ...envFlags,
        '--',
        ...argv,
        // In the same command, so that a program that exits at once still leaves its status to read.
        ';',
        'set-option',
        '-t',
        this.target,
        'remain-on-exit',
        'on',
      ]);
      this.panePid = Number(await this.server.run(['display-message', '-p', '-t', this.target, '#{pane_pid}']));
    } catch (err) {
      await this.server
        .run(['kill-session', '-t', this.target])
        .catch((cleanup: unknown) => this.cleanupFailed(cleanup));
      throw new Error(`cannot start ${provider.command} in tmux: ${(err as Error).message}`, { cause: err });
    }
    // The pane's program leads a process group of its own (tmux makes each pane a session): it ends with the
    // controller, however the controller ends.
    await this.options.host.tether(this.panePid, `session program in tmux ${this.target}`);
    this.running = true;
    this.poller = setInterval(() => void this.poll(), POLL_MS);
  }

  async deliver(message: { id: string; text: string }): Promise<void> {
    if (!this.running) throw new Error('the program is not running');
    this.delivering = true;
    try {
      await this.type(message.text);
    } finally {
      this.delivering = false;
      // After the session has counted the delivery (its continuation runs first): then the turn can end.
      const deferred = this.deferredHooks.splice(0);
      if (deferred.length) setImmediate(() => deferred.forEach((h) => this.applyHook(h)));
    }
  }

  private async type(message: string): Promise<void> {
    this.turn = { text: message.replace(/\r?\n/g, ' '), working: false };
    const turn = this.turn;
    this.idleReads = 0;
    const pane = {
      name: this.target,
      capture: () => this.server.capture(this.target),
      type: (text: string) => this.server.type(this.target, text),
      sendKeys: (keys: string[]) => this.server.sendKeys(this.target, keys),
    };
    try {
      await typeMessage(pane, message, {
        rules: this.rules,
        running: () => this.running,
        busy: (screen) => this.rules.busy?.test(screen.slice(-15).join('\n')) ?? false,
        hookSubmittedSince: (since) => this.promptSubmittedAt >= since,
        // From here a bare prompt means the program is done with it (the screen has left its empty prompt); its
        // reply comes after this line, the message as the program echoed it.
        echoed: (line) => {
          turn.working = true;
          turn.echoed = line;
        },
        retrying: (retry) => {
          this.options.logger.warn({ target: this.target, ...retry }, 'typing a message failed; trying again');
          this.sink.deliveryRetried(retry);
        },
      });
    } catch (err) {
      if (this.turn === turn) this.turn = undefined;
      throw err;
    }
  }

  async interrupt(): Promise<boolean> {
    if (!this.running || !this.turn) return false;
    await this.server.sendKeys(this.target, this.rules.interruptKeys);
    return true;
  }

  async respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    const permission = this.rules.permission;
    const asked = this.asked;
    if (!permission || asked?.requestId !== requestId) throw new Error(`no pending interaction ${requestId}`);
    const allow = answer.action === 'allow';
    asked.answering = true;
    try {
      // A prompt a hook reported may not be drawn yet: the keys are for the menu on the screen.
      if (asked.seenAt === undefined && !(await this.until((screen) => this.isAsking(screen), ANSWER_WAIT_MS))) {
        throw new Error(`the permission prompt of ${this.target} never showed on its screen`);
      }
      asked.seenAt ??= Date.now();
      const settled = asked.seenAt + permission.settleMs - Date.now();
      if (settled > 0) await sleep(settled);
      await this.server.sendKeys(this.target, allow ? permission.allowKeys : permission.denyKeys);
      if (await this.until((screen) => !this.isAsking(screen), ANSWER_WAIT_MS)) {
        if (this.asked === asked) this.clearAsked(allow ? 'allow' : 'deny');
        return;
      }
      throw new Error(`the permission prompt of ${this.target} is still on its screen after the answer`);
    } finally {
      asked.answering = false;
    }
  }

  setPermissionMode(): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** The screen's last `lines` lines (peek). */
  async peek(lines: number): Promise<string[]> {
    if (!this.running) return this.lastScreen.slice(-lines);
    return (await this.server.capture(this.target)).slice(-lines);
  }

  async stop(graceMs: number): Promise<void> {
    if (!this.running) return;
    this.stopRequested = true;
    const pid = this.panePid!;
    // Closing its session hangs up its terminal (SIGHUP); a program that ignores it is killed after the grace.
    await this.server.run(['kill-session', '-t', this.target]).catch((err: unknown) => this.cleanupFailed(err));
    const deadline = Date.now() + graceMs;
    const { host } = this.options;
    while ((await host.isAlive(pid)) && Date.now() < deadline) await sleep(50);
    if (await host.isAlive(pid)) await host.signalGroup(pid, 'SIGKILL');
    this.ended({ code: null, signal: 'SIGHUP', requested: true, stderrTail: '' });
  }

  isRunning(): boolean {
    return this.running;
  }

  /**
   * Whether the program asks now: its permission prompt among the screen's last lines while it neither works nor
   * waits at its prompt (an answered menu stays on the screen above what follows).
   */
  private isAsking(screen: string[]): boolean {
    const permission = this.rules.permission;
    if (!permission) return false;
    const status = statusOf(this.rules, this.options.env, this.statusPid);
    if (status !== undefined) return status === 'asking';
    const bottom = screen.filter((l) => l.trim() !== '').slice(-ASKING_LINES);
    return (
      permission.pattern.test(bottom.join('\n')) &&
      !(this.rules.busy?.test(bottom.join('\n')) ?? false) &&
      inputLine(screen, this.rules)?.typed !== ''
    );
  }

  /** Whether the screen comes to satisfy `ok` within `waitMs`. */
  private async until(ok: (screen: string[]) => boolean, waitMs: number): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      if (ok(await this.server.capture(this.target))) return true;
      await sleep(POLL_MS / 2);
    }
    return false;
  }

  private async poll(): Promise<void> {
    if (this.polling || !this.running) return;
    this.polling = true;
    try {
      const [dead, status, clients] = (
        await this.server.run([
          'display-message',
          '-p',
          '-t',
          this.target,
          '#{pane_dead}|#{pane_dead_status}|#{session_attached}',
        ])
      ).split('|');
      // A person's tmux client on its session (`ctl session attach`, `tmux attach`): someone is attached.
      this.clientCount = Number(clients) || 0;
      if (dead === '1') {
        this.lastScreen = await this.server.capture(this.target).catch(() => this.lastScreen);
        await this.server.run(['kill-session', '-t', this.target]).catch((err: unknown) => this.cleanupFailed(err));
        const code = Number(status);
        this.ended({
          code: Number.isInteger(code) ? code : null,
          signal: null,
          requested: this.stopRequested,
          stderrTail: this.lastScreen.slice(-10).join('\n'),
        });
        return;
      }
      const screen = await this.server.capture(this.target);
      this.lastScreen = screen;
      this.read(screen);
    } catch (err) {
      if (!this.running) return;
      // Its host stopped answering: what runs there is its watchdog's to end, and the session is lost.
      const lost = this.options.host.lost();
      if (lost !== undefined) {
        this.ended({ code: null, signal: 'SIGHUP', requested: this.stopRequested, stderrTail: '', hostLost: lost });
        return;
      }
      // Its session is gone (a person killed it in tmux): the program with it.
      if (/can't find|no server|not found/i.test((err as Error).message)) {
        this.ended({ code: null, signal: 'SIGHUP', requested: this.stopRequested, stderrTail: String(err) });
      }
    } finally {
      this.polling = false;
    }
  }

  /** A tmux session that could not be killed: its program is reaped by its process group all the same. */
  private cleanupFailed(err: unknown): void {
    this.options.logger.debug({ err, target: this.target }, 'could not kill the tmux session');
  }

  /** One read of the screen: dialogs answered, readiness, the turn's end, a permission prompt. */
  private read(screen: string[]): void {
    const tail = screen.slice(-15).join('\n');
    const dialog = this.rules.dialogs.find((d) => d.pattern.test(tail));
    if (dialog && Date.now() - this.lastDialogAt > DIALOG_REPEAT_MS) {
      this.lastDialogAt = Date.now();
      void this.server
        .sendKeys(this.target, dialog.keys)
        .catch((err: unknown) => this.options.logger.warn({ err }, 'a startup dialog could not be answered'));
      return;
    }
    // Its status file, where it keeps one, says better than the screen whether it works; the screen says when its
    // input line is empty.
    const status = statusOf(this.rules, this.options.env, this.statusPid);
    const busy = status !== undefined ? status === 'busy' : (this.rules.busy?.test(tail) ?? false);
    const asking = this.isAsking(screen);
    const waiting = !busy && !asking && !dialog && inputLine(screen, this.rules)?.typed === '';

    if (!this.isReady) {
      this.readyReads = waiting ? this.readyReads + 1 : 0;
      if (this.readyReads >= AGREEING_READS) {
        this.isReady = true;
        this.setStatus('idle');
        this.sink.ready();
      }
      return;
    }
    if (!this.hooksLive) this.setStatus(asking ? 'asking' : busy ? 'busy' : waiting ? 'idle' : this.status.status);
    if (asking && this.asked && this.asked.seenAt === undefined) this.asked.seenAt = Date.now();
    // Once its hooks report, a prompt is theirs to report (they name the tool); the screen still answers it.
    if (asking && !this.asked && !this.hooksLive && this.turn && askedSinceMessage(screen, this.rules, this.turn)) {
      const at = screen.findLastIndex((l) => this.rules.permission!.pattern.test(l));
      const about = screen
        .slice(Math.max(0, at - 1), at + 1)
        .join(' ')
        .trim();
      this.ask(about, { source: 'screen', screen: screen.slice(-15).join('\n') }, Date.now());
    } else if (!asking && this.asked?.seenAt !== undefined && !this.asked.answering) {
      // Answered on the screen itself (a person attached to it) — when reads agree: a screen caught mid-redraw
      // lacks the prompt too.
      this.promptGoneReads += 1;
      if (this.promptGoneReads >= AGREEING_READS) this.clearAsked('answered');
    }
    if (asking || !this.asked) this.promptGoneReads = 0;
    if (!this.turn) return;
    // Its prompt before the message showed is not the end of the turn.
    if (!this.turn.working) return;
    this.idleReads = waiting ? this.idleReads + 1 : 0;
    if (this.idleReads === 1) this.idleSince = Date.now();
    if (this.idleReads < AGREEING_READS) return;
    if (this.hooksLive && Date.now() - this.idleSince < HOOK_GRACE_MS) return;
    const reply = this.turn.byPerson ? '' : replyOf(screen, this.rules, this.turn.echoed ?? this.turn.text);
    this.endTurn(reply, { source: 'screen' });
  }

  /**
   * A hook its program reported (`ctl hook-event`): from the first one on, its hooks say when a turn ends and
   * when it asks for permission, and the screen is the fallback (for what no hook reports: an interrupt).
   */
  hook(hook: ProgramHook): boolean {
    if (!this.running) return false;
    this.hooksLive = true;
    // A turn that ends while its message is being typed ends once the session has counted its delivery.
    if (this.delivering && (hook.event === 'Stop' || hook.event === 'StopFailure')) this.deferredHooks.push(hook);
    else this.applyHook(hook);
    return true;
  }

  private applyHook(hook: ProgramHook): void {
    if (!this.running) return;
    switch (hook.event) {
      case 'SessionStart':
        this.setStatus(this.isReady ? 'idle' : 'starting', hook.event);
        return;
      case 'UserPromptSubmit':
        this.hookTurnOpen = true;
        this.promptSubmittedAt = Date.now();
        this.setStatus('busy', hook.event);
        if (!this.turn && this.isReady) {
          // Typed by a person in its terminal: a turn of its own, so nothing is typed over it until it ends.
          this.turn = { text: hook.prompt ?? '', working: true, byPerson: true };
          this.sink.turnBegan(`a prompt typed in its terminal: ${hook.prompt ?? ''}`.trim());
        }
        return;
      case 'PreToolUse':
      case 'SubagentStop':
        if (this.hookTurnOpen) this.setStatus('busy', hook.event);
        return;
      case 'PostToolUse': {
        // The tool ran: the prompt about it was answered (on the screen, when not through respond).
        const call = { name: hook.toolName, input: hook.toolInput };
        if (this.asked?.tool && !this.asked.answering && sameToolCall(this.asked.tool, call)) {
          this.clearAsked('answered');
        }
        if (this.hookTurnOpen) this.setStatus('busy', hook.event);
        return;
      }
      case 'PermissionRequest':
        this.askedByHook(hook, `${toolCallText(hook.toolName, hook.toolInput)} Do you want to proceed?`);
        return;
      case 'Notification':
        // `permission_prompt` comes some seconds after the prompt is up (a `PermissionRequest` comes at once).
        if (hook.notificationType === 'permission_prompt') this.askedByHook(hook, hook.message ?? 'permission');
        else if (hook.notificationType === 'idle_prompt' && !this.hookTurnOpen) this.setStatus('idle', hook.event);
        else this.setStatus(this.status.status, hook.event);
        return;
      case 'Stop':
      case 'StopFailure': {
        this.hookTurnOpen = false;
        if (this.asked && !this.asked.answering) this.clearAsked('answered');
        this.setStatus('idle', hook.event);
        // Its conversation exists once a turn ended: resumable from then on (`--resume` of one without any fails).
        if (hook.conversation) this.sink.sessionKey(hook.conversation);
        if (!this.turn?.working) return;
        const reply =
          hook.event === 'Stop'
            ? (hook.lastMessage ??
              (this.turn.byPerson ? '' : replyOf(this.lastScreen, this.rules, this.turn.echoed ?? '')))
            : '';
        this.endTurn(reply, { source: 'hook', hook: hook.event }, hook.error);
        return;
      }
    }
  }

  private askedByHook(hook: ProgramHook, prompt: string): void {
    this.setStatus('asking', hook.event);
    if (this.asked) return;
    const metadata: Record<string, string> = { source: 'hook', hook: hook.event };
    if (hook.toolName) metadata.tool_name = hook.toolName;
    if (hook.toolInput !== undefined) metadata.tool_input = JSON.stringify(hook.toolInput).slice(0, 4000);
    this.ask(prompt, metadata, undefined, hook.toolName ? { name: hook.toolName, input: hook.toolInput } : undefined);
  }

  private ask(
    prompt: string,
    metadata: Record<string, string>,
    seenAt?: number,
    tool?: { name?: string; input?: unknown },
  ) {
    const requestId = `tmux-${randomBytes(6).toString('hex')}`;
    this.asked = { requestId, ...(seenAt !== undefined ? { seenAt } : {}), ...(tool ? { tool } : {}) };
    this.sink.pending({
      request_id: requestId,
      kind: 'tool-approval',
      prompt,
      options: ['allow', 'deny'],
      metadata,
      created_at: new Date().toISOString(),
    });
  }

  private clearAsked(action: string): void {
    if (!this.asked) return;
    const { requestId } = this.asked;
    this.asked = undefined;
    this.promptGoneReads = 0;
    if (this.hooksLive && this.status.status === 'asking') this.setStatus('busy');
    this.sink.pendingCleared(requestId, action);
  }

  /** The turn in progress ends: its reply (if any), and who said it ended. */
  private endTurn(reply: string, data: Record<string, unknown>, failure?: string): void {
    this.turn = undefined;
    this.idleReads = 0;
    if (reply) this.sink.output('assistant', reply);
    this.sink.turnEnded(data, failure !== undefined ? { message: failure } : undefined);
  }

  private setStatus(status: SessionProgramStatus['status'], hook?: string): void {
    const source = hook !== undefined || this.hooksLive ? 'hooks' : 'screen';
    const last = hook ?? this.status.hook;
    if (this.status.status === status && this.status.source === source && this.status.hook === last) return;
    this.status = { status, source, ...(last !== undefined ? { hook: last } : {}), at: new Date().toISOString() };
  }

  private ended(exit: ProgramExit): void {
    if (this.reported) return;
    this.reported = true;
    this.running = false;
    clearInterval(this.poller);
    if (this.panePid !== undefined) {
      // What it started goes with it, and the group is no longer tethered.
      const { host } = this.options;
      const pid = this.panePid;
      void host.signalGroup(pid, 'SIGKILL').finally(() => host.release(pid));
    }
    this.sink.exited(exit);
  }
}
