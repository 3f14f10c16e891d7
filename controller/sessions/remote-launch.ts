import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { remoteApiEnv } from '../hosts/host-gateway.js';
import { workDirOnHost } from '../worktrees/remote-worktree.js';
import { DEFAULTS_FILE } from './defaults-file.js';
import { CONTEXT_DIR, SETTINGS_FILE, SYSTEM_PROMPT_FILE, type Priming } from './priming.js';
import type { RuntimeOptions } from './runtime.js';
import { HELD_BEAD_FILE, SHELL_ENV_FILE, ZSH_DIR } from './session-environment.js';

/**
 * The files of a session's directory its program reads (its prompt, its settings and hooks, its defaults, its
 * shells' start-up files, the bead it holds): what a host gets. Transcripts and the runtime's own files stay here.
 */
const PROGRAM_FILES = [
  SYSTEM_PROMPT_FILE,
  SETTINGS_FILE,
  DEFAULTS_FILE,
  SHELL_ENV_FILE,
  HELD_BEAD_FILE,
  CONTEXT_DIR,
  ZSH_DIR,
];
/** Where in a session's directory the host's copies are made before they are staged. */
const STAGING_DIR = 'on-host';

/**
 * A start's options as its host needs them. This machine: unchanged. A host over ssh: prepared (connected, ctl
 * shipped), the session's program files copied into its directory there — each with this machine's paths (the
 * session's directory, the controller's `ctl` launcher) read as the host's — and the environment, the priming
 * files said in the host's paths; its working directory is already the host's (`SessionWorktrees.prepare` made it
 * there: its worktree, or a directory of its own). The environment is already only named variables
 * (program-launch.ts); the city's own directory is not on a host, so `CTL_CITY_ROOT` does not travel, and its
 * `ctl` reaches the city through the host's tunnel with a credential of the session's own (`CTL_API`, `CTL_TOKEN`).
 */
export async function onHost(
  options: RuntimeOptions,
  localCtlBin: string | undefined,
  /** Mints the session's credential for its host (session-credentials.ts); none: its ctl there has no API. */
  credential?: () => string,
): Promise<RuntimeOptions> {
  const host = options.host;
  if (!host.remote) return options;
  await host.prepare();
  const localDir = options.stateDir;
  const hostDir = host.sessionDir(options.sessionId, localDir);
  const pairs: [string, string][] = [[localDir, hostDir]];
  if (localCtlBin !== undefined) pairs.push([localCtlBin, host.ctlBin(localCtlBin)]);
  const translate = (text: string) => pairs.reduce((out, [from, to]) => out.replaceAll(from, to), text);
  const staging = join(localDir, STAGING_DIR);
  rmSync(staging, { recursive: true, force: true });
  const files: string[] = [];
  for (const name of PROGRAM_FILES) {
    for (const file of _filesOf(localDir, name)) {
      const to = join(staging, file);
      mkdirSync(join(to, '..'), { recursive: true, mode: 0o700 });
      writeFileSync(to, translate(readFileSync(join(localDir, file), 'utf8')), {
        mode: statSync(join(localDir, file)).mode & 0o777,
      });
      files.push(file);
    }
  }
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  await host.stage(staging, files, hostDir);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(options.env)) env[name] = value === undefined ? value : translate(value);
  delete env.CTL_CITY_ROOT;
  // Its worktree is the one on the host (SessionWorktrees.prepare made it there).
  if (env.CTL_WORKTREE !== undefined) env.CTL_WORKTREE = workDirOnHost(host, { id: options.sessionId });
  // Its ctl reaches its city through the host's tunnel, as its session and nothing more.
  const apiSocket = host.apiSocket();
  if (apiSocket !== undefined && credential) {
    Object.assign(env, remoteApiEnv({ remoteSocketPath: apiSocket, credential: credential() }));
  }
  return {
    ...options,
    env,
    priming: _translatedPriming(options.priming, translate),
  };
}

function _filesOf(dir: string, name: string): string[] {
  const path = join(dir, name);
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [name];
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

function _translatedPriming(priming: Priming | undefined, translate: (text: string) => string): Priming | undefined {
  if (!priming) return priming;
  const { systemPrompt, settingsFile } = priming;
  return {
    ...(systemPrompt
      ? {
          systemPrompt: {
            text: systemPrompt.text,
            file: translate(systemPrompt.file),
            ...(systemPrompt.contextDir ? { contextDir: translate(systemPrompt.contextDir) } : {}),
          },
        }
      : {}),
    ...(settingsFile ? { settingsFile: translate(settingsFile) } : {}),
  };
}
