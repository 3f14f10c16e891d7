import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parseToml } from '../../shared/config/toml-syntax.js';
import { parseAgentTable, type CityAgentConfig, type CityConfig } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { MAX_TOML_BYTES, tooLarge } from '../../shared/config/toml-file.js';
import { OutsideTree, outsideTree, readWithin } from '../../shared/fs/within.js';
import { optionProblems } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { Problem } from '../../shared/http/problem.js';
import { TemplateError, TemplateLimitError } from './prompt-template.js';
import { legacyPromptValues, renderTemplatedPrompt, type SessionPromptValues } from './prompt-render.js';
import { isWithin, repositoryOf, worktreesRoot } from '../worktrees/repository.js';
import type { AgentWorktree } from '../worktrees/session-worktrees.js';
import { DEFAULT_REMOTE } from '../worktrees/bead-push.js';
import { remoteProblem, remotesOf } from '../worktrees/rig-remote.js';
import { auditKeys, type KeyFinding } from '../config-schema/key-audit.js';
import { AGENT_TOML } from '../config-schema/reference-keys.js';

/** One agent as the controller runs it: its declaration, resolved against the city's providers and agents. */
export interface AgentDefinition {
  /** `base`, or `dir/base` for an agent of a rig: how paths, routing and `depends_on` name it. */
  name: string;
  base: string;
  rig?: string;
  config: CityAgentConfig;
  /** The provider its sessions start from (undefined when it names none the city has). */
  provider?: ResolvedProvider;
  providerName?: string;
  workDir: string;
  /** Sessions always kept (running, or asleep when idle). */
  min: number;
  max: number;
  isPool: boolean;
  available: boolean;
  unavailableReason?: string;
  /** What its sessions are started from, hashed: a session started from another fingerprint has drifted. */
  fingerprint: string;
  /** With `isolation = "worktree"`: what each of its sessions' worktrees is made from. */
  worktree?: AgentWorktree;
  /** `overlay_dir`, absolute. */
  overlayDir?: string;
  /** `session_setup_script`, absolute. */
  setupScript?: string;
}

/** Where an agent directory keeps its declaration and its prompt. */
const AGENT_FILE = 'agent.toml';
const PROMPT_FILES: [string, boolean][] = [
  ['prompt.template.md', true],
  ['prompt.md', false],
];

/**
 * Every agent the city declares: `[[agent]]` tables of `city.toml`, then one per `agents/<name>/` directory
 * (its `agent.toml`, optional, and its `prompt.md` or `prompt.template.md`). Throws a ConfigError naming the
 * file and key of anything malformed.
 */
export function declaredAgents(
  root: string,
  config: CityConfig,
  skipped?: string[],
  edited?: { file: string; text: string },
  findings?: KeyFinding[],
): CityAgentConfig[] {
  return [...config.agents, ...agentDirectories(root, '', skipped, edited, findings)];
}

/**
 * The agents of a directory's `agents/<name>/` subdirectories (a city's, or a pack's); `label` goes before
 * their file names in `source` and in errors (`pack:review/`). An agent any of whose files (its directory, its
 * agent.toml, its prompt) a symbolic link leads out of `root` is skipped, never read, and named in `skipped`.
 * What an agent.toml says that ctl does not act on goes to `findings`.
 */
export function agentDirectories(
  root: string,
  label: string,
  skipped: string[] = [],
  edited?: { file: string; text: string },
  findings: KeyFinding[] = [],
): CityAgentConfig[] {
  const what = label ? `pack ${label.replace(/^pack:|\/$/g, '')}` : 'the city';
  const agents: CityAgentConfig[] = [];
  const dir = join(root, 'agents');
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return agents;
  }
  for (const name of names) {
    const home = join(dir, name);
    if (name.startsWith('.') || !statSync(home, { throwIfNoEntry: false })?.isDirectory()) continue;
    const source = `${label}agents/${name}/${AGENT_FILE}`;
    const file = join(home, AGENT_FILE);
    const outside = [home, file, ...PROMPT_FILES.map(([f]) => join(home, f))].find((path) =>
      outsideTree(path, root, what),
    );
    if (outside !== undefined) {
      skipped.push(`${label}${relative(root, outside)}: ${outsideTree(outside, root, what)!} (agent ${name} skipped)`);
      continue;
    }
    let table: Record<string, unknown> = {};
    if (edited?.file === `agents/${name}/${AGENT_FILE}`) {
      // An edit of it being composed before it is written: its text as the edit would leave it.
      table = parseToml(edited.text, source);
    } else if (existsSync(file)) {
      const size = statSync(file).size;
      if (size > MAX_TOML_BYTES) throw tooLarge(source, size);
      try {
        table = parseToml(readWithin(file, root, what), source);
      } catch (err) {
        if (err instanceof OutsideTree) throw new ConfigError(`${source}: ${err.message}`);
        throw err;
      }
    } else if (!PROMPT_FILES.some(([f]) => existsSync(join(home, f)))) {
      continue; // not an agent directory (yet)
    }
    findings.push(...auditKeys(table, AGENT_TOML, source));
    const agent = parseAgentTable(table, (key) => `${source}: ${key}`, source, { name });
    if (agent.name !== name) throw new ConfigError(`${source}: name must be ${name}, the directory's name`);
    // Its files' paths are relative to its directory, and an `overlay/` there is its overlay unless it names one.
    if (agent.overlay_dir === undefined && statSync(join(home, 'overlay'), { throwIfNoEntry: false })?.isDirectory()) {
      agent.overlay_dir = join(home, 'overlay');
    }
    for (const key of ['overlay_dir', 'session_setup_script'] as const) {
      const path = agent[key];
      if (path !== undefined && !isAbsolute(path) && !path.startsWith('//')) agent[key] = resolve(home, path);
    }
    if (agent.prompt === undefined) {
      for (const [promptFile, template] of PROMPT_FILES) {
        const path = join(home, promptFile);
        if (!existsSync(path)) continue;
        agent.prompt = readWithin(path, root, what);
        agent.prompt_is_template = template;
        agent.home_dir = home;
        break;
      }
    }
    agents.push(agent);
  }
  return agents;
}

/**
 * An agent's qualified name: `dir/base` when its `dir` names one of the city's rigs (it is that rig's agent),
 * else its name (`dir` is then only the directory its sessions work in).
 */
export function qualifiedName(agent: Pick<CityAgentConfig, 'name' | 'dir'>, rigs: { name: string }[]): string {
  return agent.dir && rigs.some((r) => r.name === agent.dir) ? `${agent.dir}/${agent.name}` : agent.name;
}

/**
 * The agents resolved: provider, working directory, pool bounds, fingerprint, and whether each can run (a
 * provider the city lacks, or a `depends_on` naming nobody or going round in a circle, makes it unavailable —
 * with the reason — and leaves every other agent alone).
 */
export function resolveAgents(
  root: string,
  config: CityConfig,
  agents: CityAgentConfig[],
  provider: (name: string) => ResolvedProvider | undefined,
  defaultProvider: string | undefined,
): AgentDefinition[] {
  // Each repository's remotes read once per resolve, whichever of its agents asks.
  const remoteCache = new Map<string, string[]>();
  const remotes = (repo: string) => remoteCache.get(repo) ?? remoteCache.set(repo, remotesOf(repo)).get(repo)!;
  const definitions = agents.map((agent) => {
    const name = qualifiedName(agent, config.rigs);
    const providerName = agent.provider ?? defaultProvider;
    const resolved = providerName === undefined ? undefined : provider(providerName);
    const rig = agent.dir ? config.rigs.find((r) => r.name === agent.dir) : undefined;
    const base = rig?.path ? (isAbsolute(rig.path) ? rig.path : resolve(root, rig.path)) : undefined;
    const workDir = agent.work_dir
      ? isAbsolute(agent.work_dir)
        ? agent.work_dir
        : resolve(base ?? root, agent.work_dir)
      : (base ?? (agent.dir ? resolve(root, agent.dir) : root));
    // (`dir` that names no rig is the sessions' directory: relative to the city, or absolute.)
    const max = agent.max_active_sessions ?? Math.max(1, agent.min_active_sessions ?? 1);
    const min = agent.min_active_sessions ?? (agent.max_active_sessions === undefined ? 1 : 0);
    const definition: AgentDefinition = {
      name,
      base: agent.name,
      config: agent,
      workDir,
      min,
      max,
      isPool: max > 1 || agent.scale_check !== undefined,
      available: true,
      fingerprint: '',
      ...(rig ? { rig: rig.name } : {}),
      ...(providerName !== undefined ? { providerName } : {}),
      ...(resolved ? { provider: resolved } : {}),
    };
    // Relative to the file declaring the agent (its pack, or the city); `//` is the city's root.
    const place = (path: string) =>
      path.startsWith('//') ? join(root, path.slice(2)) : resolve(agent.pack_dir ?? root, path);
    if (agent.overlay_dir !== undefined) definition.overlayDir = place(agent.overlay_dir);
    if (agent.session_setup_script !== undefined) definition.setupScript = place(agent.session_setup_script);
    if (agent.isolation === 'worktree') {
      worktreeOf(definition, root, rig ? { branch: rig.default_branch, remote: rig.remote } : undefined, remotes);
    }
    if (providerName === undefined) {
      unavailable(definition, 'it names no provider, and the city has no default provider or start command');
    } else if (!resolved) {
      unavailable(definition, `its provider ${providerName} is neither built in nor defined in [providers]`);
    } else {
      const [wrong] = optionProblems(resolved, agent.option_defaults ?? {});
      if (wrong) unavailable(definition, `its option_defaults.${wrong.key}: ${wrong.message}`);
    }
    if (agent.prompt_problem !== undefined) unavailable(definition, `its prompt template: ${agent.prompt_problem}`);
    definition.fingerprint = fingerprintOf(definition);
    return definition;
  });
  checkDependencies(definitions);
  return definitions;
}

/**
 * `isolation = "worktree"`: the repository its directory is in, or the agent is unavailable saying why (not in a
 * git repository; a repository that holds the city's worktree directory, where worktrees would nest in it).
 */
function worktreeOf(
  definition: AgentDefinition,
  root: string,
  rig: { branch: string | undefined; remote: string | undefined } | undefined,
  remotes: (repo: string) => string[],
): void {
  const repo = repositoryOf(definition.workDir);
  const where = definition.rig ? `rig ${definition.rig} (${definition.workDir})` : definition.workDir;
  if (repo === undefined) {
    unavailable(definition, `isolation = "worktree" needs a git repository, and ${where} is not in one`);
    return;
  }
  if (repo === homedir() || repo === '/') {
    // A directory that is no repository of its own, inside a home directory kept in git: never a worktree of that.
    unavailable(
      definition,
      `isolation = "worktree" needs a git repository, and ${where} is only inside ${repo}, which is not a project's`,
    );
    return;
  }
  if (isWithin(worktreesRoot(root), repo)) {
    unavailable(
      definition,
      `isolation = "worktree": the repository ${repo} holds the city, so its worktrees (under .ctl/worktrees) would be inside it`,
    );
    return;
  }
  const merge = definition.config.merge ?? 'none';
  const remote = { name: rig?.remote ?? DEFAULT_REMOTE, configured: rig?.remote !== undefined };
  const wrongRemote = remoteProblem(repo, remote, merge === 'push', remotes);
  if (wrongRemote) {
    unavailable(definition, wrongRemote);
    return;
  }
  const base = definition.config.base_branch ?? rig?.branch;
  definition.worktree = {
    repo,
    subdir: relative(repo, definition.workDir),
    merge,
    remote: remote.name,
    ...(base ? { base } : {}),
  };
}

function unavailable(definition: AgentDefinition, reason: string): void {
  if (!definition.available) return;
  definition.available = false;
  definition.unavailableReason = reason;
}

/** The agent `name` means from `from`'s point of view: its rig's agent of that name first, then the city's. */
export function dependencyOf(
  from: AgentDefinition,
  name: string,
  byName: Map<string, AgentDefinition>,
): AgentDefinition | undefined {
  return (from.rig ? byName.get(`${from.rig}/${name}`) : undefined) ?? byName.get(name);
}

/** Unknown dependencies and circles in `depends_on` make the agents involved unavailable. */
function checkDependencies(definitions: AgentDefinition[]): void {
  const byName = new Map(definitions.map((d) => [d.name, d]));
  for (const definition of definitions) {
    for (const dep of definition.config.depends_on) {
      if (!dependencyOf(definition, dep, byName)) unavailable(definition, `it depends on ${dep}, which is no agent`);
    }
  }
  // Depth-first search; an agent met again while still on the path closes a circle.
  const state = new Map<string, 'visiting' | 'done'>();
  const path: AgentDefinition[] = [];
  const visit = (definition: AgentDefinition): void => {
    if (state.get(definition.name) === 'done') return;
    if (state.get(definition.name) === 'visiting') {
      const circle = path.slice(path.indexOf(definition)).concat(definition);
      const words = circle.map((d) => d.name).join(' → ');
      for (const member of circle) unavailable(member, `depends_on goes round in a circle: ${words}`);
      return;
    }
    state.set(definition.name, 'visiting');
    path.push(definition);
    for (const dep of definition.config.depends_on) {
      const target = dependencyOf(definition, dep, byName);
      if (target) visit(target);
    }
    path.pop();
    state.set(definition.name, 'done');
  };
  for (const definition of definitions) visit(definition);
}

function fingerprintOf(definition: AgentDefinition): string {
  const p = definition.provider;
  const what = {
    provider: p
      ? {
          name: p.name,
          command: p.command,
          args: p.args,
          env: p.env,
          protocol: p.protocol,
          runtime: p.runtime,
          screen_rules: p.screen_rules,
          prompt_mode: p.prompt_mode,
          system_prompt_args: p.system_prompt_args,
          settings_args: p.settings_args,
          option_defaults: p.option_defaults,
          options_schema: p.options_schema,
        }
      : definition.providerName,
    env: definition.config.env,
    option_defaults: definition.config.option_defaults,
    work_dir: definition.workDir,
    prompt: definition.config.prompt,
    // What runs or is laid down before its program starts: a change takes effect at a restart.
    pre_start: definition.config.pre_start,
    session_setup: definition.config.session_setup,
    setup_script: definition.setupScript,
    overlay: definition.overlayDir,
    pack_overlays: definition.config.pack_overlays,
    // The fragments a templated prompt draws on are part of what its sessions start with.
    prompt_parts: definition.config.prompt_parts,
  };
  return createHash('sha256').update(JSON.stringify(what)).digest('hex').slice(0, 16);
}

/** What is suspended in a city: the city itself, and its rigs by name. */
export interface Suspension {
  city: boolean;
  rigs: ReadonlySet<string>;
}

/** The suspension of a city, from its configuration. */
export function suspensionIn(config: CityConfig): Suspension {
  return { city: config.workspace.suspended, rigs: new Set(config.rigs.filter((r) => r.suspended).map((r) => r.name)) };
}

/** Why the agent is kept from running (the city, itself, or its rig is suspended), or undefined when it is not. */
export function suspensionOf(agent: AgentDefinition, suspension: Suspension): string | undefined {
  if (suspension.city) return 'the city is suspended';
  if (agent.config.suspended) return `agent ${agent.name} is suspended`;
  if (agent.rig !== undefined && suspension.rigs.has(agent.rig)) return `rig ${agent.rig} is suspended`;
  return undefined;
}

/**
 * The agent's prompt for one session: a template has its `{{…}}` names filled in. A templated prompt that goes
 * past a bound of rendering (its size, its work, its nesting; or one that calls itself) is never sent, nor sent
 * as its text: a `validation-failed` Problem (422) naming the agent, the template and the limit.
 */
export function promptFor(
  definition: AgentDefinition,
  values: { city: string; session: string; bead?: string; workDir?: string },
): string | undefined {
  const prompt = definition.config.prompt;
  if (prompt === undefined || prompt.trim() === '') return undefined;
  if (!definition.config.prompt_is_template) return prompt;
  const session: SessionPromptValues = {
    city: values.city,
    agent: definition.name,
    rig: definition.rig ?? '',
    // A session's own directory: its place in its worktree, when it has one (not the rig's checkout).
    workDir: values.workDir ?? definition.workDir,
    session: values.session,
    bead: values.bead ?? '',
  };
  const parts = definition.config.prompt_parts;
  if (parts) {
    const refused = definition.config.prompt_problem;
    if (refused !== undefined) throw promptRefused(definition, refused);
    try {
      return renderTemplatedPrompt(prompt, parts, session);
    } catch (err) {
      if (err instanceof TemplateLimitError) throw promptRefused(definition, err.message);
      // What does not render goes as the older `{{name}}` templates do (the loader named the problem when it could).
      if (!(err instanceof TemplateError)) throw err;
    }
  }
  const known = legacyPromptValues(session);
  return prompt.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, key: string) => known[key] ?? whole);
}

/** The Problem (422) of an agent whose prompt template cannot be rendered, saying why. */
export function promptRefused(definition: AgentDefinition, why: string): Problem {
  const message = `agent ${definition.name}'s prompt template cannot be rendered: ${why}`;
  return new Problem('validation-failed', `invalid: ${message}`, {
    errors: [{ location: definition.config.source, message }],
  });
}
