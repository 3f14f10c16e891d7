import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import type { ProviderReadinessResponse, ReadinessItem, ReadinessResponse } from './dto/readiness.js';
import { Problem } from './http/problem.js';
import { withScratchHome } from './scratch-home.js';

// Real probes of the agent command-line tools a city can use: is the binary on PATH, and is it signed in.

interface ProbeSpec {
  kind: 'provider' | 'tool';
  displayName: string;
  binary: string;
  /** Whether the installed tool is authenticated; absent when we know no way to tell. */
  auth?: (binary: string, env: NodeJS.ProcessEnv) => Promise<{ status: string; detail: string }>;
}

const PROBES: Record<string, ProbeSpec> = {
  antigravity: { kind: 'provider', displayName: 'Antigravity', binary: 'antigravity' },
  claude: { kind: 'provider', displayName: 'Claude Code', binary: 'claude', auth: claudeAuth },
  codex: { kind: 'provider', displayName: 'Codex CLI', binary: 'codex', auth: codexAuth },
  gemini: { kind: 'provider', displayName: 'Gemini CLI', binary: 'gemini', auth: geminiAuth },
  mimocode: { kind: 'provider', displayName: 'MimoCode', binary: 'mimocode' },
  pi: { kind: 'provider', displayName: 'Pi', binary: 'pi' },
  github_cli: { kind: 'tool', displayName: 'GitHub CLI', binary: 'gh', auth: githubAuth },
};

export const SUPPORTED_PROVIDERS = Object.keys(PROBES).filter((name) => PROBES[name]!.kind === 'provider');
export const DEFAULT_READINESS_ITEMS = ['claude', 'codex', 'gemini', 'github_cli'];
export const DEFAULT_PROVIDERS = ['claude', 'codex', 'gemini'];

const PROBE_TIMEOUT_MS = 5000;

/** Probes with a short cache (2 s by default), since a page of readiness calls should not spawn tools each time. */
export class ReadinessProber {
  private readonly cache = new Map<string, { at: number; item: Promise<ReadinessItem> }>();

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly cacheMs = 2000,
  ) {}

  isKnown(name: string): boolean {
    return Object.hasOwn(PROBES, name);
  }

  probe(name: string, fresh = false): Promise<ReadinessItem> {
    const cached = this.cache.get(name);
    if (!fresh && cached && Date.now() - cached.at < this.cacheMs) return cached.item;
    const item = probe(name, this.env);
    this.cache.set(name, { at: Date.now(), item });
    return item;
  }

  async probeAll(names: string[], fresh = false): Promise<Record<string, ReadinessItem>> {
    const items = await Promise.all(names.map((name) => this.probe(name, fresh)));
    return Object.fromEntries(items.map((item) => [item.name, item]));
  }

  /**
   * Probes a provider that runs `command`: installed when its program (the command's first word, past any
   * `NAME=value` assignments) is an executable path or found on PATH; `auth`, a probe's name (`claude`, …), also
   * checks that the program found is signed in, as that probe does.
   */
  probeCommand(target: CommandTarget, fresh = false): Promise<ReadinessItem> {
    const key = `command\0${target.name}\0${target.command}\0${target.auth ?? ''}\0${target.cwd}\0${JSON.stringify(target.env ?? {})}`;
    const cached = this.cache.get(key);
    if (!fresh && cached && Date.now() - cached.at < this.cacheMs) return cached.item;
    const item = probeCommand(target, { ...this.env, ...target.env });
    this.cache.set(key, { at: Date.now(), item });
    return item;
  }

  /** The answer of a readiness route: the comma-separated `items` asked for (unknown ones: a 400), else `defaults`. */
  async readiness(items: string | undefined, defaults: string[], fresh = false): Promise<ReadinessResponse> {
    const names = parseProbeList(items, defaults, 'items', (n) => this.isKnown(n));
    return { items: await this.probeAll(names, fresh) };
  }

  /** The answer of a provider-readiness route: the `providers` asked for (unknown ones: a 400), else the defaults. */
  async providerReadiness(providers: string | undefined, fresh = false): Promise<ProviderReadinessResponse> {
    const names = parseProbeList(providers, DEFAULT_PROVIDERS, 'providers', (n) => SUPPORTED_PROVIDERS.includes(n));
    return providerReadinessBody(await this.probeAll(names, fresh));
  }
}

async function probe(name: string, env: NodeJS.ProcessEnv): Promise<ReadinessItem> {
  const spec = Object.hasOwn(PROBES, name) ? PROBES[name] : undefined;
  if (!spec) throw new Error(`unknown readiness item ${name}`);
  const base = { name, kind: spec.kind, display_name: spec.displayName };
  const binary = findOnPath(spec.binary, env.PATH ?? '');
  if (!binary) {
    return { ...base, status: 'not_installed', detail: `${spec.binary} not found on PATH` };
  }
  if (!spec.auth) {
    return { ...base, status: 'configured', detail: `${binary}; authentication is not checked for this tool` };
  }
  try {
    return { ...base, ...(await spec.auth(binary, env)) };
  } catch (err) {
    return { ...base, status: 'probe_error', detail: (err as Error).message.split('\n')[0] };
  }
}

/** A provider to probe by its command line. */
export interface CommandTarget {
  name: string;
  displayName: string;
  command: string;
  /** Where a relative program path (`./agent.sh`) is found: the directory sessions run in. */
  cwd: string;
  /** The probe whose sign-in check applies (`claude`, `codex`, `gemini`), for providers built on one. */
  auth?: string;
  /** The provider's own environment, over the process's: its sessions run with it, so its probe does too. */
  env?: Record<string, string>;
}

/** The program a command runs: its first word past `NAME=value` assignments, unquoted. */
export function commandProgram(command: string): string | undefined {
  const words = command.trim().split(/\s+/);
  const word = words.find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
  return word?.replace(/^(['"])(.*)\1$/, '$2') || undefined;
}

async function probeCommand(target: CommandTarget, env: NodeJS.ProcessEnv): Promise<ReadinessItem> {
  const base = { name: target.name, kind: 'provider', display_name: target.displayName };
  const program = commandProgram(target.command);
  if (program === undefined) return { ...base, status: 'invalid_configuration', detail: 'the command is empty' };
  let binary: string | undefined;
  if (program.includes('/')) {
    const path = isAbsolute(program) ? program : join(target.cwd, program);
    if (!isExecutableFile(path)) {
      return { ...base, status: 'not_installed', detail: `${path} is not an executable file` };
    }
    binary = path;
  } else {
    binary = findOnPath(program, env.PATH ?? '');
    if (!binary) return { ...base, status: 'not_installed', detail: `${program} not found on PATH` };
  }
  const auth = target.auth === undefined ? undefined : PROBES[target.auth]?.auth;
  if (!auth) return { ...base, status: 'configured', detail: binary };
  try {
    return { ...base, ...(await auth(binary, env)) };
  } catch (err) {
    return { ...base, status: 'probe_error', detail: (err as Error).message.split('\n')[0] };
  }
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable named `binary` on a PATH string. */
export function findOnPath(binary: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, binary);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function homeOf(env: NodeJS.ProcessEnv): string {
  return env.HOME ?? homedir();
}

/** Where Claude Code keeps a person's sign-in, relative to HOME. */
const CLAUDE_CREDENTIAL_FILES = ['.claude.json', join('.claude', '.credentials.json')];

async function claudeAuth(binary: string, env: NodeJS.ProcessEnv) {
  // Loaded on first use: most processes that import this module never probe a tool.
  const { execa } = await import('execa');
  // `claude auth status` writes to the home it runs in (it creates ~/.claude.json): it runs in a scratch HOME
  // with copies of the sign-in files, so a probe changes nothing of the person's. An API key in the
  // environment (the provider's env included) counts as it would for a session.
  const result = await withScratchHome(homeOf(env), CLAUDE_CREDENTIAL_FILES, (scratch) =>
    execa(binary, ['auth', 'status', '--json'], {
      env: { ...env, HOME: scratch },
      extendEnv: false,
      reject: false,
      timeout: PROBE_TIMEOUT_MS,
      stdin: 'ignore',
    }),
  );
  if (result.timedOut) return { status: 'probe_error', detail: `claude auth status timed out` };
  if (result.exitCode !== 0) {
    return { status: 'needs_auth', detail: firstLine(result.stderr || result.stdout) || 'not signed in' };
  }
  try {
    const status = JSON.parse(result.stdout) as { loggedIn?: boolean; authMethod?: string };
    if (status.loggedIn === false) return { status: 'needs_auth', detail: 'claude reports it is not signed in' };
    if (status.authMethod) return { status: 'configured', detail: `${binary}; signed in (${status.authMethod})` };
  } catch {
    // Older versions print text; a zero exit is what counts.
  }
  return { status: 'configured', detail: binary };
}

/**
 * Codex is ready when it can reach its model: a model provider of its config that takes its key from the
 * environment (`env_key`) needs that variable set (`codex login status` knows nothing of those and says "Not
 * logged in"); otherwise an OPENAI_API_KEY, or what `codex login status` says. That runs in a scratch
 * CODEX_HOME with copies of its config and sign-in: codex writes helper files into the home it runs in.
 */
async function codexAuth(binary: string, env: NodeJS.ProcessEnv) {
  const codexHome = env.CODEX_HOME ?? join(homeOf(env), '.codex');
  const provider = await codexModelProvider(join(codexHome, 'config.toml'));
  if (provider?.envKey) {
    return env[provider.envKey]
      ? { status: 'configured', detail: `${binary}; model provider ${provider.name}, key in ${provider.envKey}` }
      : { status: 'needs_auth', detail: `model provider ${provider.name} needs ${provider.envKey} set` };
  }
  if (provider) return { status: 'configured', detail: `${binary}; model provider ${provider.name} (no key)` };
  if (env.OPENAI_API_KEY) return { status: 'configured', detail: `${binary}; OPENAI_API_KEY set` };
  // Loaded on first use: most processes that import this module never probe a tool.
  const { execa } = await import('execa');
  const result = await withScratchHome(codexHome, ['auth.json', 'config.toml'], (scratch) =>
    execa(binary, ['login', 'status'], {
      env: { ...env, CODEX_HOME: scratch },
      extendEnv: false,
      reject: false,
      timeout: PROBE_TIMEOUT_MS,
      stdin: 'ignore',
    }),
  );
  if (result.timedOut) return { status: 'probe_error', detail: 'codex login status timed out' };
  const said = firstLine(result.stdout) || firstLine(result.stderr.replace(/^WARNING:.*\n?/gm, ''));
  if (result.exitCode === 0) return { status: 'configured', detail: `${binary}; ${said}` };
  return { status: 'needs_auth', detail: `${said || 'not logged in'}; run codex login` };
}

/** The model provider a Codex config selects other than OpenAI's own, with the variable its key comes from. */
async function codexModelProvider(file: string): Promise<{ name: string; envKey?: string } | undefined> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const { parse } = await import('smol-toml');
  const config = parse(text) as { model_provider?: unknown; model_providers?: Record<string, { env_key?: unknown }> };
  const name = typeof config.model_provider === 'string' ? config.model_provider : undefined;
  if (name === undefined || name === 'openai') return undefined;
  const envKey = config.model_providers?.[name]?.env_key;
  return { name, ...(typeof envKey === 'string' ? { envKey } : {}) };
}

async function geminiAuth(binary: string, env: NodeJS.ProcessEnv) {
  if (env.GEMINI_API_KEY || env.GOOGLE_API_KEY) return { status: 'configured', detail: `${binary}; API key set` };
  const file = join(homeOf(env), '.gemini', 'settings.json');
  const settings = readJson(file) as
    { selectedAuthType?: string; security?: { auth?: { selectedType?: string } } } | undefined;
  const selected = settings?.selectedAuthType ?? settings?.security?.auth?.selectedType;
  if (selected) return { status: 'configured', detail: `${binary}; auth ${selected}` };
  return { status: 'needs_auth', detail: `no authentication selected in ${file}` };
}

async function githubAuth(binary: string, env: NodeJS.ProcessEnv) {
  // Loaded on first use: most processes that import this module never probe a tool.
  const { execa } = await import('execa');
  const result = await execa(binary, ['auth', 'status'], {
    env,
    extendEnv: false,
    reject: false,
    timeout: PROBE_TIMEOUT_MS,
    stdin: 'ignore',
  });
  if (result.timedOut) return { status: 'probe_error', detail: 'gh auth status timed out' };
  if (result.exitCode === 0) return { status: 'configured', detail: binary };
  return {
    status: 'needs_auth',
    detail: firstLine(result.stderr || result.stdout) || 'not signed in; run gh auth login',
  };
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

/** A comma-separated list of probe names from a query parameter; unknown names are a 400. */
export function parseProbeList(
  value: string | undefined,
  fallback: string[],
  what: string,
  known: (name: string) => boolean,
): string[] {
  if (value === undefined || value.trim() === '') return fallback;
  const names = [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = names.filter((n) => !known(n));
  if (unknown.length) throw new Problem('invalid-request', `invalid: unknown ${what}: ${unknown.join(', ')}`);
  return names;
}

/** The body of a provider-readiness answer, from probe results. */
export function providerReadinessBody(items: Record<string, ReadinessItem>): ProviderReadinessResponse {
  return {
    providers: Object.fromEntries(
      Object.values(items).map((i) => [
        i.name,
        { display_name: i.display_name, status: i.status, ...(i.detail ? { detail: i.detail } : {}) },
      ]),
    ),
  };
}
