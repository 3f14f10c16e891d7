import { parseWebhooks, type ParsedWebhooks } from '../webhooks/webhook-config.js';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CityAgentConfig, CityConfig, PackImport } from '../../shared/config/city-config.js';
import { ConfigError } from '../../shared/config/config-error.js';
import { agentDirectories, declaredAgents } from '../agent-catalog/agent-catalog.js';
import { installedPackDir, readPackLock, type PackLockEntry } from '../packs/pack-cache.js';
import { readPackFile, type PackAgentDefaults } from '../packs/pack-file.js';
import { parsePackSource, PackSourceError } from '../packs/pack-source.js';
import { applyAgentDefaults, applyPatches } from './patches.js';
import { auditKeys, type KeyFinding } from '../config-schema/key-audit.js';
import { CITY_TOML } from '../config-schema/reference-keys.js';
import type { NamedSession, PackDoctorEntry } from '../packs/pack-file.js';
import type { ComposedPack } from '../packs/composed-pack.js';
import { applyPackPatches, applyRigOverrides } from './pack-patches.js';
import { PackOverlays } from './pack-overlays.js';
import { stampPromptParts, type AgentOrigin } from './prompt-parts.js';
import { resolveFallbackAgents, type ReplacedDefinition } from './fallback-agents.js';
import { mergeHosts, parseHostTables, unknownHostNames, type HostConfig } from '../hosts/host-config.js';

/** Something wrong that leaves the rest of the city running: what `GET /config/validate` reports. */
export interface ConfigProblem {
  file: string;
  key?: string;
  message: string;
}

/** The city's configuration composed: what the controller runs, with where each part came from. */
export interface ComposedConfig {
  config: CityConfig;
  agents: CityAgentConfig[];
  packs: ComposedPack[];
  problems: ConfigProblem[];
  /**
   * What the files say that ctl reads but does not act on (a reference key it does not support, an unknown pack
   * table): named as warnings, each with its file and key. Unknown keys of our own tables are `problems`.
   */
  unsupported: ConfigProblem[];
  /** `[[doctor]]` checks of the city's own `pack.toml`. */
  rootDoctors: PackDoctorEntry[];
  /** Unknown keys of our own tables (typos, most likely): also in `problems`. */
  unknownKeys: ConfigProblem[];
  /** Files skipped, never read, because a symbolic link leads out of the city or pack they belong to. */
  skipped: ConfigProblem[];
  /** Providers an imported pack declares (the city's own win a name). */
  packProviders: Set<string>;
  /**
   * What it was read from, absolute: the city's own files and directories (`city.toml`, `agents/`, `formulas/` …)
   * and each local pack's (`pack.toml`, `agents/`, its fragments …; a pack directory that is not there yet, for
   * when it appears). Not a git pack's: its cached commit never changes. What the config watcher watches.
   */
  sources: string[];
  /** Fallback definitions (`fallback = true`) another definition of their name replaced: explain says which won. */
  replaced: ReplacedDefinition[];
  /** What patches changed, by kind and name, so that explain can say so. */
  patched: { agents: Set<string>; providers: Set<string>; rigs: Set<string> };
  /** `city.toml`'s `[[webhook]]` tables (those that are valid; the others are `problems`) and `[webhooks]`. */
  webhooks: Pick<ParsedWebhooks, 'webhooks' | 'policy'>;
  /** `[[host]]` tables of `city.toml` and of the packs loaded at the city (the bad ones are `problems`). */
  hosts: HostConfig[];
}

export interface ComposeOptions {
  /** The machine's pack cache (`$CTL_HOME/cache/packs`). */
  cacheRoot: string;
  /**
   * A file of the city (the root `pack.toml`, or an `agents/<name>/agent.toml`) as an edit would leave it, read
   * instead of what is on disk: how an edit of it is composed before it is written.
   */
  edited?: EditedFile;
}

/** A city file's text as an edit would leave it; `file` is relative to the city's root. */
export interface EditedFile {
  file: string;
  text: string;
}

/** What of a city's directory its configuration is read from. */
const CITY_SOURCES = [
  'city.toml',
  'pack.toml',
  'packs.lock',
  'agents',
  'formulas',
  'orders',
  'prompts',
  'template-fragments',
];
/** What of a local pack's directory the city's configuration is read from. */
const PACK_SOURCES = [
  'pack.toml',
  'agents',
  'formulas',
  'orders',
  'commands',
  'overlay',
  'prompts',
  'template-fragments',
];

/** How deep packs may import packs: a chain longer than this is a mistake, not a design. */
const MAX_DEPTH = 8;

/**
 * Composes a city's configuration in the reference's order: `city.toml`, the city's own `pack.toml` (the root
 * pack), its `agents/` directories, the packs it imports (recursively, in sorted binding order: their agents
 * named `binding.agent`, their providers where the city has none of that name, their formulas and orders as
 * lower layers), each rig's imports (`rig/binding.agent`, rig-scoped agents only, then the rig's overrides),
 * then `[agent_defaults]`, then patches; each agent is given the `overlay/` directories of the packs loaded at
 * the city and in its rig. Never fetches: a git-backed pack is read from the cache at the commit `packs.lock`
 * names, and one that is not there is reported and left out, like any pack that cannot be read; the rest runs.
 * Two agents answering to one name make the whole configuration unusable (a ConfigError), as a broken
 * `city.toml` does.
 */
export function composeConfig(root: string, cityToml: CityConfig, options: ComposeOptions): ComposedConfig {
  const problems: ConfigProblem[] = [];
  const skipped: string[] = [];
  const packs: ComposedPack[] = [];
  const hostSets = [parseHostTables(cityToml.document?.host, 'city.toml', root)];
  const findings: KeyFinding[] = cityToml.document ? auditKeys(cityToml.document, CITY_TOML, 'city.toml') : [];
  const config: CityConfig = {
    ...cityToml,
    providers: { ...cityToml.providers },
    rigs: cityToml.rigs.map((r) => ({ ...r })),
    services: [...cityToml.services],
  };
  const rootPack = readPackFile(
    root,
    'pack.toml',
    options.edited?.file === 'pack.toml' ? options.edited.text : undefined,
  );
  findings.push(...rootPack.findings);
  skipped.push(...rootPack.skipped);
  if (rootPack.agentDefaults) {
    findings.push({
      file: 'pack.toml',
      key: 'agent_defaults',
      kind: 'unsupported',
      message:
        'not supported: `[agent_defaults]` in the city’s own pack.toml — the city’s defaults are city.toml’s [agent_defaults]',
    });
  }
  const imports = [...cityToml.imports];
  for (const imp of rootPack.imports) {
    if (imports.some((i) => i.binding === imp.binding)) {
      throw new ConfigError(`pack.toml: imports.${imp.binding} is also in city.toml: one binding, one place`);
    }
    imports.push(imp);
  }
  imports.sort((a, b) => (a.binding < b.binding ? -1 : a.binding > b.binding ? 1 : 0));
  for (const [name, spec] of Object.entries(rootPack.providers)) config.providers[name] ??= spec;
  config.services.push(...rootPack.services);
  if (rootPack.hostTables !== undefined) hostSets.push(parseHostTables(rootPack.hostTables, 'pack.toml', root));
  const agents: CityAgentConfig[] = [
    ...declaredAgents(root, cityToml, skipped, options.edited, findings),
    ...rootPack.agents.map((a) => ({ ...a, source: 'pack.toml' })),
  ].map((a) => ({ ...a, origin: 'inline' as const }));
  let lock: Record<string, PackLockEntry> = {};
  try {
    lock = readPackLock(root);
  } catch (err) {
    problems.push({ file: 'packs.lock', message: (err as Error).message });
  }
  const packProviders = new Set<string>();
  const overlays = new PackOverlays();
  const cityRequires: { file: string; key: string; agent: string }[] = [];
  // An agent answers to its composed name and to its name in its pack (`dog` for `bd.dog`).
  const answersTo = (a: CityAgentConfig, name: string) => a.name === name || origins.get(a.name)?.local === name;
  const origins = new Map<string, AgentOrigin>();
  const localDirs = new Set<string>();
  const load = (
    imp: PackImport & { included?: string },
    baseDir: string,
    prefix: string,
    outer: string,
    rig: string | undefined,
    depth: number,
    stack: string[],
  ) => {
    const binding = prefix ? `${prefix}.${imp.binding}` : imp.binding;
    // An include's contents are its includer's; a re-exported import's, its importer's; else its binding's.
    const namespace = imp.included || (imp.export && prefix) ? outer : outer ? `${outer}.${imp.binding}` : imp.binding;
    const named = (n: string) => (namespace ? `${namespace}.${n}` : n);
    const entry: ComposedPack = {
      binding: rig ? `${rig}/${binding}` : binding,
      namespace,
      source: imp.source,
      file: imp.file,
      gitBacked: false,
      direct: rig === undefined && prefix === '' && !imp.included,
      ...(imp.version !== undefined ? { version: imp.version } : {}),
      ...(rig ? { rig } : {}),
    };
    packs.push(entry);
    const fail = (message: string) => {
      entry.error = message;
      const key = imp.included ?? `imports.${imp.binding}`;
      problems.push({ file: imp.file, key, message: `pack ${entry.binding}: ${message}` });
    };
    let dir: string | undefined;
    try {
      const source = parsePackSource(imp.source, baseDir);
      if (source.kind === 'local') {
        localDirs.add(resolve(source.dir));
        dir = existsSync(source.dir) ? source.dir : undefined;
        if (!dir) return fail(`${source.dir} does not exist`);
      } else {
        entry.gitBacked = true;
        const locked = lockEntryFor(lock, binding, imp);
        if (!locked) return fail(`not fetched yet: POST /packs (ctl pack add) fetches it and records it in packs.lock`);
        entry.commit = locked.commit;
        dir = installedPackDir(options.cacheRoot, source, locked.commit);
        if (!dir)
          return fail(
            `commit ${locked.commit.slice(0, 12)} is not in this machine's pack cache: ctl pack add fetches it`,
          );
      }
    } catch (err) {
      if (err instanceof PackSourceError) return fail(err.message);
      throw err;
    }
    entry.dir = dir;
    if (stack.includes(dir)) return fail(`imports itself (${[...stack, dir].join(' → ')})`);
    if (depth > MAX_DEPTH) return fail(`imports are nested more than ${MAX_DEPTH} deep`);
    const label = `pack:${entry.binding}/`;
    let file;
    let own: CityAgentConfig[];
    try {
      file = readPackFile(dir, `${label}pack.toml`);
      own = [...file.agents, ...agentDirectories(dir, label, skipped, undefined, findings)];
    } catch (err) {
      if (err instanceof ConfigError) return fail(err.message);
      throw err;
    }
    if (file.name !== undefined) entry.packName = file.name;
    if (file.version !== undefined) entry.packVersion = file.version;
    if (file.doctors.length) entry.doctors = file.doctors;
    if (file.description !== undefined) entry.description = file.description;
    if (file.commands.length) entry.commands = file.commands;
    findings.push(...file.findings);
    skipped.push(...file.skipped);
    const siblings = new Set(own.map((a) => a.name));
    const loaded: CityAgentConfig[] = [];
    const first = agents.length;
    // City-scoped agents a rig's pack brings, already at the city (from the city's packs, or another rig's).
    const atCity = new Set<string>();
    const hoistedNames = new Set<string>();
    for (const agent of own) {
      // Where it loads: `scope = "rig"` agents only in a rig; `scope = "city"` ones at the city, and one a rig's
      // pack brings is taken to the city (as the reference hoists it) unless the city has it already.
      if (!rig && agent.scope === 'rig') continue;
      const hoisted = rig !== undefined && agent.scope === 'city';
      if (hoisted && agents.some((a) => a.name === named(agent.name) && !config.rigs.some((r) => r.name === a.dir))) {
        atCity.add(agent.name);
        continue;
      }
      if (hoisted) hoistedNames.add(named(agent.name));
      loaded.push({
        ...agent,
        name: named(agent.name),
        depends_on: agent.depends_on.map((d) => (siblings.has(d) ? named(d) : d)),
        source: agent.source.startsWith(label) ? agent.source : `${label}${agent.source}`,
        origin: 'pack-derived',
        pack: binding,
        pack_dir: dir,
        ...(rig && !hoisted ? { dir: rig } : {}),
      });
    }
    for (const agent of own) origins.set(named(agent.name), { namespace, local: agent.name });
    const inRig = loaded.filter((a) => !hoistedNames.has(a.name));
    applyNamedSessions(file.namedSessions, inRig, named, rig, `${label}pack.toml`, problems);
    if (rig) {
      const cityNamed = file.namedSessions.filter((n) => n.scope === 'city' && !atCity.has(n.template));
      const hoisted = loaded.filter((a) => hoistedNames.has(a.name));
      applyNamedSessions(cityNamed, hoisted, named, undefined, `${label}pack.toml`, problems);
    }
    agents.push(...loaded);
    for (const [name, spec] of Object.entries(file.providers)) {
      if (config.providers[name] !== undefined) continue;
      config.providers[name] = spec;
      packProviders.add(name);
    }
    if (!rig && file.hostTables !== undefined)
      hostSets.push(parseHostTables(file.hostTables, `${label}pack.toml`, root));
    if (!rig) {
      for (const service of file.services) {
        config.services.push({
          ...service,
          name: named(service.name),
          pack: binding,
          dir: join(dir, service.dir ?? ''),
        });
      }
    }
    // `transitive = false`: the packs it takes in stay its own business, hidden from the city.
    const transitive = imp.transitive !== false;
    for (const inner of transitive ? includesOf(file.includes, `${label}pack.toml`, 'pack.includes') : [])
      load(inner, dir, binding, namespace, rig, depth + 1, [...stack, dir]);
    // Its own agents and its includes' (not its imports'), inside out: an included pack's own defaults come first.
    if (file.agentDefaults) inheritDefaults(agents.slice(first), file.agentDefaults, namespace !== '');
    for (const inner of transitive ? file.imports : [])
      load(inner, dir, binding, namespace, rig, depth + 1, [...stack, dir]);
    // After its imports': a pack's overlay wins over those of the packs it takes in.
    overlays.add(dir, label, rig, skipped, findings);
    // What it requires: in a rig, of what this load brought there; at the city, of the whole city (checked last).
    for (const [i, req] of file.requires.entries()) {
      const where = { file: `${label}pack.toml`, key: `pack.requires[${i}]`, agent: req.agent };
      if (req.scope === 'city') {
        if (!rig) cityRequires.push(where);
      } else if (rig && !agents.slice(first).some((a) => a.dir === rig && answersTo(a, req.agent))) {
        problems.push(requirementProblem(where, `rig ${rig}`));
      }
    }
    // The pack's patches, over what it brought (its own agents and its imports'), by their names in the pack.
    // (One naming a city-scoped agent the city had already was laid over it where the city loaded it.)
    const patches = file.agentPatches.filter((p) => !atCity.has(p.name));
    applyPackPatches(patches, agents, first, named, (n) => origins.get(n)?.local, `${label}pack.toml`, problems);
  };
  for (const imp of [...includesOf(config.workspace.includes, 'city.toml', 'workspace.includes'), ...imports])
    load(imp, root, '', '', undefined, 1, []);
  for (const rig of config.rigs) {
    const own = rig.imports ?? [];
    const all = [...own, ...config.rigDefaultImports.filter((d) => !own.some((o) => o.binding === d.binding))];
    const first = agents.length;
    const included = includesOf(rig.includes ?? [], 'city.toml', `rigs.${rig.name}.includes`);
    for (const imp of [...included, ...all]) load(imp, root, '', '', rig.name, 1, []);
    if (rig.overrides) {
      applyRigOverrides(rig.name, rig.overrides, agents, first, (n) => origins.get(n)?.local, problems);
    }
  }
  // Of a name's definitions, a fallback yields to one that is not (the reference resolves them before its
  // duplicate check, and before the city's defaults and patches).
  const resolved = resolveFallbackAgents(root, agents, config.rigs);
  agents.splice(0, agents.length, ...resolved.agents);
  for (const req of cityRequires) {
    const atCity = agents.filter((a) => !config.rigs.some((r) => r.name === a.dir));
    if (!atCity.some((a) => answersTo(a, req.agent))) problems.push(requirementProblem(req, 'the city'));
  }
  settleInheritedDefaults(agents, config.agentDefaults);
  applyAgentDefaults(config.agentDefaults, agents);
  const patched = applyPatches(config, agents, problems);
  overlays.stamp(root, agents, findings);
  stampPromptParts(root, config, agents, packs, origins, problems);
  const unsupported: ConfigProblem[] = [];
  const unknownKeys: ConfigProblem[] = [];
  // One finding per file and key: a pack a rig imports too is read once per importer.
  const seen = new Set<string>();
  for (const { file, key, kind, message } of findings) {
    if (seen.has(`${file}\0${key}`)) continue;
    seen.add(`${file}\0${key}`);
    if (kind === 'unknown') unknownKeys.push({ file, key, message });
    else unsupported.push({ file, key, message });
  }
  problems.push(...unknownKeys);
  const hosts = mergeHosts(hostSets);
  problems.push(...hosts.problems);
  problems.push(...hostListProblems(agents, hosts.hosts));
  const webhooks = parseWebhooks(cityToml.document ?? {});
  problems.push(...webhooks.problems.map(({ key, message }) => ({ file: 'city.toml', key, message })));
  return {
    config,
    agents,
    packs,
    problems,
    unsupported,
    unknownKeys,
    rootDoctors: rootPack.doctors,
    // Named by the file before the first `: ` (a pack's files are `pack:<binding>/…`).
    skipped: [...new Set(skipped)].map((message) => ({ file: /^(.+?): /.exec(message)?.[1] ?? 'agents', message })),
    packProviders,
    sources: [
      ...CITY_SOURCES.map((name) => join(root, name)),
      ...[...localDirs].flatMap((dir) =>
        existsSync(dir) ? PACK_SOURCES.map((name) => join(dir, name)) : [dir.replace(/\/+$/, '')],
      ),
    ],
    replaced: resolved.replaced,
    patched,
    webhooks: { webhooks: webhooks.webhooks, policy: webhooks.policy },
    hosts: hosts.hosts,
  };
}

/**
 * An agent's `hosts` naming no host, label or `local`: a problem naming it (the agent stays; the tick says it
 * cannot be placed there, as placement.ts does for any host it cannot use).
 */
function hostListProblems(agents: CityAgentConfig[], hosts: HostConfig[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const names = [...hosts.map((h) => h.name), ...new Set(hosts.flatMap((h) => h.labels))];
  for (const agent of agents) {
    const unknown = unknownHostNames(agent.hosts ?? [], hosts);
    if (!unknown.length) continue;
    const known = names.length ? `the city has ${['local', ...names].join(', ')}` : 'the city has no [[host]] tables';
    problems.push({
      file: agent.source,
      key: 'hosts',
      message: `agent ${agent.dir ? `${agent.dir}/` : ''}${agent.name}: hosts names ${unknown.join(', ')}, which no [[host]] is named or labelled (${known})`,
    });
  }
  return problems;
}

/**
 * A pack's `[[named_session]]` tables laid over the agents it just loaded here (`binding.template`, in this rig
 * or at the city): `always` keeps one session of the agent running. One naming no agent of the pack is a problem.
 */
function applyNamedSessions(
  named: NamedSession[],
  loaded: CityAgentConfig[],
  qualify: (name: string) => string,
  rig: string | undefined,
  file: string,
  problems: ConfigProblem[],
): void {
  for (const [i, session] of named.entries()) {
    if (session.scope === (rig ? 'city' : 'rig')) continue;
    const name = qualify(session.template);
    const agent = loaded.find((a) => a.name === name);
    if (!agent) {
      // A rig-scoped agent is not loaded at the city (nor a city-scoped one in a rig): nothing to keep there.
      if (session.scope === undefined) continue;
      problems.push({
        file,
        key: `named_session[${i}].template`,
        message: `named session ${session.template}: the pack has no ${session.scope}-scoped agent ${session.template}`,
      });
      continue;
    }
    if (session.mode === 'always') {
      agent.min_active_sessions = Math.max(agent.min_active_sessions ?? 0, 1);
      if (agent.max_active_sessions !== undefined && agent.max_active_sessions < 1) agent.max_active_sessions = 1;
    } else {
      // An agent that says neither min nor max is kept running by default (agent-catalog.ts); on demand, it is not.
      agent.min_active_sessions ??= 0;
    }
  }
}

/** The lock's entry for an import: by its binding, or any entry fetched from the same source and version. */
function lockEntryFor(
  lock: Record<string, PackLockEntry>,
  binding: string,
  imp: PackImport,
): PackLockEntry | undefined {
  const same = (e: PackLockEntry | undefined) =>
    e !== undefined && e.source === imp.source && (e.version ?? '') === (imp.version ?? '');
  const byBinding = lock[binding];
  if (same(byBinding)) return byBinding;
  return Object.values(lock).find(same);
}

/**
 * `includes` (of `[workspace]`, `[pack]` or `[[rigs]]`): packs taken in whole, the reference's older form of
 * imports. Each is loaded like an import bound to its directory's name (what `GET /packs` and its files' labels
 * say), its agents, orders and commands named as the includer's own (in a rig: `rig/agent`). Only directories: a
 * git include is refused with what to write. `key` is where they are written, which a problem of one names.
 */
function includesOf(paths: string[], file: string, key: string): (PackImport & { included: string })[] {
  return paths.map((path) => {
    const base = path.replace(/\/+$/, '').split('/').pop() ?? path;
    const binding = base.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'include';
    return { binding, source: path, file, included: key };
  });
}

/** A pack's `[agent_defaults]` noted on the agents it applies to, each key where no nearer pack gave one. */
function inheritDefaults(agents: CityAgentConfig[], defaults: PackAgentDefaults, bound: boolean): void {
  for (const agent of agents) {
    const given = (agent.pack_defaults ??= { bound });
    given.provider ??= defaults.provider;
    given.default_sling_formula ??= defaults.default_sling_formula;
    if (defaults.append_fragments) {
      given.append_fragments = [...new Set([...(given.append_fragments ?? []), ...defaults.append_fragments])];
    }
  }
}

/**
 * What packs' `[agent_defaults]` gave, laid on the agents that set none themselves, as the reference does: an
 * agent that came under an import binding takes its pack's `provider` and `default_sling_formula` over the city's
 * `[agent_defaults]`; one the city took in bare (`[workspace] includes`) takes the city's when it has one. Pack
 * `append_fragments` go after the agent's own, before the city's defaults'.
 */
function settleInheritedDefaults(agents: CityAgentConfig[], city: Record<string, unknown>): void {
  for (const agent of agents) {
    const given = agent.pack_defaults;
    if (!given) continue;
    for (const key of ['provider', 'default_sling_formula'] as const) {
      if (agent[key] !== undefined || given[key] === undefined) continue;
      if (given.bound || city[key] === undefined) agent[key] = given[key];
    }
    if (given.append_fragments) {
      agent.append_fragments = [...new Set([...(agent.append_fragments ?? []), ...given.append_fragments])];
    }
  }
}

/** A `[[pack.requires]]` nothing answers: a problem naming it, the rest of the city runs. */
function requirementProblem(req: { file: string; key: string; agent: string }, where: string): ConfigProblem {
  return {
    file: req.file,
    key: req.key,
    message: `${req.file}: ${req.key}: the pack needs an agent ${req.agent} in ${where}, and none is there — import or include a pack that provides it`,
  };
}
