import type { Bead } from '../../shared/dto/beads.js';
import type { SlingInputBody, SlingResponse } from '../../shared/dto/agents.js';
import { compileForRun, launchFormula } from '../formulas/launch.js';
import type { AgentDefinition } from './agent-catalog.js';
import { Problem } from '../../shared/http/problem.js';
import type { CityConfig } from '../../shared/config/city-config.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { ConvoysService } from '../beads/convoys.js';
import type { FormulaCatalog } from '../formulas/formula-catalog.js';
import type { MoleculeEngine } from '../molecules/molecule-engine.js';
import type { RunViews } from '../molecules/run-views.js';
import type { RunVars } from '../formulas/run-vars.js';
import { ASSIGNED_SESSION, ROUTED_TO } from './work-board.js';

/** What slinging needs of the city: its agents, its work, formula runs, and the tick to tell. */
export interface SlingHost {
  agent(name: string): AgentDefinition | undefined;
  readonly config: Pick<CityConfig, 'workspace'>;
  beads: BeadsService;
  convoys: Pick<ConvoysService, 'create'>;
  formulas: FormulaCatalog;
  molecules: MoleculeEngine;
  runs: Pick<RunViews, 'status'>;
  runVars: Pick<RunVars, 'of'>;
  tick: { poke(): void };
}

/**
 * `POST /sling`: routes a bead — or each open member of a convoy — to an agent, by stamping `ctl.routed_to`.
 * Checked in full before anything changes (an unknown agent or bead is a 404 and nothing is written). A bead
 * slung alone gets a convoy tracking it unless `no_convoy`; the tick then wakes or starts a session of the agent
 * and hands it the work.
 */
export async function sling(city: SlingHost, body: SlingInputBody): Promise<SlingResponse> {
  const agent = city.agent(body.target);
  if (!agent) throw new Problem('agent-not-found', `not_found: agent not found: ${body.target}`);
  const warnings: string[] = [];
  if (!agent.available)
    warnings.push(`agent ${agent.name} is unavailable (${agent.unavailableReason}): the work waits`);
  else if (agent.config.suspended || city.config.workspace.suspended) {
    warnings.push(`agent ${agent.name} is suspended: the work waits until it is resumed`);
  }
  if (body.formula !== undefined) return slingFormula(city, agent, body.formula, body, warnings);
  if (body.bead === undefined) {
    throw new Problem('validation-failed', 'invalid: bead is required', {
      errors: [{ location: 'body.bead', message: 'bead is required (the bead or convoy to route)' }],
    });
  }
  const bead = city.beads.get(body.bead);
  const isConvoy = bead.issue_type === 'convoy';
  // An agent with a default formula gets a single bead wrapped in a run of it (the bead is the run's attachment).
  const wrapping = agent.config.default_sling_formula;
  if (wrapping && !body.no_formula && !isConvoy) {
    if (bead.status === 'closed' && !body.force) {
      throw new Problem(
        'conflict-wrong-state',
        `conflict: bead ${bead.id} is closed; pass force to reopen and route it`,
      );
    }
    // The formula and vars are checked before the bead is touched.
    compileForRun(
      city.formulas,
      wrapping,
      body.vars ?? {},
      await city.runVars.of({ target: agent.name, attachedBeadId: bead.id }),
    );
    if (bead.status === 'closed') await city.beads.update(bead.id, { status: 'open' });
    return slingFormula(
      city,
      agent,
      wrapping,
      { ...body, attached_bead_id: body.attached_bead_id ?? bead.id },
      warnings,
    );
  }
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
  city.tick.poke();
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

/**
 * A sling with a formula: a run of it whose work steps are routed to the agent (a step's own `assignee` wins),
 * attached to `attached_bead_id` (default: the slung bead), with a convoy tracking the attached bead unless
 * `no_convoy`. Vars and the formula are checked before anything is created (404 / 422).
 */
async function slingFormula(
  city: SlingHost,
  agent: AgentDefinition,
  formula: string,
  body: SlingInputBody,
  warnings: string[] = [],
): Promise<SlingResponse> {
  const attached = body.attached_bead_id ?? body.bead;
  if (attached !== undefined) city.beads.get(attached);
  const vars = body.vars ?? {};
  const run = await city.runVars.of({ target: agent.name, attachedBeadId: attached });
  // The formula is checked before the convoy is made, and the run knows its convoy (`{{convoy_id}}`).
  const checked = compileForRun(city.formulas, formula, vars, run);
  let convoyId: string | undefined;
  if (attached !== undefined && !body.no_convoy) {
    const { convoy } = await city.convoys.create({
      title: `${body.title ?? (checked.description.split('\n')[0] || checked.name)} → ${agent.name}`,
      items: [attached],
    });
    convoyId = convoy.id;
    run.builtins.convoy_id = convoy.id;
  }
  const { root, members } = await launchFormula(
    city.formulas,
    city.molecules,
    formula,
    vars,
    { source: 'sling', routedTo: agent.name, title: body.title, attachedBeadId: attached },
    run,
  );
  city.tick.poke();
  const routed = [...members.values()].filter((b) => b.metadata?.[ROUTED_TO] === agent.name).map((b) => b.id);
  return {
    status: 'slung',
    target: agent.name,
    ...(body.bead ? { bead: body.bead } : {}),
    mode: 'formula',
    routed,
    formula,
    root_bead_id: root.id,
    workflow_id: root.id,
    ...(attached ? { attached_bead_id: attached } : {}),
    ...(convoyId ? { convoy_id: convoyId } : {}),
    run: { kind: 'sling', run_id: root.id, status: city.runs.status(root) },
    ...(warnings.length ? { warnings } : {}),
  };
}

function convoyMembers(city: SlingHost, convoy: Bead): Bead[] {
  const ids = (convoy.dependencies ?? []).filter((d) => d.type === 'tracks').map((d) => d.depends_on_id);
  return [...new Set(ids)].map((id) => city.beads.store.get(id)).filter((b): b is Bead => b !== undefined);
}
