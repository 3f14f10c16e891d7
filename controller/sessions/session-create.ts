import { promptRefused, type AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { SessionCreateBody } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import { LOCAL_HOST } from '../hosts/host.js';
import { requestedOptions } from '../providers/provider-options.js';
import type { ResolvedProvider } from '../providers/provider-spec.js';
import { canRun } from './runtimes.js';
import type { SessionContext } from './session-context.js';
import type { SessionServiceOptions } from './session-service.js';

/** A create request checked against the city: what its session is made of. */
export interface CreatePlan {
  /** Its template: the agent's or the provider's name. */
  name: string;
  kind: 'agent' | 'provider';
  agent: AgentDefinition | undefined;
  provider: ResolvedProvider;
  workDir: string;
  /** The host placement chose, when not this machine. */
  host: string | undefined;
  options: Record<string, string>;
  permissionMode: string | undefined;
}

/**
 * Checks `POST …/sessions` before anything is made: a name (else the city's default provider), an agent that is
 * available and can be placed, a provider this controller can run, a free alias (`requireFreeName`), a permission
 * mode and options the provider has. Each refusal is a 404, 409 or 422 naming what is wrong.
 */
export function planCreate(
  body: SessionCreateBody,
  ctx: SessionContext,
  city: SessionServiceOptions,
  requireFreeName: (alias: string) => void,
): CreatePlan {
  const kind = body.kind ?? 'provider';
  const name = body.name ?? city.defaultProvider();
  if (name === undefined) {
    const message = 'name is required: this city has no default provider or start command';
    throw new Problem('validation-failed', `invalid: ${message}`, { errors: [{ location: 'body.name', message }] });
  }
  let providerName = name;
  let workDir = ctx.cityRoot;
  let agent: AgentDefinition | undefined;
  if (kind === 'agent') {
    agent = city.agent(name);
    if (!agent) throw new Problem('agent-not-found', `not_found: agent not found: ${name}`);
    // A prompt that can never be rendered is a fault of the request's agent, not of its state: a 422.
    if (agent.config.prompt_problem !== undefined) throw promptRefused(agent, agent.config.prompt_problem);
    if (!agent.available || agent.providerName === undefined) {
      throw new Problem('conflict-wrong-state', `conflict: agent ${name} is unavailable: ${agent.unavailableReason}`);
    }
    providerName = agent.providerName;
    workDir = agent.workDir;
  }
  const placed = agent && city.place?.(agent);
  if (placed && 'reason' in placed) {
    throw new Problem('conflict-wrong-state', `conflict: agent ${name} cannot be placed: ${placed.reason}`);
  }
  const host = placed && placed.host !== LOCAL_HOST ? placed.host : undefined;
  const provider = ctx.provider(providerName);
  if (!provider) throw new Problem('provider-not-found', `not_found: provider not found: ${providerName}`);
  if (!canRun(provider.protocol)) {
    const message = `provider ${provider.name} speaks ${provider.protocol}, which this controller cannot run`;
    throw new Problem('validation-failed', `invalid: ${message}`, {
      errors: [{ location: 'body.name', message, value: name }],
    });
  }
  if (body.alias !== undefined) requireFreeName(body.alias);
  if (body.permission_mode !== undefined && !(body.permission_mode in provider.permission_modes)) {
    const message = `${body.permission_mode} is not a permission mode of ${provider.name}`;
    throw new Problem('validation-failed', `invalid: ${message}`, {
      errors: [{ location: 'body.permission_mode', message, value: body.permission_mode }],
    });
  }
  const { options, permissionMode } = requestedOptions(provider, body.options, body.permission_mode);
  return { name, kind, agent, provider, workDir, host, options, permissionMode };
}
