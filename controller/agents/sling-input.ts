import type { SlingInputBody } from '../../shared/dto/agents.js';
import type { ErrorDetail } from '../../shared/dto/errors.js';
import type { CityRigConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import type { Session } from '../sessions/session.js';
import type { AgentDefinition } from '../agent-catalog/agent-catalog.js';

/** What a sling's `target` (with its `rig`) names: an agent, or an open session (and its agent, when it has one). */
export type SlingTarget =
  { kind: 'agent'; agent: AgentDefinition } | { kind: 'session'; session: Session; agent?: AgentDefinition };

/** How a sling body's fields may be combined; every fault named at once, as a 422, before anything is looked up. */
export function checkSlingBody(body: SlingInputBody): void {
  const errors: ErrorDetail[] = [];
  const at = (location: string, message: string) => errors.push({ location: `body.${location}`, message });
  const sources = (['bead', 'beads', 'text'] as const).filter((k) => body[k] !== undefined);
  if (sources.length > 1) at(sources[1]!, `${sources.join(' and ')} do not go together: give one of bead, beads, text`);
  if (body.beads !== undefined && body.beads.length === 0) at('beads', 'beads names at least one bead');
  if (body.text !== undefined && body.text.trim() === '') at('text', 'text is empty');
  if (body.formula !== undefined && (body.beads !== undefined || body.text !== undefined))
    at('formula', 'a formula is slung alone or with one bead (bead), not with beads or text');
  if (body.owned && body.no_convoy) at('owned', 'owned marks the convoy: it cannot go with no_convoy');
  if (body.no_formula && body.formula !== undefined) at('no_formula', 'no_formula conflicts with formula');
  if (body.attached_bead_id !== undefined && body.formula === undefined)
    at('attached_bead_id', 'attached_bead_id goes with formula (the bead its run is for)');
  if (body.merge !== undefined && !['direct', 'review', 'push', 'mr', 'local'].includes(body.merge))
    at('merge', 'merge is direct, review, push, mr or local');
  if (errors.length) throw new Problem('validation-failed', `invalid: ${errors[0]!.message}`, { errors });
}

/**
 * The target a sling names: with `rig`, a bare name is that rig's agent (`rig/name`) and a qualified one must be
 * in it; without, an agent by name, else an open session by id, name or alias. Unknown: a 404.
 */
export function resolveSlingTarget(
  body: SlingInputBody,
  city: {
    agent(name: string): AgentDefinition | undefined;
    rig(name: string): CityRigConfig | undefined;
    openSession(idOrName: string): Session | undefined;
  },
): SlingTarget {
  if (body.rig !== undefined) {
    if (!city.rig(body.rig)) throw new Problem('rig-not-found', `not_found: rig not found: ${body.rig}`);
    const slash = body.target.lastIndexOf('/');
    if (slash >= 0 && body.target.slice(0, slash) !== body.rig) {
      throw new Problem('validation-failed', `invalid: target ${body.target} is not in rig ${body.rig}`, {
        errors: [{ location: 'body.rig', message: `rig ${body.rig} conflicts with target ${body.target}` }],
      });
    }
    const name = slash >= 0 ? body.target : `${body.rig}/${body.target}`;
    const agent = city.agent(name);
    if (!agent) throw new Problem('agent-not-found', `not_found: agent not found in rig ${body.rig}: ${name}`);
    return { kind: 'agent', agent };
  }
  const agent = city.agent(body.target);
  if (agent) return { kind: 'agent', agent };
  const session = city.openSession(body.target);
  if (session) {
    if (body.formula !== undefined) {
      throw new Problem('validation-failed', 'invalid: a formula’s steps are routed to an agent, not to a session', {
        errors: [{ location: 'body.target', message: `target the session's agent (${session.record.template})` }],
      });
    }
    return { kind: 'session', session, agent: city.agent(session.record.template) };
  }
  throw new Problem('agent-not-found', `not_found: no agent or open session named ${body.target}`);
}

/** What a session is told of the merge strategy a bead was slung with. */
export function mergeNote(strategy: string | undefined): string {
  switch (strategy) {
    case 'direct':
      return '; merge: direct (your worktree branch goes into its base when you close the bead)';
    case 'review':
      return '; merge: review (your worktree branch is held for a person to review when you close the bead)';
    case 'push':
      return "; merge: push (your worktree branch is pushed to the rig's remote when you close the bead)";
    case 'local':
      return '; merge: local (commit on your branch and leave it unmerged: a person merges it)';
    case 'mr':
      return '; merge: mr (push your branch and open a merge request for it before you close the bead)';
    default:
      return '';
  }
}
