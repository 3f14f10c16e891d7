import { expect } from 'chai';
import { checkSlingBody, mergeNote, resolveSlingTarget } from '../../controller/agents/sling-input.js';
import type { AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import type { Session } from '../../controller/sessions/session.js';
import { Problem } from '../../shared/http/problem.js';

const agents = new Map(['worker', 'web/polecat'].map((name) => [name, { name } as AgentDefinition]));
const desk = { id: 'sl-1', record: { template: 'worker', session_name: 'worker-1' } } as unknown as Session;
const city = {
  agent: (name: string) => agents.get(name),
  rig: (name: string) => (name === 'web' ? { name: 'web', suspended: false } : undefined),
  openSession: (name: string) => (name === 'worker-1' || name === 'sl-1' ? desk : undefined),
};
const problemOf = (f: () => unknown): Problem => {
  try {
    f();
  } catch (err) {
    if (err instanceof Problem) return err;
    throw err;
  }
  throw new Error('no problem');
};

describe('sling input (unit)', () => {
  it('names every field that does not go with another', () => {
    const p = problemOf(() =>
      checkSlingBody({ target: 'w', bead: 'a', text: 't', owned: true, no_convoy: true, merge: 'x' as 'mr' }),
    );
    expect(p.status).to.equal(422);
    expect(p.errors!.map((e) => e.location)).to.deep.equal(['body.text', 'body.owned', 'body.merge']);
    expect(() => checkSlingBody({ target: 'w', beads: ['a', 'b'], owned: true, merge: 'local' })).to.not.throw();
  });

  it('resolves a target: an agent, in a rig, or an open session', () => {
    expect(resolveSlingTarget({ target: 'worker' }, city)).to.deep.include({ kind: 'agent' });
    const inRig = resolveSlingTarget({ target: 'polecat', rig: 'web' }, city);
    expect(inRig.kind === 'agent' && inRig.agent.name).to.equal('web/polecat');
    expect(problemOf(() => resolveSlingTarget({ target: 'api/polecat', rig: 'web' }, city)).status).to.equal(422);
    expect(problemOf(() => resolveSlingTarget({ target: 'polecat', rig: 'nope' }, city)).code).to.equal(
      'rig-not-found',
    );
    const session = resolveSlingTarget({ target: 'worker-1' }, city);
    expect(session.kind).to.equal('session');
    expect(session.agent?.name).to.equal('worker');
    expect(problemOf(() => resolveSlingTarget({ target: 'sl-1', formula: 'f' }, city)).status).to.equal(422);
    expect(problemOf(() => resolveSlingTarget({ target: 'nobody' }, city)).code).to.equal('agent-not-found');
  });

  it('tells a session what each merge strategy asks of it', () => {
    expect(mergeNote('direct')).to.match(/goes into its base/);
    expect(mergeNote('local')).to.match(/leave it unmerged/);
    expect(mergeNote('mr')).to.match(/merge request/);
    expect(mergeNote(undefined)).to.equal('');
  });
});
