import type { CityAgentConfig, CityRigConfig } from '../../shared/config/city-config.js';
import { qualifiedName } from '../agent-catalog/agent-catalog.js';

/** A definition of an agent that compose left out, and what replaced it. */
export interface ReplacedDefinition {
  /** The agent's qualified name (`gastown.dog`, `rig/web.dev`): the one definition kept answers to it. */
  name: string;
  /** The file of the definition left out (`pack:gastown.maintenance/agents/dog/agent.toml`). */
  source: string;
  /** The import binding it came through, when a pack brought it. */
  pack?: string;
  /** The file of the definition kept. */
  by: string;
  reason: string;
}

/**
 * The reference's `fallback = true`, resolved over every agent composed: of the definitions of one qualified name
 * that come from different places (packs, the city), the fallbacks are dropped when one is not a fallback, and
 * only the first loaded (depth first) is kept when all are. Two non-fallbacks are left for the duplicate check,
 * as are definitions from one place. Returns the agents kept, in order, and what was dropped, naming the winner.
 */
export function resolveFallbackAgents(
  root: string,
  agents: CityAgentConfig[],
  rigs: Pick<CityRigConfig, 'name'>[],
): { agents: CityAgentConfig[]; replaced: ReplacedDefinition[] } {
  const byName = new Map<string, number[]>();
  for (const [i, agent] of agents.entries()) {
    const name = qualifiedName(agent, rigs);
    byName.set(name, [...(byName.get(name) ?? []), i]);
  }
  const dropped = new Set<number>();
  const replaced: ReplacedDefinition[] = [];
  for (const [name, indexes] of byName) {
    if (indexes.length < 2 || !indexes.some((i) => agents[i]!.fallback)) continue;
    // One place's two definitions of a name are its own mistake, which the duplicate check names.
    if (new Set(indexes.map((i) => agents[i]!.pack_dir ?? root)).size < 2) continue;
    const firm = indexes.filter((i) => !agents[i]!.fallback);
    if (firm.length > 1) continue;
    const kept = firm[0] ?? indexes[0]!;
    for (const i of indexes) {
      if (i === kept || !agents[i]!.fallback) continue;
      dropped.add(i);
      const agent = agents[i]!;
      replaced.push({
        name,
        source: agent.source,
        ...(agent.pack !== undefined ? { pack: agent.pack } : {}),
        by: agents[kept]!.source,
        reason: firm.length
          ? 'a fallback definition (fallback = true): a definition of the same name that is not a fallback replaces it'
          : 'a fallback definition (fallback = true) loaded after another fallback of the same name: the first loaded is kept',
      });
    }
  }
  return { agents: agents.filter((_, i) => !dropped.has(i)), replaced };
}
