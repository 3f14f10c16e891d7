import { expect } from 'chai';
import { CityApi, DEP_KINDS, expectProblem, type Bead } from './helpers/city-api.js';
import { BLOCKING, ids, withWorkCity } from './helpers/work-units.js';

// Dependencies between beads (each kind, cycles, children) and the graph from a root bead.
// A supervisor and city of this file's own; what these files share is in helpers/work-units.ts.

describe('work units over the API: beads, mail and convoys', function () {
  this.timeout(60_000);
  let api: CityApi;
  withWorkCity((city) => ({ api } = city));

  describe('dependencies', function () {
    it('adds, lists and removes a dependency of each kind; `needs` holds only the blocking ones', async function () {
      const bead = await api.create({ title: 'depends on many' });
      const targets: Record<string, Bead> = {};
      for (const kind of DEP_KINDS) {
        targets[kind] = await api.create({ title: `target of ${kind}` });
        const added = (await api.addDep(bead.id, targets[kind].id, kind)) as Bead;
        expect(added.id).to.equal(bead.id);
        expect(added.dependencies).to.deep.include({ issue_id: bead.id, depends_on_id: targets[kind].id, type: kind });
      }
      const now = await api.bead(bead.id);
      expect(now.dependencies).to.have.deep.members(
        DEP_KINDS.map((kind) => ({ issue_id: bead.id, depends_on_id: targets[kind].id, type: kind })),
      );
      expect(now.needs).to.have.members(BLOCKING.map((k) => targets[k].id));
      expect(now.is_blocked).to.equal(true);

      const deps = await api.get<{ dependencies: unknown[]; depends_on: Bead[]; dependents: Bead[]; children: Bead[] }>(
        `/bead/${bead.id}/deps`,
      );
      expect(deps.status).to.equal(200);
      expect(deps.body.dependencies).to.have.deep.members(now.dependencies!);
      expect(ids(deps.body.depends_on)).to.have.members(DEP_KINDS.map((k) => targets[k].id));
      for (const kind of DEP_KINDS) {
        const other = await api.get<{ dependents: Bead[] }>(`/bead/${targets[kind].id}/deps`);
        expect(ids(other.body.dependents), kind).to.deep.equal([bead.id]);
      }

      // Removing one kind leaves the others.
      for (const kind of DEP_KINDS) {
        const removed = (await api.removeDep(bead.id, targets[kind].id, kind)) as Bead;
        expect(removed.dependencies!.map((d) => d.type)).to.not.include(kind);
      }
      const bare = await api.bead(bead.id);
      expect(bare.dependencies).to.deep.equal([]);
      expect(bare.needs).to.deep.equal([]);
      expect(bare.is_blocked).to.equal(false);
    });

    it('defaults to `blocks`; a second edge of another kind to the same bead is kept apart; removal without a kind removes all', async function () {
      const bead = await api.create({ title: 'two edges' });
      const target = await api.create({ title: 'one target' });
      await api.addDep(bead.id, target.id);
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([
        { issue_id: bead.id, depends_on_id: target.id, type: 'blocks' },
      ]);
      // The same edge again changes nothing.
      await api.addDep(bead.id, target.id, 'blocks');
      await api.addDep(bead.id, target.id, 'relates-to');
      expect((await api.bead(bead.id)).dependencies).to.have.length(2);
      await api.removeDep(bead.id, target.id);
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([]);
    });

    it('lists children (beads whose parent it is) in GET …/deps', async function () {
      const parent = await api.create({ title: 'deps parent' });
      const c1 = await api.create({ title: 'deps child 1', parent: parent.id });
      const c2 = await api.create({ title: 'deps child 2' });
      await api.update(c2.id, { parent: parent.id });
      const deps = await api.get<{ children: Bead[] }>(`/bead/${parent.id}/deps`);
      expect(ids(deps.body.children)).to.have.members([c1.id, c2.id]);
      await api.update(c1.id, { parent: null });
      expect(ids((await api.get<{ children: Bead[] }>(`/bead/${parent.id}/deps`)).body.children)).to.deep.equal([
        c2.id,
      ]);
    });

    it('refuses a dependency cycle with 422: direct, transitive, across blocking kinds, and through parent-child', async function () {
      const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((t) => api.create({ title: `cycle ${t}` })));
      await api.addDep(a.id, b.id, 'blocks');
      await api.addDep(b.id, c.id, 'waits-for');
      const direct = await api.post(`/bead/${b.id}/deps`, { depends_on: a.id, type: 'blocks' });
      expectProblem(direct, 422, 'validation-failed');
      for (const kind of ['blocks', 'waits-for', 'conditional-blocks', 'parent-child'] as const) {
        const transitive = await api.post(`/bead/${c.id}/deps`, { depends_on: a.id, type: kind });
        expectProblem(transitive, 422, 'validation-failed');
      }
      expectProblem(await api.post(`/bead/${a.id}/deps`, { depends_on: a.id }), 422, 'validation-failed');
      // Nothing was added by the refused requests.
      expect((await api.bead(c.id)).dependencies).to.deep.equal([]);
      expect((await api.bead(b.id)).dependencies).to.have.length(1);
    });

    it('refuses a dependency on a missing bead (422), an unknown kind (422), and removing an edge that is not there (404)', async function () {
      const bead = await api.create({ title: 'dep errors' });
      expectProblem(await api.post(`/bead/${bead.id}/deps`, { depends_on: 'wc-999999' }), 422, 'validation-failed', {
        location: 'body.depends_on',
      });
      expectProblem(
        await api.post(`/bead/${bead.id}/deps`, { depends_on: bead.id, type: 'likes' }),
        422,
        'validation-failed',
        {
          location: 'body.type',
        },
      );
      expectProblem(await api.post(`/bead/${bead.id}/deps`, {}), 422, 'validation-failed', {
        location: 'body.depends_on',
      });
      const other = await api.create({ title: 'not a dependency' });
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}`), 404, 'bead-not-found');
      await api.addDep(bead.id, other.id, 'tracks');
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}?type=blocks`), 404, 'bead-not-found');
      expectProblem(await api.del(`/bead/${bead.id}/deps/${other.id}?type=likes`), 422, 'validation-failed', {
        location: 'query.type',
      });
      await api.removeDep(bead.id, other.id, 'tracks');
      expect((await api.bead(bead.id)).dependencies).to.deep.equal([]);
    });
  });

  describe('graph from a root', function () {
    it('holds the root, its parent closure, the `ctl.root_bead_id` members and their children, with the edges among them', async function () {
      const root = await api.create({ title: 'graph root', type: 'epic' });
      const child = await api.create({ title: 'graph child', parent: root.id });
      const grandchild = await api.create({ title: 'graph grandchild', parent: child.id });
      const member = await api.create({ title: 'graph member', metadata: { 'ctl.root_bead_id': root.id } });
      const memberChild = await api.create({ title: 'graph member child', parent: member.id });
      const outsider = await api.create({ title: 'graph outsider' });
      await api.addDep(grandchild.id, member.id, 'waits-for');
      await api.addDep(child.id, outsider.id, 'blocks');
      await api.close(grandchild.id);

      const reply = await api.get<{
        root: Bead;
        beads: Bead[];
        deps: { from: string; to: string; kind?: string }[];
        membership: string;
      }>(`/beads/graph/${root.id}`);
      expect(reply.status).to.equal(200);
      const graph = reply.body;
      expect(graph.root).to.deep.equal(await api.bead(root.id));
      expect(ids(graph.beads)).to.have.members([root.id, child.id, grandchild.id, member.id, memberChild.id]);
      expect(graph.membership).to.equal('direct-root-id+parent-closure');
      expect(graph.deps).to.have.deep.members([
        { from: child.id, to: root.id, kind: 'parent-child' },
        { from: grandchild.id, to: child.id, kind: 'parent-child' },
        { from: memberChild.id, to: member.id, kind: 'parent-child' },
        { from: grandchild.id, to: member.id, kind: 'waits-for' },
      ]);
      // A bead whose root metadata names another root is not a member.
      const elsewhere = await api.create({ title: 'other root member', metadata: { 'ctl.root_bead_id': child.id } });
      const again = await api.get<{ beads: Bead[] }>(`/beads/graph/${root.id}`);
      expect(ids(again.body.beads)).to.not.include(elsewhere.id);
    });

    it('from a convoy: its tracked members (and their children) too', async function () {
      const a = await api.create({ title: 'convoy graph a' });
      const b = await api.create({ title: 'convoy graph b' });
      const bChild = await api.create({ title: 'convoy graph b child', parent: b.id });
      const convoy = (await api.post<Bead>('/convoys', { title: 'graph convoy', items: [a.id, b.id] })).body;
      const graph = await api.get<{
        beads: Bead[];
        deps: { from: string; to: string; kind?: string }[];
        membership: string;
      }>(`/beads/graph/${convoy.id}`);
      expect(graph.status).to.equal(200);
      expect(ids(graph.body.beads)).to.have.members([convoy.id, a.id, b.id, bChild.id]);
      expect(graph.body.membership).to.equal('direct-root-id+parent-closure+convoy-members');
      expect(graph.body.deps).to.deep.include({ from: convoy.id, to: a.id, kind: 'tracks' });
      expect(graph.body.deps).to.deep.include({ from: convoy.id, to: b.id, kind: 'tracks' });
      expect(graph.body.deps).to.deep.include({ from: bChild.id, to: b.id, kind: 'parent-child' });
    });
  });
});
