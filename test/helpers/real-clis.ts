import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../shared/paths.js';

// The real agent CLIs the session tests drive: the versions package.json pins as dev dependencies (what CI tests,
// the newest we follow), or, to check one's own, the version an environment variable names —
// CTL_TEST_CLAUDE_VERSION=2.1.197 or CTL_TEST_CODEX_VERSION=0.160.0 (CTL_TEST_OPENCODE_VERSION,
// CTL_TEST_CLAUDE_ACP_VERSION, CTL_TEST_CODEX_ACP_VERSION for OpenCode and the ACP adapters;
// CTL_TEST_GEMINI_VERSION, CTL_TEST_QWEN_VERSION for Gemini CLI and Qwen Code) — installed once with npm into a cache
// folder (CTL_TEST_CLI_CACHE, default ~/.cache/ctl/agent-clis) and taken from there. docs/agent-clis.md lists
// the versions tested and what changed between them.

export interface RealCli {
  /** The executable to run. */
  bin: string;
  /** What its `--version` says. */
  version: string;
  /** Where it comes from: the dev dependency, or the cache folder an environment variable asked for. */
  source: string;
}

interface CliPackage {
  pkg: string;
  bin: string;
  env: string;
  /** Its version is its package's (the program has no `--version`, or answers it slowly). */
  packageVersion?: boolean;
  /**
   * The version tested when it is no dev dependency: installed on first use into the cache folder, like a version
   * an environment variable names. For packages whose lock entries `npm ci` cannot satisfy from the registry CI
   * uses (their optional per-platform packages for other systems are not on it, and `npm ci` refuses a lock
   * without them).
   */
  pinned?: string;
}

const CLIS = {
  claude: { pkg: '@anthropic-ai/claude-code', bin: 'claude', env: 'CTL_TEST_CLAUDE_VERSION' },
  codex: { pkg: '@openai/codex', bin: 'codex', env: 'CTL_TEST_CODEX_VERSION' },
  ...ACP_CLIS(),
  ...GEMINI_FAMILY_CLIS(),
} satisfies Record<string, CliPackage>;

/** Gemini CLI and its fork Qwen Code (their tests: test/sessions-gemini.test.ts, test/sessions-qwen.test.ts). */
function GEMINI_FAMILY_CLIS() {
  return {
    gemini: { pkg: '@google/gemini-cli', bin: 'gemini', env: 'CTL_TEST_GEMINI_VERSION' },
    qwen: { pkg: '@qwen-code/qwen-code', bin: 'qwen', env: 'CTL_TEST_QWEN_VERSION', pinned: '0.24.4' },
  } as const;
}

/** OpenCode and the ACP adapters of Claude Code and Codex (their tests: test/sessions-*-acp.test.ts, opencode). */
function ACP_CLIS() {
  return {
    opencode: {
      pkg: 'opencode-ai',
      bin: 'opencode',
      env: 'CTL_TEST_OPENCODE_VERSION',
      packageVersion: true,
      pinned: '1.18.33',
    },
    'claude-acp': {
      pkg: '@agentclientprotocol/claude-agent-acp',
      bin: 'claude-agent-acp',
      env: 'CTL_TEST_CLAUDE_ACP_VERSION',
      packageVersion: true,
    },
    'codex-acp': {
      pkg: '@zed-industries/codex-acp',
      bin: 'codex-acp',
      env: 'CTL_TEST_CODEX_ACP_VERSION',
      packageVersion: true,
    },
  } as const;
}

export type RealCliName = keyof typeof CLIS;

/** How long installing a CLI may take (a few hundred MB from the registry). */
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/**
 * The CLI to test: the one the environment names (or the pinned one of a CLI that is no dev dependency),
 * installed on first use, else the dev dependency.
 */
export function realCli(name: RealCliName): RealCli {
  const cli: CliPackage = CLIS[name];
  const { pkg, bin, env } = cli;
  const version = (root: string, path: string) =>
    cli.packageVersion ? packageVersion(join(root, 'node_modules', pkg)) : versionOf(path);
  const named = process.env[env];
  const wanted = named || cli.pinned;
  if (!wanted) {
    const path = join(packageRoot, 'node_modules', '.bin', bin);
    if (!existsSync(path)) throw new Error(`${path} is missing: npm ci installs it (a dev dependency)`);
    return { bin: path, version: version(packageRoot, path), source: 'dev dependency' };
  }
  if (!/^[0-9A-Za-z.+-]+$/.test(wanted)) throw new Error(`${env}=${wanted}: not a package version`);
  const cache = process.env.CTL_TEST_CLI_CACHE ?? join(homedir(), '.cache', 'ctl', 'agent-clis');
  const dir = join(cache, `${pkg.replace('/', '+')}@${wanted}`);
  const path = join(dir, 'node_modules', '.bin', bin);
  if (!existsSync(path)) install(pkg, wanted, dir);
  const source = named ? `${env}=${wanted}` : `pinned, installed on first use`;
  return { bin: path, version: version(dir, path), source: `${source} (${dir})` };
}

/**
 * `npm install pkg@version` into its own folder, built beside it and moved into place whole, so that a failed or
 * interrupted install never leaves a folder that looks installed. Its install script (Claude Code's fetches
 * nothing: it links the platform binary) is allowed by name.
 */
function install(pkg: string, version: string, dir: string): void {
  const building = `${dir}.installing-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  writeFileSync(
    join(building, 'package.json'),
    JSON.stringify({ name: 'ctl-agent-cli', private: true, allowScripts: { [pkg]: true } }, null, 2),
  );
  try {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--save-exact', `${pkg}@${version}`], {
      cwd: building,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: INSTALL_TIMEOUT_MS,
    });
    rmSync(dir, { recursive: true, force: true });
    renameSync(building, dir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`cannot install ${pkg}@${version}: ${stderr || (err as Error).message}`, { cause: err });
  }
}

function packageVersion(dir: string): string {
  return `${(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version} (package)`;
}

function versionOf(bin: string): string {
  return execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
}
