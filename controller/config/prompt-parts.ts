import { readdirSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { declaredCityName, type CityAgentConfig, type CityConfig } from '../../shared/config/city-config.js';
import type { PromptParts } from '../../shared/config/city-config-types.js';
import { outsideTree, readWithin } from '../../shared/fs/within.js';
import {
  definedNames,
  parseTemplate,
  recursiveDefines,
  TemplateError,
  TemplateLimitError,
  type TemplateSource,
} from '../agent-catalog/prompt-template.js';
import { renderTemplatedPrompt } from '../agent-catalog/prompt-render.js';
import type { ComposedPack } from '../packs/composed-pack.js';
import type { ConfigProblem } from './compose.js';

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
  const texts = new Map<string, TemplateSource[]>();
  const fragmentsOf = (dir: string, tree: string, what: string): TemplateSource[] => {
    const key = `${dir}\0${tree}`;
    let found = texts.get(key);
    if (found) return found;
    found = [];
    for (const sub of ['prompts/shared', 'template-fragments']) {
      found.push(...templateFiles(root, join(dir, sub), tree, what));
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
    const library: TemplateSource[] = [];
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
      library.push(...templateFiles(root, join(agent.home_dir, 'shared'), tree, what));
      library.push(...templateFiles(root, join(agent.home_dir, 'template-fragments'), tree, what));
    }
    const file = agent.source.replace(/agent\.toml$/, 'prompt.template.md');
    const defined = new Set<string>();
    try {
      for (const { text } of library) for (const name of definedNames(text)) defined.add(name);
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
      ...workQueries(agent.work_query),
      ProviderKey: provider,
      InstructionsFile: /claude/.test(provider) ? 'CLAUDE.md' : 'AGENTS.md',
    };
    const parts: PromptParts = { library: library.map((s) => s.text), append, values };
    agent.prompt_parts = parts;
    const problem = boundsProblem(
      agent,
      [...library, { file, text: agent.prompt }],
      parts,
      declaredCityName(root, config),
    );
    if (problem) {
      agent.prompt_problem = problem.why;
      report({ file: problem.file, message: `${problem.file}: agent ${agent.name}'s prompt template: ${problem.why}` });
    }
  }
}

/**
 * The commands the reference's prompts tell an agent to run to find its work (`.WorkQuery`,
 * `.AssignedInProgressQuery`, `.AssignedReadyQuery`, `.RoutedPoolQuery`): its `work_query` for all four when it
 * has one (as the reference's); else `ctl hook`, which prints the bead its session holds — here the tick itself
 * hands a session the work routed to its agent and the ready work it names, so that is the one place to look.
 */
function workQueries(workQuery: string | undefined): Record<string, string> {
  const query = workQuery ?? 'ctl hook';
  return { WorkQuery: query, AssignedInProgressQuery: query, AssignedReadyQuery: query, RoutedPoolQuery: query };
}

/**
 * Whether the prompt template would be refused whatever the session: a `define` that calls itself, or a render
 * (with this configuration's values, and a session's as long as they come) past a bound of rendering. Names
 * the file that defines the template at fault.
 */
function boundsProblem(
  agent: CityAgentConfig,
  sources: TemplateSource[],
  parts: PromptParts,
  cityName: string,
): { file: string; why: string } | undefined {
  const [circle] = recursiveDefines(sources);
  if (circle) {
    const names = circle.circle.map((n) => `"${n}"`).join(' → ');
    return { file: circle.file, why: `template "${circle.circle[0]}" calls itself (${names}), so it never ends` };
  }
  const standIn = 'x'.repeat(64);
  try {
    renderTemplatedPrompt(agent.prompt!, parts, {
      city: cityName,
      agent: agent.dir ? `${agent.dir}/${agent.name}` : agent.name,
      rig: parts.values.RigName ?? '',
      workDir: parts.values.RigRoot || standIn,
      session: standIn,
      bead: standIn,
    });
  } catch (err) {
    if (!(err instanceof TemplateLimitError)) return undefined; // the older `{{name}}` way renders it
    const owner = err.template === undefined ? undefined : sources.findLast((s) => definesName(s.text, err.template!));
    return { file: owner?.file ?? sources.at(-1)!.file, why: err.message };
  }
  return undefined;
}

function definesName(text: string, name: string): boolean {
  try {
    return definedNames(text).includes(name);
  } catch {
    return false;
  }
}

/**
 * The texts of a directory's template files: the older `*.md.tmpl` first, then `*.template.md`, each sorted; each
 * named relative to the city `root` when it is inside it.
 */
function templateFiles(root: string, dir: string, tree: string, what: string): TemplateSource[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const legacy = names.filter((n) => n.endsWith('.md.tmpl')).sort();
  const canonical = names.filter((n) => n.endsWith('.template.md')).sort();
  const out: TemplateSource[] = [];
  for (const name of [...legacy, ...canonical]) {
    const path = join(dir, name);
    // A link leading out of the pack (or city) is not read.
    if (outsideTree(path, tree, what)) continue;
    const inCity = relative(root, path);
    out.push({ file: inCity.startsWith('..') ? path : inCity, text: readWithin(path, tree, what) });
  }
  return out;
}
