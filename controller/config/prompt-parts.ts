import { readdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { CityAgentConfig, CityConfig } from '../../shared/config/city-config.js';
import { outsideTree, readWithin } from '../../shared/fs/within.js';
import { definedNames, parseTemplate, TemplateError } from '../agents/prompt-template.js';
import type { ComposedPack, ConfigProblem } from './compose.js';

/** Where an agent's names come from: the namespace it was loaded under and its name in its pack. */
export interface AgentOrigin {
  namespace: string;
  local: string;
}

/**
 * Gathers what each templated prompt (`prompt.template.md`) draws on, as the reference renders it: the template
 * fragments of `prompts/shared/` and `template-fragments/` of the packs it can see (the city's, and its rig's),
 * of its own pack, of the city, and of its agent directory (`shared/`, `template-fragments/`), later ones winning a
 * name; the fragments appended to it (`[workspace] global_fragments`, its `inject_fragments`, its
 * `append_fragments` with `[agent_defaults]`'); and the values the configuration fixes. A fragment named but
 * defined nowhere, or a template that does not parse, is a problem naming the file; the prompt is then sent as
 * its text.
 */
export function stampPromptParts(
  root: string,
  config: CityConfig,
  agents: CityAgentConfig[],
  packs: ComposedPack[],
  origins: Map<string, AgentOrigin>,
  problems: ConfigProblem[],
): void {
  const texts = new Map<string, string[]>();
  const fragmentsOf = (dir: string, tree: string, what: string): string[] => {
    const key = `${dir}\0${tree}`;
    let found = texts.get(key);
    if (found) return found;
    found = [];
    for (const sub of ['prompts/shared', 'template-fragments']) {
      found.push(...templateFiles(join(dir, sub), tree, what));
    }
    texts.set(key, found);
    return found;
  };
  const reported = new Set<string>();
  const report = (problem: ConfigProblem) => {
    const key = `${problem.file}\0${problem.message}`;
    if (reported.has(key)) return;
    reported.add(key);
    problems.push(problem);
  };
  for (const agent of agents) {
    if (!agent.prompt_is_template || agent.prompt === undefined) continue;
    const rig = config.rigs.find((r) => r.name === agent.dir);
    const library: string[] = [];
    const seen = new Set<string>();
    const add = (dir: string) => {
      if (seen.has(dir)) return;
      seen.add(dir);
      library.push(...fragmentsOf(dir, dir, 'the pack'));
    };
    for (const p of packs) if (p.dir && (p.rig === undefined || p.rig === rig?.name)) add(p.dir);
    if (agent.pack_dir) add(agent.pack_dir);
    library.push(...fragmentsOf(root, root, 'the city'));
    if (agent.home_dir) {
      const tree = agent.pack_dir ?? root;
      const what = agent.pack_dir ? 'the pack' : 'the city';
      library.push(...templateFiles(join(agent.home_dir, 'shared'), tree, what));
      library.push(...templateFiles(join(agent.home_dir, 'template-fragments'), tree, what));
    }
    const file = agent.source.replace(/agent\.toml$/, 'prompt.template.md');
    const defined = new Set<string>();
    try {
      for (const text of library) for (const name of definedNames(text)) defined.add(name);
      parseTemplate(agent.prompt, new Map());
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      report({
        file,
        message: `${file}: the prompt template (or a fragment it draws on) does not parse: ${err.message}`,
      });
      continue;
    }
    const append: string[] = [];
    const lists: [string[] | undefined, string, string][] = [
      [config.workspace.globalFragments, 'city.toml', 'workspace.global_fragments'],
      [agent.inject_fragments, agent.source, 'inject_fragments'],
      [agent.append_fragments, agent.source, 'append_fragments'],
    ];
    for (const [names, from, key] of lists) {
      for (const name of names ?? []) {
        if (append.includes(name)) continue;
        if (!defined.has(name)) {
          report({
            file: from,
            key,
            message: `${from}: ${key}: no template fragment defines "${name}" for agent ${agent.name}`,
          });
          continue;
        }
        append.push(name);
      }
    }
    const origin = origins.get(agent.name);
    const provider = agent.provider ?? config.workspace.provider ?? '';
    const values: Record<string, string> = {
      ...agent.env,
      CityRoot: root,
      TemplateName: origin?.local ?? agent.name,
      BindingName: origin?.namespace ?? '',
      BindingPrefix: origin?.namespace ? `${origin.namespace}.` : '',
      RigName: rig?.name ?? '',
      Rig: rig?.name ?? '',
      RigRoot: rig ? (isAbsolute(rig.path ?? rig.name) ? rig.path! : join(root, rig.path ?? rig.name)) : '',
      IssuePrefix: rig?.prefix ?? config.workspace.prefix ?? '',
      DefaultBranch: agent.base_branch ?? rig?.default_branch ?? 'main',
      ConfigDir: agent.pack_dir ?? root,
      WorkQuery: agent.work_query ?? '',
      ProviderKey: provider,
      InstructionsFile: /claude/.test(provider) ? 'CLAUDE.md' : 'AGENTS.md',
    };
    agent.prompt_parts = { library, append, values };
  }
}

/** The texts of a directory's template files: the older `*.md.tmpl` first, then `*.template.md`, each sorted. */
function templateFiles(dir: string, tree: string, what: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const legacy = names.filter((n) => n.endsWith('.md.tmpl')).sort();
  const canonical = names.filter((n) => n.endsWith('.template.md')).sort();
  const out: string[] = [];
  for (const name of [...legacy, ...canonical]) {
    const path = join(dir, name);
    // A link leading out of the pack (or city) is not read.
    if (outsideTree(path, tree, what)) continue;
    out.push(readWithin(path, tree, what));
  }
  return out;
}
