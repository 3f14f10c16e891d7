import type { Bead } from '../../shared/dto/beads.js';
import type { SlingInputBody, SlingResponse } from '../../shared/dto/agents.js';
import type { CityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import { compileForRun, launchFormula } from '../formulas/launch.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { ConvoysService } from '../beads/convoys.js';
import type { FormulaCatalog } from '../formulas/formula-catalog.js';
import type { MoleculeEngine } from '../molecules/molecule-engine.js';
import type { RunViews } from '../molecules/run-views.js';
import type { RunVars } from '../formulas/run-vars.js';
import type { Session } from '../sessions/session.js';
import { checkSlingBody, resolveSlingTarget, type SlingTarget } from './sling-input.js';
import { ASSIGNED_SESSION, MERGE_STRATEGY, ROUTED_TO } from '../beads/work-schema.js';
import type { WorkHolding } from './work-holding.js';

/** What slinging needs of the city: its agents, rigs and open sessions, its work, formula runs, and the tick. */
export interface SlingHost {
  agent(name: string): AgentDefinition | undefined;
  readonly config: Pick<CityConfig, 'workspace' | 'rigs'>;
  /** An open session by id, name or alias. */
  openSession(idOrName: string): Session | undefined;
  beads: BeadsService;
  /** Handing a bead straight to a session. */
  holding: Pick<WorkHolding, 'hold'>;
  convoys: Pick<ConvoysService, 'create'>;
  formulas: FormulaCatalog;
  molecules: MoleculeEngine;
  runs: Pick<RunViews, 'status'>;
  runVars: Pick<RunVars, 'of'>;
  tick: { poke(): void };
}

/**
 * `POST /sling`: routes work — a bead, several (`beads`), a convoy's open members, or free `text` made a bead —
 * to an agent by stamping `ctl.routed_to` (the tick then wakes or starts a session of it and hands the work over),
 * or hands it straight to an open session named as the target. Checked in full before anything changes: a body
 * whose fields do not go together is a 422, an unknown target or bead a 404, and nothing is written. Work slung
 * without a convoy gets one tracking it unless `no_convoy` (`owned`: one that does not close by itself).
 */
export async function sling(city: SlingHost, body: SlingInputBody): Promise<SlingResponse> {
  checkSlingBody(body);
  const target = resolveSlingTarget(body, {
    agent: (name) => city.agent(name),
    rig: (name) => city.config.rigs.find((r) => r.name === name),
    openSession: (name) => city.openSession(name),
  });
  const warnings: string[] = [];
  const agent = target.agent;
  if (target.kind === 'agent' && agent) {
    if (!agent.available)
      warnings.push(`agent ${agent.name} is unavailable (${agent.unavailableReason}): the work waits`);
    else if (agent.config.suspended || city.config.workspace.suspended) {
      warnings.push(`agent ${agent.name} is suspended: the work waits until it is resumed`);
    }
  }
  if (body.formula !== undefined) return slingFormula(city, agent!, body.formula, body, warnings);
  if (body.bead === undefined && body.beads === undefined && body.text === undefined) {
    throw new Problem('validation-failed', 'invalid: bead is required', {
      errors: [{ location: 'body.bead', message: 'bead, beads or text is required (the work to route)' }],
    });
  }
  // Every named bead is looked up (a 404) before anything is written, text made a bead included.
  const named = (body.beads ?? (body.bead !== undefined ? [body.bead] : [])).map((id) => city.beads.get(id));
  const single = named.length === 1 && body.beads === undefined ? named[0] : undefined;
  const isConvoy = single?.issue_type === 'convoy';
  // An agent with a default formula gets a single bead wrapped in a run of it (the bead is the run's attachment).
  const wrapping = target.kind === 'agent' ? agent!.config.default_sling_formula : undefined;
  if (wrapping && !body.no_formula && !isConvoy && (single || body.text !== undefined)) {
    if (single?.status === 'closed' && !body.force) throw closedProblem(single);
    // The formula and vars are checked before the bead is touched (text is made a bead only then).
    compileForRun(
      city.formulas,
      wrapping,
      body.vars ?? {},
      await city.runVars.of({ target: agent!.name, attachedBeadId: single?.id }),
    );
    const bead = single ?? (await createFromText(city, body));
    if (bead.status === 'closed') await city.beads.update(bead.id, { status: 'open' });
    if (body.merge) await city.beads.update(bead.id, { metadata: { [MERGE_STRATEGY]: body.merge } });
    const reply = await slingFormula(
      city,
      agent!,
      wrapping,
      { ...body, bead: bead.id, attached_bead_id: body.attached_bead_id ?? bead.id },
      warnings,
    );
    return single ? reply : { ...reply, created_bead: bead.id };
  }
  const members = isConvoy ? convoyMembers(city, single) : named;
  for (const member of members) checkMember(member, { force: !!body.force && !isConvoy, isConvoy });
  for (const member of members) {
    if (member.assignee && !body.reassign && member.metadata?.[ASSIGNED_SESSION] === undefined) {
      const to = target.kind === 'session' ? target.session.record.session_name : agent!.name;
      warnings.push(`bead ${member.id} is assigned to ${member.assignee}: pass reassign to hand it to ${to}`);
    }
  }
  const created = body.text !== undefined ? await createFromText(city, body) : undefined;
  const work = created ? [created] : members.filter((m) => !(isConvoy && m.status === 'closed'));
  const routed: string[] = [];
  for (const member of work) {
    routed.push(
      target.kind === 'session'
        ? await handToSession(city, target, member, body)
        : await routeToAgent(city, agent!, member, body),
    );
  }
  let workflowId: string | undefined = isConvoy ? single.id : undefined;
  if (!isConvoy && !body.no_convoy) {
    const first = work[0]!;
    const to = target.kind === 'session' ? target.session.record.session_name : agent!.name;
    const { convoy } = await city.convoys.create(
      {
        title: body.title ?? (work.length === 1 ? `${first.title} → ${to}` : `${work.length} beads → ${to}`),
        items: work.map((b) => b.id),
        ...(body.rig ? { rig: body.rig } : {}),
      },
      undefined,
      { owned: !!body.owned },
    );
    workflowId = convoy.id;
  }
  // No poke: every write above is a bead event the tick hears, and one more would only make a pass of its own.
  const mode =
    target.kind === 'session' ? 'session' : isConvoy ? 'convoy' : body.beads !== undefined ? 'batch' : 'direct';
  return {
    status: 'slung',
    target: agent?.name ?? (target.kind === 'session' ? target.session.record.template : body.target),
    ...(target.kind === 'session' ? { session_id: target.session.id } : {}),
    ...(single ? { bead: single.id } : created ? { bead: created.id } : {}),
    mode,
    routed,
    ...(created ? { created_bead: created.id } : {}),
    ...(workflowId ? { workflow_id: workflowId } : {}),
    ...(warnings.length ? { warnings } : {}),
  };
}

function closedProblem(bead: Bead): Problem {
  return new Problem('conflict-wrong-state', `conflict: bead ${bead.id} is closed; pass force to reopen and route it`);
}

/** Whether a bead can be slung: work (not a session, message or convoy), and open unless `force` reopens it. */
function checkMember(member: Bead, o: { force: boolean; isConvoy: boolean }): void {
  if (member.status === 'closed' && !o.force) {
    if (o.isConvoy) return;
    throw closedProblem(member);
  }
  if (member.issue_type === 'session' || member.issue_type === 'message' || member.issue_type === 'convoy') {
    throw new Problem('validation-failed', `invalid: bead ${member.id} is a ${member.issue_type}, not work`, {
      errors: [{ location: 'body.bead', message: `a ${member.issue_type} cannot be slung`, value: member.id }],
    });
  }
}

/** A task bead made of free text: its first line the title, the whole text its description; in the rig's prefix. */
async function createFromText(city: SlingHost, body: SlingInputBody): Promise<Bead> {
  const text = body.text!.trim();
  const firstLine = text.split('\n')[0]!.trim();
  const title = firstLine.length > 120 ? `${firstLine.slice(0, 117)}…` : firstLine;
  const prefix = body.rig ? city.config.rigs.find((r) => r.name === body.rig)?.prefix : undefined;
  const { bead } = await city.beads.create({
    title,
    type: 'task',
    ...(text !== firstLine || title !== firstLine ? { description: text } : {}),
    ...(prefix ? { prefix } : {}),
  });
  return bead;
}

/** Routes a bead to an agent: the tick hands it to one of its sessions (a bead a session held is let go first). */
async function routeToAgent(city: SlingHost, agent: AgentDefinition, member: Bead, body: SlingInputBody) {
  const held = member.metadata?.[ASSIGNED_SESSION];
  await city.beads.update(member.id, {
    ...(member.status === 'closed' ? { status: 'open' } : {}),
    ...(body.reassign || held ? { assignee: '', ...(member.status === 'in_progress' ? { status: 'open' } : {}) } : {}),
    metadata: {
      [ROUTED_TO]: agent.name,
      ...(held ? { [ASSIGNED_SESSION]: '' } : {}),
      ...(body.merge ? { [MERGE_STRATEGY]: body.merge } : {}),
    },
  });
  return member.id;
}

/**
 * Hands a bead straight to an open session, as the tick hands routed work: assigned to it, in progress, and the
 * session told (woken if it sleeps). Routed to the session's agent too, so it goes back to that agent's sessions
 * if this one ends before it is done.
 */
async function handToSession(
  city: SlingHost,
  target: Extract<SlingTarget, { kind: 'session' }>,
  member: Bead,
  body: SlingInputBody,
): Promise<string> {
  const taken = await city.holding.hold(target.session, member, {
    routedTo: target.agent?.name,
    merge: body.merge,
    wake: `slung ${member.id}`,
  });
  return taken.id;
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
  if (attached !== undefined && body.merge) {
    await city.beads.update(attached, { metadata: { [MERGE_STRATEGY]: body.merge } });
  }
  let convoyId: string | undefined;
  if (attached !== undefined && !body.no_convoy) {
    const { convoy } = await city.convoys.create(
      {
        title: `${body.title ?? (checked.description.split('\n')[0] || checked.name)} → ${agent.name}`,
        items: [attached],
        ...(body.rig ? { rig: body.rig } : {}),
      },
      undefined,
      { owned: !!body.owned },
    );
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
  return [...new Set(ids)].map((id) => city.beads.find(id)).filter((b): b is Bead => b !== undefined);
}
