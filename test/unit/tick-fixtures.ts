import type { CityAgentConfig } from '../../shared/config/city-config.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import {
  emptyMemory,
  type AgentFacts,
  type SessionFacts,
  type TickAction,
  type TickInput,
  type TickPlan,
} from '../../controller/agents/tick-facts.js';
import { planTick } from '../../controller/agents/tick-plan.js';

// The facts the tick planner's tests build alike: an agent, a session of it, a plan at a given time, and the
// actions of one kind. Each test file sets what its cases share (its `now`, work dirs, ages) over these.

/** An agent called `name`, a single session (min 1, max 1) of the echo provider in `/city/<name>`. */
export function agentFacts(
  name: string,
  config: Partial<CityAgentConfig> = {},
  over: Partial<AgentDefinition> = {},
): AgentFacts {
  return {
    agent: {
      name,
      base: name,
      config: { name, suspended: false, env: {}, depends_on: [], source: 'city.toml', ...config },
      providerName: 'echo',
      workDir: `/city/${name}`,
      min: 1,
      max: 1,
      isPool: false,
      available: true,
      fingerprint: 'fp1',
      ...over,
    },
  };
}

let ids = 0;
/** A running, ready, idle session of `template` made by the tick; each one a little younger than the one before. */
export function sessionFacts(now: number, template: string, over: Partial<SessionFacts> = {}): SessionFacts {
  const id = `s-${++ids}`;
  return {
    id,
    sessionName: `${template}-${id}`,
    template,
    kind: 'agent',
    managed: 'tick',
    state: 'active',
    createdAt: new Date(now - 100_000 + ids).toISOString(),
    configHash: 'fp1',
    running: true,
    changing: false,
    idle: true,
    inTurn: false,
    ready: true,
    attached: false,
    idleSince: now - 1000,
    readySince: now - 50_000,
    suspendedByTick: false,
    tookTurn: true,
    ...over,
  };
}

export function planAt(now: number, input: Partial<TickInput>): TickPlan {
  return planTick({
    now,
    maxWakesPerTick: 10,
    agents: [],
    sessions: [],
    routed: new Map(),
    held: new Map(),
    mail: new Map(),
    crashes: new Map(),
    memory: emptyMemory(),
    ...input,
  });
}

export function actionsOf<K extends TickAction['kind']>(p: TickPlan, kind: K): Extract<TickAction, { kind: K }>[] {
  return p.actions.filter((a): a is Extract<TickAction, { kind: K }> => a.kind === kind);
}
