import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { commandProgram, findOnPath } from '../../../shared/readiness.js';
import { ChildProgram, commandArgv } from '../pipe/child-program.js';
import { launchArgs } from '../pipe/pipe-runtime.js';
import type { ProgramExit, RuntimeCapabilities, RuntimeOptions, RuntimeSink, SessionRuntime } from '../runtime.js';
import { readCodexLine, type TurnOutcome } from './codex-events.js';

/** An interrupted turn's process gets this long after SIGINT before it is stopped outright. */
const INTERRUPT_GRACE_MS = 3000;
/** Codex's words for a thread it has no record of (`exec resume` of an unknown id). */
const NO_THREAD = /no rollout found for thread id/i;

/**
 * The per-turn runtime Codex's `exec` mode needs: no program lives between turns. Each message is one
 * `codex exec --json … <message>` (stdin closed: otherwise it waits for more input), the first of a thread
 * without an id, every later one `… resume <thread_id> <message>`, so the conversation continues across
 * processes and across controller restarts (the thread id is the session's provider key, in its bead).
 *
 * The session is running (it takes turns) from `start` until `stop`, whether or not a turn's process exists:
 * a turn's process ending is the end of that turn — never the end of the program, so never a crash. A turn that
 * fails (the model's API refused, a non-zero exit) ends with the failure and the session stays usable. Codex
 * `exec` never asks for permission (its sandbox decides): no pending interactions.
 */
export class CodexExecRuntime implements SessionRuntime {
  readonly capabilities: RuntimeCapabilities = {
    interrupt: true,
    pending: false,
    liveModeChange: false,
    concurrentTurns: false,
  };
  private started = false;
  private turn: ChildProgram | undefined;
  private threadId: string | undefined;
  private interrupted = false;
  /** The session's sink, but the thread a turn names is also the one the next turn resumes. */
  private readonly turnSink: RuntimeSink;

  constructor(
    private readonly options: RuntimeOptions,
    private readonly sink: RuntimeSink,
  ) {
    this.threadId = options.resumeKey || undefined;
    this.turnSink = {
      ...sink,
      sessionKey: (key) => {
        this.threadId = key;
        sink.sessionKey(key);
      },
    };
  }

  get pid(): number | undefined {
    return this.turn?.pid;
  }

  /** Ready at once once the program is found; a first message given on creation is the first turn. */
  async start(): Promise<void> {
    await this.findProgram();
    this.started = true;
    const first = this.options.firstMessage;
    // After the session has recorded the first message as its turn (it does so as `start` resolves).
    setImmediate(() => {
      if (first !== undefined)
        void this.runTurn(first).catch((err: unknown) =>
          this.options.logger.error({ err }, 'the first turn could not be run'),
        );
      this.sink.ready();
    });
  }

  /** Throws, saying so, when its program is not where it runs: on PATH or at its path, here or on its host. */
  private async findProgram(): Promise<void> {
    const { provider, workDir, env, host } = this.options;
    const program = commandProgram(provider.command);
    const missing = `cannot start ${provider.command}${host.remote ? ` on ${host.name}` : ''}: ${program ?? 'the command'} not found (is it installed and on PATH?)`;
    if (program === undefined) throw new Error(missing);
    if (host.remote) {
      // The host's program: looked for there, on the host's own PATH and in its work dir there.
      const there = await host.run(['sh', '-c', 'command -v -- "$0" >/dev/null', program], {
        cwd: workDir,
        timeoutMs: 10_000,
      });
      if (there.code !== 0) throw new Error(missing);
      return;
    }
    const found = program.includes('/')
      ? isAbsolute(program)
        ? program
        : join(workDir, program)
      : findOnPath(program, env.PATH ?? '');
    if (program.includes('/') ? !(await isExecutable(found!)) : found === undefined) throw new Error(missing);
  }

  async deliver(message: { id: string; text: string }): Promise<void> {
    if (!this.started) throw new Error('the session is not running');
    await this.runTurn(message.text);
  }

  async interrupt(): Promise<boolean> {
    const turn = this.turn;
    if (!turn?.isRunning) return false;
    this.interrupted = true;
    turn.signal('SIGINT');
    const timer = setTimeout(() => void turn.stop(INTERRUPT_GRACE_MS), INTERRUPT_GRACE_MS);
    await turn.exited;
    clearTimeout(timer);
    return true;
  }

  respond(): Promise<void> {
    return Promise.reject(new Error('codex exec does not ask for permission'));
  }

  setPermissionMode(): Promise<boolean> {
    // Each turn is a new process: the next one starts in the new mode.
    return Promise.resolve(false);
  }

  async stop(graceMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    const turn = this.turn;
    const exit: ProgramExit = turn?.isRunning
      ? { ...(await turn.stop(graceMs)), requested: true }
      : { code: 0, signal: null, requested: true, stderrTail: '' };
    this.sink.exited(exit);
  }

  isRunning(): boolean {
    return this.started;
  }

  /** One turn: its process, its lines onto the session, its end (completed, failed or interrupted). */
  private async runTurn(text: string): Promise<void> {
    const { provider } = this.options;
    const args = [...provider.args, ...launchArgs(provider, this.options)];
    if (this.threadId !== undefined && provider.resume_args) {
      args.push(...provider.resume_args.map((a) => a.replaceAll('{session_key}', this.threadId!)));
    }
    args.push(text);
    const outcome: TurnOutcome = { ended: false };
    this.interrupted = false;
    let turn: ChildProgram;
    try {
      turn = await ChildProgram.start(
        this.options.host,
        {
          argv: commandArgv(provider.command, args),
          cwd: this.options.workDir,
          env: this.options.env,
        },
        (lines) => {
          for (const line of lines) readCodexLine(line, this.turnSink, outcome);
        },
      );
    } catch (err) {
      this.sink.turnEnded({}, { message: (err as Error).message });
      throw err;
    }
    this.turn = turn;
    turn.closeInput();
    void turn.exited.then((exit) => this.turnExited(turn, exit, outcome));
  }

  private turnExited(turn: ChildProgram, exit: ProgramExit, outcome: TurnOutcome): void {
    if (this.turn === turn) this.turn = undefined;
    if (exit.requested && !this.started) return; // stopped with the session: its exit says so
    const data: Record<string, unknown> = {
      exit_code: exit.code,
      ...(exit.signal ? { signal: exit.signal } : {}),
      ...(outcome.usage ? { usage: outcome.usage } : {}),
    };
    if (this.interrupted) {
      this.interrupted = false;
      this.sink.turnEnded({ ...data, interrupted: true });
      return;
    }
    // What it said on stderr: its `Error: …` line (a backtrace may follow it), else its last line.
    const lines = exit.stderrTail.split('\n').filter((l) => l.trim() && !l.startsWith('WARNING:'));
    const said = lines.find((l) => NO_THREAD.test(l)) ?? lines.find((l) => l.startsWith('Error:')) ?? lines.at(-1);
    if (said && NO_THREAD.test(said)) {
      // Codex no longer has the thread: say so once, and let the next message start a new one.
      this.threadId = undefined;
      this.sink.resumeRefused(said.replace(/^Error:\s*/, ''));
    }
    const failure =
      outcome.failure ??
      (exit.code === 0 && outcome.ended
        ? undefined
        : { message: said ?? (exit.signal ? `codex ended on ${exit.signal}` : `codex exited with code ${exit.code}`) });
    this.sink.turnEnded(data, failure);
  }
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
