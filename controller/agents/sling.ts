import type { Bead } from '../../shared/dto/beads.js';
import type { SlingInputBody, SlingResponse } from '../../shared/dto/agents.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityRuntime } from '../city-runtime.js';
import { ASSIGNED_SESSION, ROUTED_TO } from './work-board.js';

/**
 * `POST /sling`: routes a bead — or each open member of a convoy — to an agent, by stamping `ctl.routed_to`.
 * Checked in full before anything changes (an unknown agent or bead is a 404 and nothing is written). A bead
 * slung alone gets a convoy tracking it unless `no_convoy`; the tick then wakes or starts a session of the agent
 * and hands it the work.
 */
export async function sling(city: CityRuntime, body: SlingInputBody): Promise<SlingResponse> {
  const agent = city.agent(body.target);
  if (!agent) throw new Problem('agent-not-found', `not_found: agent not found: ${body.target}`);
  if (body.formula !== undefined) {
    throw new Problem('formula-not-found', `not_found: formula not found: ${body.formula} (this city has no formulas)`);
  }
  if (body.bead === undefined) {
    throw new Problem('validation-failed', 'invalid: bead is required', {
      errors: [{ location: 'body.bead', message: 'bead is required (the bead or convoy to route)' }],
    });
  }
  const bead = city.beads.get(body.bead);
  const warnings: string[] = [];
  if (!agent.available)
    warnings.push(`agent ${agent.name} is unavailable (${agent.unavailableReason}): the work waits`);
  else if (agent.config.suspended || city.config.workspace.suspended) {
    warnings.push(`agent ${agent.name} is suspended: the work waits until it is resumed`);
  }
  const isConvoy = bead.issue_type === 'convoy';
  const members = isConvoy ? convoyMembers(city, bead) : [bead];
  for (const member of members) {
    if (member.status === 'closed' && !(body.force && !isConvoy)) {
      if (isConvoy) continue;
      throw new Problem(
        'conflict-wrong-state',
        `conflict: bead ${member.id} is closed; pass force to reopen and route it`,
      );
    }
    if (member.issue_type === 'session' || member.issue_type === 'message' || member.issue_type === 'convoy') {
      throw new Problem('validation-failed', `invalid: bead ${member.id} is a ${member.issue_type}, not work`, {
        errors: [{ location: 'body.bead', message: `a ${member.issue_type} cannot be slung`, value: member.id }],
      });
    }
    if (member.assignee && !body.reassign && member.metadata?.[ASSIGNED_SESSION] === undefined) {
      warnings.push(`bead ${member.id} is assigned to ${member.assignee}: pass reassign to hand it to ${agent.name}`);
    }
  }
  const routed: string[] = [];
  for (const member of members) {
    if (member.status === 'closed' && isConvoy) continue;
    const held = member.metadata?.[ASSIGNED_SESSION];
    await city.beads.update(member.id, {
      ...(member.status === 'closed' ? { status: 'open' } : {}),
      ...(body.reassign || held
        ? { assignee: '', ...(member.status === 'in_progress' ? { status: 'open' } : {}) }
        : {}),
      metadata: { [ROUTED_TO]: agent.name, ...(held ? { [ASSIGNED_SESSION]: '' } : {}) },
    });
    routed.push(member.id);
  }
  let workflowId: string | undefined = isConvoy ? bead.id : undefined;
  if (!isConvoy && !body.no_convoy) {
    const { convoy } = await city.convoys.create({
      title: body.title ?? `${bead.title} → ${agent.name}`,
      items: [bead.id],
    });
    workflowId = convoy.id;
  }
  city.tick?.poke();
  return {
    status: 'slung',
    target: agent.name,
    bead: bead.id,
    mode: isConvoy ? 'convoy' : 'direct',
    routed,
    ...(workflowId ? { workflow_id: workflowId } : {}),
    ...(warnings.length ? { warnings } : {}),
  };
}

function convoyMembers(city: CityRuntime, convoy: Bead): Bead[] {
  const ids = (convoy.dependencies ?? []).filter((d) => d.type === 'tracks').map((d) => d.depends_on_id);
  return [...new Set(ids)].map((id) => city.beads.store.get(id)).filter((b): b is Bead => b !== undefined);
}
