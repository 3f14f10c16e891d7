import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, posix, relative, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Host } from '../hosts/host.js';
import { workDirOnHost } from '../worktrees/remote-worktree.js';
import { shellQuote, ctlFirstOnPath } from '../sessions/session-environment.js';
import { programDir, type SessionRecord } from '../sessions/session-store.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import type { CommandResult, CommandRunner } from '../commands.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import { copyOverlay } from './overlay.js';

/** The file in a session's directory where what its `pre_start` and `session_setup` commands printed is kept. */
export const START_LOG_FILE = 'start-commands.log';
const START_LOG_MAX_BYTES = 1024 * 1024;

/** What running an agent's start commands needs of the city. */
export interface AgentStartHost {
  cityName: string;
  cityRoot: string;
  /** `<city>/.ctl/sessions`. */
  sessionsDir: string;
  env: NodeJS.ProcessEnv;
  ctlBin?: string;
  commands: CommandRunner;
  logger: Logger;
  /** The agent a session is of, as configured now. */
  agent(name: string): AgentDefinition | undefined;
  /** A rig's directory (the `{{.RigRoot}}` of its agents' commands). */
  rigRoot(rig: string): string | undefined;
  /** How long each command may run (`[session] setup_timeout`). */
  timeoutMs(): number;
  /** The host a session runs on (`SessionContext.hostOf`); none: this machine. */
  hostOf?(record: SessionRecord): Host;
}

/** Where in a session's directory here its overlays are laid down before they go to its host. */
const OVERLAY_STAGING = 'overlay-on-host';
/**
 * The host's half of laying an overlay down (`sh -c` with the staged copy and the work directory): additive, as
 * here — a file the work directory has is never replaced — then the copy removed.
 */
const MERGE_OVERLAY = 'tar -C "$1" -cf - . | tar -C "$2" -xpf - --skip-old-files && rm -rf "$1"';

/** What a session tells of itself while its start commands run. */
export interface StartingSession {
  readonly record: SessionRecord;
  saveFields(changed: Partial<SessionRecord>): void;
  recordLifecycle(type: 'session.updated', reason?: string): Promise<void>;
}

/**
 * What an agent's configuration runs around each start of one of its sessions, as the reference does: before the
 * program starts, its `overlay_dir` and its packs' `overlay/` laid into the work directory and its `pre_start`
 * commands (one failing: the session does not start, and says why); once the program is ready, its `session_setup`
 * commands and `session_setup_script` (a failure is recorded; the session runs on). Each command is a child of the
 * controller in its own process group — or, for a session on a remote host, a command run there (`Host.run`) in its
 * work directory there, with only named variables — under `[session] setup_timeout`; what it printed is kept in
 * the session directory's `start-commands.log`, and a failure's last line goes into the session's reason or event.
 */
export class AgentStartSteps {
  constructor(private readonly host: AgentStartHost) {}

  /** Before its program starts; throws an Error saying why the session cannot start. */
  async beforeProgram(session: StartingSession, programDir: string): Promise<void> {
    const record = session.record;
    if (record.kind !== 'agent') return;
    const agent = this.host.agent(record.template);
    if (!agent) return;
    // `wake_mode = "fresh"`: every start begins a new conversation.
    if (agent.config.wake_mode === 'fresh' && record.provider_session_key !== undefined) {
      session.saveFields({ provider_session_key: undefined });
    }
    // Copies never replace a file, so the overlay that wins goes first: the agent's own, then its packs' (the
    // last gathered wins among them), as the reference's overwriting copies in the opposite order leave it.
    const overlays: [string, string][] = [
      ...(agent.overlayDir !== undefined ? [['overlay_dir', agent.overlayDir] as [string, string]] : []),
      ...(agent.config.pack_overlays ?? []).toReversed().map((dir): [string, string] => ['pack overlay', dir]),
    ];
    const host = this.remoteHost(record);
    // On a host: laid down here first (a link leading out of an overlay skipped, as here), then staged into its work
    // dir there, where a file it has already is kept (tar --skip-old-files).
    const overlayDir = host ? join(this.host.sessionsDir, record.id, OVERLAY_STAGING) : programDir;
    if (host) rmSync(overlayDir, { recursive: true, force: true });
    for (const [what, dir] of overlays) {
      const copied = copyOverlay(dir, overlayDir);
      if (copied.skipped.length) this.log(record, `${what} ${dir}: skipped ${copied.skipped.join('; ')}`);
    }
    if (host && overlays.length) await this.overlayOnHost(host, record, overlayDir, programDir);
    for (const [i, command] of (agent.config.pre_start ?? []).entries()) {
      const failure = await this.run(record, agent, `pre_start[${i}]`, command, programDir);
      if (failure) throw new Error(failure);
    }
  }

  /** Runs `session_setup` each time a session of the city becomes ready (its state `active`). */
  watch(sessions: SessionService): void {
    const watch = (session: Session) =>
      session.on('state', (state) => {
        if (state !== 'active') return;
        this.afterReady(session).catch((err: unknown) =>
          this.host.logger.warn({ err, session: session.id }, 'could not run session_setup'),
        );
      });
    sessions.onOpened(watch);
    for (const session of sessions.all()) watch(session);
  }

  /** Once its program is ready (each start): failures are recorded, and the session runs on. */
  async afterReady(session: StartingSession): Promise<void> {
    const record = session.record;
    if (record.kind !== 'agent') return;
    const agent = this.host.agent(record.template);
    if (!agent) return;
    const steps: [string, string][] = (agent.config.session_setup ?? []).map((c, i) => [`session_setup[${i}]`, c]);
    if (agent.setupScript !== undefined) steps.push(['session_setup_script', shellQuote(agent.setupScript)]);
    const host = this.remoteHost(record);
    const dir = host ? workDirOnHost(host, record) : programDir(record);
    for (const [what, command] of steps) {
      const failure = await this.run(record, agent, what, command, dir);
      if (failure) await session.recordLifecycle('session.updated', failure);
    }
  }

  /** Runs one command; returns why it failed (naming the log with its output), or undefined. */
  private async run(
    record: SessionRecord,
    agent: AgentDefinition,
    what: string,
    template: string,
    programDir: string,
  ): Promise<string | undefined> {
    const vars = templateFields(record, agent, this.host, programDir);
    let command: string;
    try {
      command = fillIn(template, vars);
    } catch (err) {
      return `${what}: ${(err as Error).message}`;
    }
    const timeoutMs = this.host.timeoutMs();
    const host = this.remoteHost(record);
    const result = host
      ? await runOnHost(host, command, programDir, this.hostEnvironment(record, agent, programDir), timeoutMs)
      : await this.host.commands.run(command, {
          cwd: existsSync(programDir) ? programDir : this.host.cityRoot,
          env: this.environment(record, agent, programDir),
          timeoutMs,
        });
    const failure = failureOf(result, timeoutMs);
    this.log(
      record,
      `${what}: ${command}\n${result.output}${result.output.endsWith('\n') || !result.output ? '' : '\n'}→ ${failure ?? 'ok'} (${result.durationMs} ms)`,
    );
    if (!failure) return undefined;
    const last = result.output.trim().split('\n').at(-1);
    const where = join(this.host.sessionsDir, record.id, START_LOG_FILE);
    return `${what} \`${command}\` ${failure}${last ? `: ${last}` : ''} (its output: ${where})`;
  }

  private environment(record: SessionRecord, agent: AgentDefinition, programDir: string): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      ...this.host.env,
      ...agent.config.env,
      CTL_CITY: this.host.cityName,
      CTL_CITY_ROOT: this.host.cityRoot,
      CTL_AGENT: agent.name,
      CTL_SESSION_ID: record.id,
      CTL_SESSION_NAME: record.session_name,
      CTL_WORK_DIR: programDir,
      // The reference's name for the session a setup command is run for.
      GC_SESSION: record.session_name,
    };
    if (this.host.ctlBin !== undefined) env.PATH = ctlFirstOnPath(this.host.ctlBin, env.PATH);
    return env;
  }

  /**
   * On a host only named variables travel (its agent's `env` and the CTL_* names, as its program's), never this
   * machine's environment or the city's directory; its login PATH is the host's.
   */
  private hostEnvironment(record: SessionRecord, agent: AgentDefinition, programDir: string): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(agent.config.env ?? {})) if (value !== undefined) env[name] = value;
    return {
      ...env,
      CTL_CITY: this.host.cityName,
      CTL_AGENT: agent.name,
      CTL_SESSION_ID: record.id,
      CTL_SESSION_NAME: record.session_name,
      CTL_WORK_DIR: programDir,
      GC_SESSION: record.session_name,
    };
  }

  private remoteHost(record: SessionRecord): Host | undefined {
    if (record.host === undefined || !this.host.hostOf) return undefined;
    const host = this.host.hostOf(record);
    return host.remote ? host : undefined;
  }

  /** The overlays laid down in `staged` here, staged into the session's directory there and merged into its work. */
  private async overlayOnHost(host: Host, record: SessionRecord, staged: string, workDir: string): Promise<void> {
    const files = readdirSync(staged, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(staged, join(entry.parentPath, entry.name)));
    if (files.length === 0) return;
    const there = posix.join(host.sessionDir(record.id, ''), OVERLAY_STAGING);
    await host.stage(staged, files, there);
    const merged = await host.run(['sh', '-c', MERGE_OVERLAY, 'sh', there, workDir], {
      timeoutMs: this.host.timeoutMs(),
    });
    rmSync(staged, { recursive: true, force: true });
    if (merged.code !== 0) {
      throw new Error(`its overlays could not be laid into ${workDir} on ${host.name}: ${merged.stderr.trim()}`);
    }
  }

  private log(record: SessionRecord, text: string): void {
    const path = join(this.host.sessionsDir, record.id, START_LOG_FILE);
    try {
      // A session restarted often (max_session_age) keeps its latest runs, not all of them.
      if ((statSync(path, { throwIfNoEntry: false })?.size ?? 0) > START_LOG_MAX_BYTES) {
        const kept = readFileSync(path, 'utf8').slice(-START_LOG_MAX_BYTES / 2);
        writeFileSync(path, kept.slice(kept.indexOf('\n[') + 1));
      }
      appendFileSync(path, `[${new Date().toISOString()}] ${text}\n`);
    } catch (err) {
      this.host.logger.warn({ err, session: record.id }, 'could not keep the output of a start command');
    }
  }
}

/** A start command on a remote host, in its work dir there, bounded as here; its output as a local one's. */
async function runOnHost(
  host: Host,
  command: string,
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<CommandResult> {
  const started = Date.now();
  // stderr into stdout, as a local command's output interleaves them.
  const result = await host.run(['sh', '-c', `exec 2>&1\n${command}`], { cwd, env, timeoutMs });
  return {
    exitCode: result.code,
    signal: null,
    output: result.stdout,
    stdout: result.stdout,
    durationMs: Date.now() - started,
    timedOut: result.timedOut,
    ...(result.code === null && !result.timedOut ? { error: result.stderr.trim() || 'no answer from the host' } : {}),
  };
}

function failureOf(result: CommandResult, timeoutMs: number): string | undefined {
  if (result.timedOut) return `timed out after ${timeoutMs} ms`;
  if (result.error) return `could not run: ${result.error}`;
  if (result.exitCode !== 0) return `exited with ${result.signal ?? `code ${result.exitCode}`}`;
  return undefined;
}

/** The reference's template fields (`{{.WorkDir}}`, …) a start command may use, for one session. */
function templateFields(
  record: SessionRecord,
  agent: AgentDefinition,
  host: Pick<AgentStartHost, 'cityName' | 'cityRoot' | 'rigRoot'>,
  programDir: string,
): Record<string, string> {
  return {
    Session: record.session_name,
    Agent: agent.name,
    AgentBase: agent.base,
    Rig: agent.rig ?? '',
    RigRoot: (agent.rig !== undefined ? host.rigRoot(agent.rig) : undefined) ?? '',
    CityRoot: host.cityRoot,
    CityName: host.cityName,
    WorkDir: programDir,
    // Where the agent was declared: its pack (whose assets/ its commands name), else the city.
    ConfigDir: agent.config.pack_dir ?? host.cityRoot,
  };
}

/** A command with its `{{.Name}}` fields filled in; one it does not know is an error naming it. */
export function fillIn(template: string, vars: Record<string, string>): string {
  return template.replace(/\{\{\s*\.(\w+)\s*\}\}/g, (_all, name: string) => {
    if (!Object.hasOwn(vars, name)) {
      throw new Error(`{{.${name}}} is not a field start commands know (${Object.keys(vars).join(', ')})`);
    }
    return vars[name]!;
  });
}

/** A rig's directory, absolute. */
export function rigRootOf(cityRoot: string, rigs: { name: string; path?: string }[], rig: string): string | undefined {
  const path = rigs.find((r) => r.name === rig)?.path;
  return path === undefined ? undefined : resolve(cityRoot, path);
}
