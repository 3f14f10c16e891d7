import { expect } from 'chai';
import type { components } from '../../shared/generated/api-types.js';
import { edgesOf, neighboursAfter, withEvent } from '../../ui/src/bead-neighbours.js';
import { applyBeadEvent, beadOf, listed, waitingOn, type BeadFilter } from '../../ui/src/bead-rows.js';
import { replay, type Rows } from '../../ui/src/rows.js';
import type { Bead } from '../helpers/city-api.js';

type Deps = components['schemas']['BeadDepsResponse'];
/** An event as the page's stream hands it over. */
interface LiveEvent {
  seq: number;
  type: string;
  ts: string;
  actor: string;
  subject?: string;
  payload?: Record<string, unknown>;
}

// How the beads board (and a bead's page) takes a `bead.*` event's payload (the bead as it is now) into the rows it has loaded,
// instead of asking the API for them again. Issue 31, point 6.

const bead = (n: number, more: Partial<Bead> = {}): Bead => ({
  id: `ct-${n}`,
  title: `bead ${n}`,
  status: 'open',
  issue_type: 'task',
  created_at: '2026-12-02T00:00:00.000Z',
  ...more,
});
const event = (type: string, b: Bead): LiveEvent => ({
  seq: 1,
  type,
  ts: '2026-12-02T00:00:00.000Z',
  actor: 'api',
  subject: b.id,
  payload: { bead: b },
});
const open: BeadFilter = { status: 'open', type: '', label: '', assignee: '', rig: '' };
const rows = (ns: number[], total: number, complete = false): Rows<Bead> => ({
  items: ns.map((n) => bead(n)),
  total,
  complete,
});
const ids = (items: Bead[] | undefined) => (items ?? []).map((b) => b.id);

describe('the beads board’s rows after a bead event', () => {
  it('puts a created bead at the top and counts it', () => {
    const after = applyBeadEvent(rows([9, 7, 5], 40), event('bead.created', bead(10)), open);
    expect(ids(after?.items)).to.deep.equal(['ct-10', 'ct-9', 'ct-7', 'ct-5']);
    expect(after).to.include({ total: 41, countKnown: true });
  });

  it('puts a bead that comes into the list where its number puts it, among the rows loaded', () => {
    const after = applyBeadEvent(rows([9, 7, 5], 40), event('bead.updated', bead(8)), open);
    expect(ids(after?.items)).to.deep.equal(['ct-9', 'ct-8', 'ct-7', 'ct-5']);
    expect(after).to.include({ total: 41, countKnown: true });
  });

  it('changes a loaded bead in place, its count kept', () => {
    const after = applyBeadEvent(rows([9, 7, 5], 3, true), event('bead.updated', bead(7, { title: 'new' })), open);
    expect(after?.items.map((b) => b.title)).to.deep.equal(['bead 9', 'new', 'bead 5']);
    expect(after).to.include({ total: 3, countKnown: true });
  });

  it('takes out a bead that closed, was deleted or no longer matches the filters', () => {
    const closed = applyBeadEvent(rows([9, 7, 5], 40), event('bead.closed', bead(7, { status: 'closed' })), open);
    expect(ids(closed?.items)).to.deep.equal(['ct-9', 'ct-5']);
    expect(closed).to.include({ total: 39, countKnown: true });
    const deleted = applyBeadEvent(rows([9, 7, 5], 40), event('bead.deleted', bead(9)), open);
    expect(ids(deleted?.items)).to.deep.equal(['ct-7', 'ct-5']);
    const relabelled = applyBeadEvent(rows([9, 7], 2, true), event('bead.updated', bead(9, { labels: [] })), {
      ...open,
      label: 'ui',
    });
    expect(ids(relabelled?.items)).to.deep.equal(['ct-7']);
    expect(relabelled?.total).to.equal(1);
  });

  it('changes nothing for a bead that neither was nor is in the rows loaded', () => {
    expect(applyBeadEvent(rows([9, 7], 2, true), event('bead.closed', bead(8, { status: 'closed' })), open)).to.equal(
      undefined,
    );
    expect(
      applyBeadEvent(rows([9, 7], 9), event('bead.created', bead(10, { issue_type: 'bug' })), {
        ...open,
        type: 'task',
      }),
    ).to.equal(undefined);
  });

  it('leaves a bead past the rows loaded to its page, and says the count is not known', () => {
    // ct-3 is below ct-5, the last row loaded, and more rows follow: was it counted before? The payload cannot say.
    const after = applyBeadEvent(rows([9, 7, 5], 40), event('bead.closed', bead(3, { status: 'closed' })), open);
    expect(ids(after?.items)).to.deep.equal(['ct-9', 'ct-7', 'ct-5']);
    expect(after).to.include({ total: 40, countKnown: false });
    // A bead just made was counted by nobody.
    const made = applyBeadEvent(rows([9, 7, 5], 40), event('bead.created', bead(3)), open);
    expect(made).to.include({ total: 41, countKnown: true });
  });

  it('ignores events that change no row: comments, and other families', () => {
    expect(beadOf(event('bead.commented', bead(9)))).to.equal(undefined);
    expect(beadOf(event('session.started', bead(9)))).to.equal(undefined);
    expect(applyBeadEvent(rows([9], 1, true), event('bead.comment_deleted', bead(9, { status: 'closed' })), open)).to.be
      .undefined;
  });

  it('lists a bead as GET …/beads does: by status, type, label, assignee and rig, never an ephemeral one', () => {
    const b = bead(1, { labels: ['ui'], assignee: 'mayor', metadata: { rig: 'web' } });
    const any: BeadFilter = { status: '', type: '', label: '', assignee: '', rig: '' };
    expect(listed(b, any)).to.equal(true);
    expect(listed(bead(1, { status: 'closed' }), any)).to.equal(true);
    expect(listed(b, { ...any, status: 'in_progress' })).to.equal(false);
    expect(listed(b, { ...any, type: 'task', label: 'ui', assignee: 'mayor', rig: 'web' })).to.equal(true);
    expect(listed(b, { ...any, type: 'bug' })).to.equal(false);
    expect(listed(b, { ...any, label: 'cli' })).to.equal(false);
    expect(listed(b, { ...any, assignee: 'deacon' })).to.equal(false);
    expect(listed(b, { ...any, rig: 'api' })).to.equal(false);
    expect(listed(bead(1, { ephemeral: true }), any)).to.equal(false);
  });

  it('names the loaded rows whose blocked state a bead’s closing or reopening may change', () => {
    const items = [
      bead(9, { needs: ['ct-2'], is_blocked: true }),
      bead(8, { needs: ['ct-2'], is_blocked: false }),
      bead(7, { needs: ['ct-3'], is_blocked: true }),
    ];
    expect(waitingOn(items, bead(2, { status: 'closed' }))).to.deep.equal(['ct-9']);
    expect(waitingOn(items, bead(2, { status: 'open' }))).to.deep.equal(['ct-8']);
    expect(waitingOn(items, bead(5, { status: 'closed' }))).to.deep.equal([]);
  });
});

describe('a page answered after bead events it may not hold', () => {
  // Made while the request ran: the answer may have been read before it or after it.
  const made = event('bead.created', bead(10));
  const change = (rows: Rows<Bead>) => applyBeadEvent(rows, made, open);

  it('holds the bead either way, once', () => {
    const before = replay({ items: [bead(9)], total: 1, loading: false }, [change]);
    expect(ids(before.state.items)).to.deep.equal(['ct-10', 'ct-9']);
    expect(before.state.total).to.equal(2);
    const after = replay({ items: [bead(10), bead(9)], total: 2, loading: false }, [change]);
    expect(ids(after.state.items)).to.deep.equal(['ct-10', 'ct-9']);
    expect(after.state.total).to.equal(2);
  });

  it('says when the edits moved the count, which the answer may already hold', () => {
    const renamed = (rows: Rows<Bead>) => applyBeadEvent(rows, event('bead.updated', bead(9, { title: 'x' })), open);
    const state = { items: [bead(9)], total: 1, loading: false };
    expect(replay(state, [renamed]).countMoved).to.equal(false);
    expect(replay(state, [renamed, change]).countMoved).to.equal(true);
  });

  it('says when an edit could not tell the count', () => {
    const past = (rows: Rows<Bead>) => applyBeadEvent(rows, event('bead.updated', bead(3)), open);
    expect(replay({ items: [bead(9)], total: 5, next: 'more', loading: false }, [past]).countKnown).to.equal(false);
    expect(replay({ items: [bead(9)], total: 1, loading: false }, [past]).countKnown).to.equal(true);
  });
});

describe('the bead page after a bead event', () => {
  const deps = (more: Partial<Deps> = {}): Deps => ({
    dependencies: [],
    depends_on: [],
    dependents: [],
    children: [],
    ...more,
  });
  const dependsOnMe = (n: number, more: Partial<Bead> = {}) =>
    bead(n, { dependencies: [{ issue_id: `ct-${n}`, depends_on_id: 'ct-1', type: 'blocks' }], ...more });

  it('puts a neighbour’s new state where it is shown, without reading the neighbours again', () => {
    const before = deps({
      depends_on: [bead(2)],
      dependents: [dependsOnMe(3)],
      children: [bead(4, { parent: 'ct-1' })],
    });
    const closed = neighboursAfter(before, 'ct-1', bead(2, { status: 'closed' }), false);
    expect(closed?.depends_on.map((b) => b.status)).to.deep.equal(['closed']);
    const retitled = neighboursAfter(before, 'ct-1', dependsOnMe(3, { title: 'new' }), false);
    expect(retitled?.dependents.map((b) => b.title)).to.deep.equal(['new']);
    const child = neighboursAfter(before, 'ct-1', bead(4, { parent: 'ct-1', status: 'in_progress' }), false);
    expect(child?.children.map((b) => b.status)).to.deep.equal(['in_progress']);
  });

  it('asks for the neighbours again when who they are changed', () => {
    const before = deps({ dependents: [dependsOnMe(3)], children: [bead(4, { parent: 'ct-1' })] });
    // A new dependent, a new child, a dependent no more, a child moved away, a neighbour deleted.
    expect(neighboursAfter(before, 'ct-1', dependsOnMe(5), false)).to.equal(undefined);
    expect(neighboursAfter(before, 'ct-1', bead(6, { parent: 'ct-1' }), false)).to.equal(undefined);
    expect(neighboursAfter(before, 'ct-1', bead(3), false)).to.equal(undefined);
    expect(neighboursAfter(before, 'ct-1', bead(4), false)).to.equal(undefined);
    expect(neighboursAfter(before, 'ct-1', dependsOnMe(3), true)).to.equal(undefined);
  });

  it('leaves the neighbours as they are for a bead that is none of them', () => {
    const before = deps({ dependents: [dependsOnMe(3)] });
    expect(neighboursAfter(before, 'ct-1', bead(7), false)).to.equal(before);
  });

  it('tells a change of the bead’s own edges from one that leaves them', () => {
    const edged = dependsOnMe(3);
    expect(edgesOf(edged)).to.equal(edgesOf({ ...edged, title: 'other' }));
    expect(edgesOf(edged)).to.not.equal(edgesOf(bead(3)));
  });

  it('puts a new event on top of the history, once', () => {
    const older = { ...event('bead.created', bead(1)), seq: 1 };
    const newer = { ...event('bead.updated', bead(1)), seq: 2 };
    expect(withEvent([older], newer)?.map((e) => e.seq)).to.deep.equal([2, 1]);
    expect(withEvent([newer, older], newer)?.map((e) => e.seq)).to.deep.equal([2, 1]);
    expect(withEvent(undefined, newer)).to.equal(undefined);
  });
});
