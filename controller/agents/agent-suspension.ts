import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { canonicalJson } from '../../shared/canonical-json.js';
import type {
  AgentSuspensionInputBody,
  AgentSuspensionResponse,
  AgentSuspensionUpdateResponse,
} from '../../shared/dto/agents.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import { AgentEditor, type AgentEditorHost } from '../config/agent-editor.js';
import type { Session } from '../sessions/session.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';

/** What suspending an agent needs of the controller: its config editor, its log, its tick and its sessions. */
export interface AgentSuspensionHost extends AgentEditorHost {
  readonly log: Pick<EventLog, 'append'>;
  readonly logger: Pick<Logger, 'error'>;
  readonly tick: { forgive(agent: string): void };
  readonly sessions: { agentSessions(name: string): Session[] };
}

/**
 * The agent's content token: SHA-256 of the canonical JSON (keys sorted) of its identity, its resolved
 * definition (provider, directory, pool sizes, worktree, fingerprint, …) and its config as declared. The same
 * agent always gives the same token; any change to it, its suspension included, gives another.
 */
export function suspensionToken(agent: AgentDefinition): string {
  const { config, name, base, rig, ...resolved } = agent;
  const identity = { name, base, ...(rig !== undefined ? { rig } : {}) };
  return createHash('sha256').update(canonicalJson({ identity, resolved, config })).digest('hex');
}

/** `GET …/agent-suspension/{base}`. */
export function suspensionView(agent: AgentDefinition): AgentSuspensionResponse {
  return { agent: agent.name, suspended: agent.config.suspended, token: suspensionToken(agent) };
}

/**
 * `suspend`: writes `suspended = true` for the agent (its sessions finish their turn, then stop, and none
 * starts); `resume`: removes it, forgets the agent's failures and wakes a quarantined session. Asking for the
 * state it is in writes nothing. Records `agent.suspended` / `agent.resumed`.
 */
export async function setAgentSuspended(
  city: AgentSuspensionHost,
  agent: AgentDefinition,
  suspend: boolean,
): Promise<void> {
  if (suspend !== agent.config.suspended) {
    new AgentEditor(city).update(agent, { suspended: suspend });
    await city.log.append({
      type: suspend ? 'agent.suspended' : 'agent.resumed',
      actor: 'api',
      subject: agent.name,
      payload: { agent: agent.name },
    });
  }
  if (!suspend) {
    // A person resuming an agent wants it to try again, quarantine or not.
    city.tick.forgive(agent.name);
    for (const session of city.sessions.agentSessions(agent.name)) {
      if (session.state === 'quarantined')
        void session
          .wake('wake', 'woken: its agent was resumed')
          .catch((err: unknown) => city.logger.error({ err, session: session.id }, 'could not wake a resumed session'));
    }
  }
}

/**
 * `PUT …/agent-suspension/{base}`: the desired state, written only if the agent is still what the client read
 * (`expected_token`), through the same write as `suspend`/`resume`. An agent already in that state is answered
 * `already_desired` without looking at the token — nothing is written, so nothing read can be lost, and a retry
 * of a change that went through is not refused; otherwise a token that is not the agent's now is a 409.
 */
export async function putSuspension(
  city: AgentSuspensionHost,
  agent: AgentDefinition,
  body: AgentSuspensionInputBody,
): Promise<AgentSuspensionUpdateResponse> {
  if (agent.config.suspended === body.suspended) return { ...suspensionView(agent), already_desired: true };
  const token = suspensionToken(agent);
  if (body.expected_token !== token) {
    throw new Problem(
      'conflict-concurrent-modify',
      `conflict: agent ${agent.name} changed since its token was read (now ${token}); read it again`,
    );
  }
  await setAgentSuspended(city, agent, body.suspended);
  return { ...suspensionView(city.agent(agent.name) ?? agent), already_desired: false };
}
