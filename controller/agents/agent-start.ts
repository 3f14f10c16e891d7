import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
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
}

/** What a session tells of itself while its start commands run. */
export interface StartingSession {
  readonly record: SessionRecord;
  saveFields(changed: Partial<SessionRecord>): void;
  recordLifecycle(type: 'session.updated', reason?: string): Promise<void>;
}

/**
 * What an agent's configuration runs around each start of one of its sessions, as the reference does: before
 * the program starts, its `overlay_dir` and its packs' `overlay/` laid into the work directory and its `pre_start` commands (one failing:
 * the session does not start, and says why); once the program is ready, its `session_setup` commands and
 * `session_setup_script` (a failure is recorded; the session runs on). Each command is a child of the
 * controller in its own process group, under `[session] setup_timeout`; what it printed is kept in the session
 * directory's `start-commands.log`, and a failure's last line goes into the session's reason or event.
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
    for (const [what, dir] of overlays) {
      const copied = copyOverlay(dir, programDir);
      if (copied.skipped.length) this.log(record, `${what} ${dir}: skipped ${copied.skipped.join('; ')}`);
    }
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
    for (const [what, command] of steps) {
      const failure = await this.run(record, agent, what, command, programDir(record));
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
    const result = await this.host.commands.run(command, {
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
