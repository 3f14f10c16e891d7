import { localHost } from '../hosts/local-host.js';
import { optionProblems, PERMISSION_MODE_OPTION } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { QueuedMessage } from './queue.js';
import type { RuntimeOptions } from './runtime.js';
import { canResume } from './runtimes.js';
import { handDefaultsFile } from './defaults-file.js';
import { preparePriming } from './priming.js';
import { onHost } from './remote-launch.js';
import { ensureWorkDir, sessionEnvironment } from './session-environment.js';
import type { SessionContext } from './session-context.js';
import type { SessionRecord } from './session-store.js';
import type { Session } from './session.js';

/** What one start of a session's program is, apart from where its output goes. */
export interface Launch {
  ctx: SessionContext;
  record: SessionRecord;
  /** The session's own state directory. */
  dir: string;
  provider: ResolvedProvider;
  /** Where the program runs: the agent's directory, or its place in the session's worktree. */
  workDir: string;
  /** The bead the session holds as it starts, if any. */
  bead: string | undefined;
  resumeKey: string | undefined;
  firstMessage: string | undefined;
  /** The options it starts with (checked against its provider). */
  options: Record<string, string>;
}

/**
 * The runtime options for one start: its environment (ctl first on PATH, the CTL_* variables, an agent's env, the
 * provider's defaults file) and, for an agent, its role prompt primed the way its provider takes one.
 */
export function launchOptions(l: Launch): RuntimeOptions {
  const agent = l.record.kind === 'agent';
  const logger = l.ctx.logger.child({ session: l.record.id });
  const host = l.ctx.hostOf?.(l.record) ?? localHost;
  // Only named variables travel to a host: never the controller's own environment (onHost translates the rest).
  const place = host.remote ? { ...l.ctx, env: {} } : l.ctx;
  const env = sessionEnvironment(place, l.record, l.provider, {
    dir: l.dir,
    bead: l.bead,
    ...(agent ? { agentEnv: l.ctx.agentEnv?.(l.record) } : {}),
  });
  if (l.provider.defaults_file) handDefaultsFile(l.provider.defaults_file, env, l.dir, logger);
  return {
    sessionId: l.record.id,
    provider: l.provider,
    host,
    workDir: l.workDir,
    env,
    stateDir: l.dir,
    resumeKey: l.resumeKey,
    // A mode chosen for the session (at create, or changed since) wins over one among its defaults.
    permissionMode: l.record.permission_mode ?? l.options[PERMISSION_MODE_OPTION],
    options: l.options,
    priming: preparePriming(
      l.dir,
      l.provider,
      agent ? l.ctx.agentPrompt?.(l.record, l.bead) : undefined,
      agent,
      l.ctx.ctlBin,
    ),
    firstMessage: l.firstMessage,
    startTimeoutMs: l.ctx.startTimeoutMs,
    logger,
  };
}

/** One start of a session's program, worked out: its runtime options, what it resumes, its first message. */
export interface PreparedLaunch {
  launch: RuntimeOptions;
  resumeKey: string | undefined;
  /** The queued message handed over on the command line, where the provider takes one there. */
  first: QueuedMessage | undefined;
}

/**
 * Works out one start of a session's program: its directory (its own worktree, when it has one, made before the
 * program starts and found again on later starts) with what its agent lays there first, the bead it holds, its
 * options checked again, the conversation it resumes; on a host over ssh, its files staged there and its paths the
 * host's. What it throws fails the start.
 */
export async function prepareLaunch(
  session: Session,
  ctx: SessionContext,
  provider: ResolvedProvider,
  firstMessage: () => QueuedMessage | undefined,
): Promise<PreparedLaunch> {
  const record = session.record;
  ensureWorkDir(record.work_dir, ctx.cityRoot);
  const workDir = await ctx.worktrees.prepare(record, (base) => session.saveFields({ base }));
  await ctx.beforeProgram?.(session, workDir);
  const bead = ctx.heldBead?.(session);
  const options = session.options(provider);
  const [wrong] = optionProblems(provider, options);
  // Options checked when they were given, and a provider changed since: said, never passed on half-checked.
  if (wrong) throw new Error(`its option ${wrong.key} cannot be used: ${wrong.message}`);
  const resumeKey = canResume(provider) ? record.provider_session_key : undefined;
  const first = provider.prompt_mode !== 'stdin' ? firstMessage() : undefined;
  const launch = await onHost(
    launchOptions({
      ctx,
      record,
      dir: session.dir,
      provider,
      workDir,
      bead,
      resumeKey,
      firstMessage: first?.text,
      options,
    }),
    ctx.ctlBin,
    ctx.credentialFor ? () => ctx.credentialFor!(record, ctx.hostOf!(record)) : undefined,
  );
  return { launch, resumeKey, first };
}
