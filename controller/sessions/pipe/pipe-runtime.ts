import { optionArgs } from '../../providers/provider-options.js';
import type { ResolvedProvider } from '../../providers/provider-spec.js';
import type { Protocol, ProtocolFactory } from '../protocols/protocol.js';
import type { RuntimeCapabilities, RuntimeOptions, RuntimeSink, SessionRuntime } from '../runtime.js';
import { primingArgs } from '../priming.js';
import { ChildProgram, commandArgv } from './child-program.js';

/** The command line a session's program starts with: the provider's arguments, its mode, its resume, its prompt. */
export function programArgs(provider: ResolvedProvider, options: RuntimeOptions): string[] {
  const args = [...provider.args];
  args.push(...launchArgs(provider, options));
  if (options.resumeKey !== undefined && provider.resume_args) {
    args.push(...provider.resume_args.map((a) => a.replaceAll('{session_key}', options.resumeKey!)));
  }
  if (options.firstMessage !== undefined) {
    if (provider.prompt_mode === 'arg') args.push(options.firstMessage);
    else if (provider.prompt_mode === 'flag') args.push(provider.prompt_flag!, options.firstMessage);
  }
  return args;
}

/**
 * What every start (or, for Codex, every turn) of a program passes besides its own arguments and resume: its
 * permission mode's arguments, its options' (model, effort, …), and its priming.
 */
export function launchArgs(provider: ResolvedProvider, options: RuntimeOptions): string[] {
  const args: string[] = [];
  const mode = options.permissionMode ?? provider.default_permission_mode;
  if (mode !== undefined) args.push(...(provider.permission_modes[mode] ?? []));
  args.push(...optionArgs(provider, options.options ?? {}));
  args.push(...primingArgs(provider, options.priming));
  return args;
}

/**
 * The pipe runtime: the program is a child of the controller, with our own stdin, stdout and stderr pipes, in a
 * process group of its own; a wire protocol (text, stream-json) speaks with it over the pipes. Nothing is read
 * off a screen: what the program says is what it writes.
 */
export class PipeRuntime implements SessionRuntime {
  private program: ChildProgram | undefined;
  private readonly protocol: Protocol;

  constructor(
    private readonly options: RuntimeOptions,
    sink: RuntimeSink,
    protocol: ProtocolFactory,
  ) {
    this.sink = sink;
    this.protocol = protocol(options.provider, sink, options.logger);
  }

  private readonly sink: RuntimeSink;

  get capabilities(): RuntimeCapabilities {
    return this.protocol.capabilities;
  }

  get pid(): number | undefined {
    return this.program?.pid;
  }

  async start(): Promise<void> {
    const { provider } = this.options;
    const argv = commandArgv(provider.command, programArgs(provider, this.options));
    const program: ChildProgram = await ChildProgram.start(
      this.options.host,
      { argv, cwd: this.options.workDir, env: this.options.env },
      (lines) => {
        this.protocol.lines(lines);
        const behind = this.sink.behind();
        if (behind) program.holdOutput(behind);
      },
    );
    this.program = program;
    this.protocol.started({ write: (text) => program.write(text), signal: (signal) => program.signal(signal) });
    void program.exited.then((exit) => {
      this.protocol.ended();
      this.sink.exited(exit);
    });
  }

  deliver(message: { id: string; text: string }): Promise<void> {
    return this.protocol.deliver(message);
  }

  interrupt(): Promise<boolean> {
    return this.protocol.interrupt();
  }

  respond(requestId: string, answer: { action: string; text?: string }): Promise<void> {
    return this.protocol.respond(requestId, answer);
  }

  setPermissionMode(mode: string): Promise<boolean> {
    return this.protocol.setPermissionMode(mode);
  }

  async stop(graceMs: number): Promise<void> {
    await this.program?.stop(graceMs);
  }

  isRunning(): boolean {
    return this.program?.isRunning === true;
  }
}
