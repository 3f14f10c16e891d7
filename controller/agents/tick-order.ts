import { dependencyOf, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { AgentFacts, SessionFacts } from './tick-facts.js';

// The order the tick's planner looks at agents and sessions in, and which dormant sessions it may start.

/** Whether `session` is one of agent `agent`'s. */
export function isOf(session: SessionFacts, agent: string): boolean {
  return session.kind === 'agent' && session.template === agent;
}

/** Agents in `depends_on` order: an agent comes after those it depends on. */
export function inDependencyOrder(agents: AgentFacts[], byName: Map<string, AgentDefinition>): AgentFacts[] {
  const facts = new Map(agents.map((a) => [a.agent.name, a]));
  const out: AgentFacts[] = [];
  const seen = new Set<string>();
  const visit = (agent: AgentDefinition, depth: number) => {
    if (seen.has(agent.name) || depth > agents.length) return;
    seen.add(agent.name);
    for (const name of agent.config.depends_on) {
      const dep = dependencyOf(agent, name, byName);
      if (dep) visit(dep, depth + 1);
    }
    out.push(facts.get(agent.name)!);
  };
  for (const { agent } of agents) visit(agent, 0);
  return out;
}

/** Running sessions first, then the others, oldest first within each. */
export function byRunningThenAge(a: SessionFacts, b: SessionFacts): number {
  const rank = (s: SessionFacts) => (s.running || s.state === 'creating' || s.state === 'start-pending' ? 0 : 1);
  return rank(a) - rank(b) || (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1);
}

/**
 * A session the tick may start: dormant, and not kept dormant by a person (suspended through the sessions API)
 * or by quarantine. One the tick suspended with its agent wakes once the agent is resumed.
 */
export function wakeable(session: SessionFacts): boolean {
  if (session.running || session.changing) return false;
  if (session.state === 'suspended') return session.suspendedByTick;
  return ['asleep', 'failed-create', 'drained'].includes(session.state);
}
