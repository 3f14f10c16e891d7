import { localHost } from '../hosts/local-host.js';
import { PERMISSION_MODE_OPTION } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import type { RuntimeOptions } from './runtime.js';
import { handDefaultsFile } from './defaults-file.js';
import { preparePriming } from './priming.js';
import { sessionEnvironment } from './session-environment.js';
import type { SessionContext } from './session-context.js';
import type { SessionRecord } from './session-store.js';

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
