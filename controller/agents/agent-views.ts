import type { AgentOutputResponse, AgentResponse } from '../../shared/dto/agents.js';
import type { SessionUsageTotals } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityConfig } from '../../shared/config/city-config.js';
import type { SessionService } from '../sessions/session-service.js';
import type { Session } from '../sessions/session.js';
import { conversation } from '../sessions/transcript.js';
import { suspensionIn, suspensionOf, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { AgentTick } from './tick.js';

/** An agent that held a bead and did something within this long is `working`; longer, `waiting`. */
const WORKING_WINDOW_MS = 10 * 60_000;
const OUTPUT_DEFAULT = 100;
const OUTPUT_MAX = 1000;

/** What the agents' views read of the city: its agents and configuration, their sessions, the tick's view. */
export interface AgentViewsHost {
  agent(name: string): AgentDefinition | undefined;
  readonly config: CityConfig;
  sessions: Pick<SessionService, 'agentSessions' | 'list' | 'find'>;
  tick: Pick<
    AgentTick,
    'activeBead' | 'queuedWork' | 'isRestartPending' | 'programMissing' | 'waitReason' | 'unplaceableReason'
  >;
}

/** An agent by its qualified name, or the 404 the agents API answers. */
export function requireAgent(city: AgentViewsHost, name: string): AgentDefinition {
  const agent = city.agent(name);
  if (!agent) throw new Problem('agent-not-found', `not_found: agent not found: ${name}`);
  return agent;
}

/** The session an agent is seen through: its running one (the busiest), else its most recent open one. */
export function primarySession(city: AgentViewsHost, agent: AgentDefinition): Session | undefined {
  const sessions = city.sessions.agentSessions(agent.name).filter((s) => s.state !== 'closed');
  return sessions.find((s) => s.running && s.inTurn) ?? sessions.find((s) => s.running) ?? sessions.at(-1);
}

/** Whether the agent is kept from running (the city, itself or its rig suspended). */
export function isSuspended(city: AgentViewsHost, agent: AgentDefinition): boolean {
  return suspensionOf(agent, suspensionIn(city.config)) !== undefined;
}

/**
 * An agent as `GET /agents` shows it, its state derived from its sessions and its work. `withOutput` adds its
 * session's latest output as `last_output` (one agent's view has it; a list only with `peek`, as the reference's).
 */
export function agentResponse(city: AgentViewsHost, agent: AgentDefinition, withOutput = false): AgentResponse {
  const sessions = city.sessions.agentSessions(agent.name).filter((s) => s.state !== 'closed');
  const running = sessions.some((s) => s.running);
  const suspended = isSuspended(city, agent);
  const primary = primarySession(city, agent);
  const tick = city.tick;
  const active = sessions.map((s) => tick.activeBead(s)).find((b) => b !== undefined);
  const lastActive = Math.max(0, ...sessions.map((s) => Date.parse(s.record.last_active ?? '') || 0));
  let state: AgentResponse['state'];
  if (suspended) state = 'suspended';
  else if (sessions.some((s) => s.state === 'quarantined')) state = 'quarantined';
  else if (!running) state = 'stopped';
  else if (active && Date.now() - lastActive < WORKING_WINDOW_MS) state = 'working';
  else if (active) state = 'waiting';
  else state = 'idle';
  const view: AgentResponse = {
    name: agent.name,
    running,
    suspended,
    pack_derived: agent.config.origin === 'pack-derived',
    state,
    available: agent.available,
    source: agent.config.source,
    min_active_sessions: agent.min,
    max_active_sessions: agent.max,
    session_count: sessions.length,
    queued_work: tick.queuedWork(agent.name) ?? 0,
    restart_pending: sessions.some((s) => tick.isRestartPending(s.id) === true),
  };
  if (agent.unavailableReason) view.unavailable_reason = agent.unavailableReason;
  const missing = agent.available ? tick.programMissing(agent.name) : undefined;
  if (missing) {
    // Its configuration holds, but its program is not there: as unavailable, for as long as that lasts.
    view.available = false;
    view.unavailable_reason = `${missing} (not installed; the tick waits for it)`;
  }
  if (agent.provider) view.display_name = agent.provider.display_name;
  if (agent.config.description) view.description = agent.config.description;
  if (agent.providerName) view.provider = agent.providerName;
  if (agent.rig) view.rig = agent.rig;
  if (agent.isPool) view.pool = agent.name;
  if (active) view.active_bead = active.id;
  const wait = tick.waitReason(agent.name);
  if (wait && !suspended) view.wait_reason = wait;
  const unplaceable = tick.unplaceableReason(agent.name);
  if (unplaceable && !suspended) view.unplaceable_reason = unplaceable;
  if (agent.config.option_defaults) view.option_defaults = { ...agent.config.option_defaults };
  const usage = sumUsage(sessions.map((s) => s.view().usage));
  if (usage) view.usage = usage;
  if (primary) {
    const session = primary.view();
    if (session.model) view.model = session.model;
    if (session.context_pct !== undefined) view.context_pct = session.context_pct;
    if (session.context_window !== undefined) view.context_window = session.context_window;
    if (session.activity) view.activity = session.activity;
    if (withOutput && session.last_output) view.last_output = session.last_output;
    view.session = {
      name: primary.record.session_name,
      attached: primary.attached,
      ...(primary.record.last_active ? { last_activity: primary.record.last_active } : {}),
    };
  }
  return view;
}

/** The tokens of an agent's sessions, added up (undefined when none reported any). */
function sumUsage(each: (SessionUsageTotals | undefined)[]): SessionUsageTotals | undefined {
  const reported = each.filter((u): u is SessionUsageTotals => u !== undefined);
  if (reported.length === 0) return undefined;
  const sum = (pick: (u: SessionUsageTotals) => number) => reported.reduce((acc, u) => acc + pick(u), 0);
  const priced = reported.filter((u) => u.cost_usd !== undefined);
  return {
    turns: sum((u) => u.turns),
    input_tokens: sum((u) => u.input_tokens),
    output_tokens: sum((u) => u.output_tokens),
    cache_read_tokens: sum((u) => u.cache_read_tokens),
    cache_creation_tokens: sum((u) => u.cache_creation_tokens),
    ...(priced.length ? { cost_usd: Math.round(sum((u) => u.cost_usd ?? 0) * 1e6) / 1e6 } : {}),
  };
}

/**
 * The session an agent's output comes from: the one `primarySession` names, else the agent's most recent
 * session with a transcript, closed ones included.
 */
export function outputSession(city: AgentViewsHost, agent: AgentDefinition): Session | undefined {
  const primary = primarySession(city, agent);
  if (primary && (primary.running || primary.transcript.head() > 0)) return primary;
  const latest = city.sessions.list({ state: 'all', template: agent.name, limit: 1 }).items[0];
  return latest ? city.sessions.find(latest.id) : undefined;
}

/** `GET /agent/{base}/output`: the agent's conversation, its last `tail` entries (before seq `before`). */
export function agentOutput(
  city: AgentViewsHost,
  agent: AgentDefinition,
  query: { tail?: number; before?: number },
): AgentOutputResponse {
  const session = outputSession(city, agent);
  if (!session || (session.transcript.head() === 0 && !session.running)) {
    throw new Problem('agent-not-found', `not_found: agent ${agent.name} has no output: no session has run`);
  }
  const limit = Math.min(query.tail || OUTPUT_DEFAULT, OUTPUT_MAX);
  const page = session.transcript.tail(limit, query.before);
  const turns = conversation(page.entries).map((t) => ({ role: t.role, text: t.text, timestamp: t.timestamp }));
  return {
    agent: agent.name,
    format: 'conversation',
    session_id: session.id,
    turns,
    pagination: {
      has_older_messages: page.more,
      total_message_count: session.transcript.head(),
      returned_message_count: page.entries.length,
      total_compactions: session.record.compactions ?? 0,
    },
  };
}
