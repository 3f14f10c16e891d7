// What the molecule engine makes, against both bead stores, and a controller stopped in the middle of it: sequential
// pours (each run after the one before ended, however it ended; a controller stopped between two runs goes on),
// pours a dead controller cut short — stopped after every one of their beads in turn — finished once, never made
// twice, and a loop's next iteration made once.
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import type { BeadStore } from '../../controller/beads/bead-store.js';
import { BeadsService } from '../../controller/beads/beads-service.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { SqliteBeadStore } from '../../controller/beads/sqlite-store.js';
import type { CommandRunner } from '../../controller/commands.js';
import { compileFormula } from '../../controller/formulas/formula-compile.js';
import { parseFormula } from '../../controller/formulas/formula-file.js';
import { MoleculeEngine } from '../../controller/molecules/molecule-engine.js';
import * as K from '../../controller/molecules/molecule-keys.js';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

const BACKENDS: { name: string; open: (dir: string) => BeadStore }[] = [
  { name: 'sqlite', open: (dir) => SqliteBeadStore.open(dir, 'tc') },
  { name: 'journal', open: (dir) => JournalBeadStore.open(dir, 'tc') },
];

// Each poured run: two steps of work, then finalize (with its root: four beads).
const PER_FILE =
  '[vars]\nfile = { required = true }\n[[steps]]\nid = "edit"\ntitle = "Edit {{file}}"\n[[steps]]\nid = "test"\ntitle = "Test {{file}}"\nneeds = ["edit"]\n';
// A run that begins with a node the controller closes: a timer gate, open as soon as it is reached.
const GATED =
  '[vars]\nfile = { required = true }\n[[steps]]\nid = "wait"\ngate = { type = "timer", duration = "0s" }\n[[steps]]\nid = "edit"\ntitle = "Edit {{file}}"\nneeds = ["wait"]\n';
const LOOP =
  '[[steps]]\nid = "polish"\ntitle = "Polish"\n[steps.loop]\nuntil = "review.output.approved == yes"\nmax = 3\n[[steps.loop.body]]\nid = "draft"\ntitle = "Draft"\n[[steps.loop.body]]\nid = "review"\ntitle = "Review"\nneeds = ["draft"]\n';
const fanout = (mode: string) =>
  `[[steps]]\nid = "survey"\ntitle = "Survey"\non_complete = { for_each = "output.files", bond = "per-file", vars = { file = "{item}" }${mode} }\n[[steps]]\nid = "merge"\ntitle = "Merge"\nneeds = ["survey"]\nwaits_for = "all-children"\n`;

function compiled(name: string, text: string, vars: Record<string, string> = {}) {
  const parsed = parseFormula(text, `formulas/${name}.toml`, name);
  expect(parsed.errors).to.deep.equal([]);
  const { compiled: out, errors } = compileFormula(parsed.formula!, vars, 'run');
  if (!out) throw new Error(errors.join('; '));
  return out;
}

/** A controller over a store: its beads service and engine, pouring `per-file` for bond nodes. */
function controller(store: BeadStore, pourHook?: () => Promise<void>) {
  const events: { type: string; subject?: string }[] = [];
  const log = {
    append: (e: { type: string; subject?: string }) => (events.push(e), Promise.resolve()),
    newest: () => [],
  } as unknown as EventLog;
  const beads = new BeadsService(store, log);
  const engine: MoleculeEngine = new MoleculeEngine({
    beads,
    log,
    commands: {} as CommandRunner,
    cityRoot: '/nonexistent',
    env: {},
    now: () => Date.now(),
    poke: () => undefined,
    bond: async (formula, vars, options) =>
      (await engine.instantiate(compiled(formula, formula === 'per-file' ? PER_FILE : GATED, vars), options)).root.id,
    pourHook,
  });
  return { beads, engine, events };
}

const byRef = (beads: Bead[], ref: string) => beads.find((b) => b.metadata?.[K.STEP_REF] === ref);
const readyTitles = (store: BeadStore) =>
  store
    .ready({ limit: 1000 })
    .items.map((b) => b.title)
    .sort();
const pouredRoots = (store: BeadStore, parent: string) =>
  store.list({ type: 'molecule', includeClosed: true, metadata: { [K.PARENT_ROOT]: parent }, limit: 1000 }).items;

for (const backend of BACKENDS) {
  describe(`the molecule engine across restarts (unit, ${backend.name} store)`, function () {
    let dir: string;
    let store: BeadStore;
    beforeEach(() => {
      dir = tempDir('ctl-pours-');
      store = backend.open(dir);
    });
    afterEach(() => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Cooks `fanout` and closes its survey with these files: the run's root id. */
    async function cookAndSurvey(c: ReturnType<typeof controller>, mode: string, files: string[]): Promise<string> {
      const { root } = await c.engine.instantiate(compiled('fanout', fanout(mode)), {
        source: 'cook',
      });
      const survey = byRef(c.engine.members(root.id), 'survey')!;
      await c.beads.update(survey.id, { status: 'closed', metadata: { files: JSON.stringify(files) } });
      return root.id;
    }

    async function closeStep(c: ReturnType<typeof controller>, title: string, outcome = 'pass'): Promise<void> {
      const bead = store.ready({ limit: 1000 }).items.find((b) => b.title === title);
      expect(bead, `${title} is ready`).to.not.equal(undefined);
      await c.beads.update(bead!.id, { status: 'closed', metadata: { [K.OUTCOME]: outcome } });
    }

    it('sequential: each run starts once the one before it ended, a failed one too', async function () {
      const c = controller(store);
      const root = await cookAndSurvey(c, ', sequential = true', ['a', 'b', 'c']);
      await waitUntil('three runs poured', () => pouredRoots(store, root).length === 3 || undefined);
      expect(readyTitles(store)).to.deep.equal(['Edit a']);
      await closeStep(c, 'Edit a', 'fail');
      await waitUntil('b to start after a failed', () => readyTitles(store).includes('Edit b') || undefined);
      expect(readyTitles(store)).to.deep.equal(['Edit b']);
      await closeStep(c, 'Edit b');
      await closeStep(c, 'Test b');
      await waitUntil('c to start after b passed', () => readyTitles(store).includes('Edit c') || undefined);
      const bond = byRef(c.engine.members(root), 'survey.bond')!;
      expect(store.get(bond.id)!.metadata?.[K.OUTCOME_REASON]).to.equal(
        'poured 3 run(s) of per-file, one after the other',
      );
      c.engine.stop();
    });

    it('sequential: a run beginning with a gate reaches it only once the run before it ended', async function () {
      const c = controller(store);
      const text = fanout(', sequential = true').replace('bond = "per-file"', 'bond = "gated"');
      const { root } = await c.engine.instantiate(compiled('fanout', text), { source: 'cook' });
      const survey = byRef(c.engine.members(root.id), 'survey')!;
      await c.beads.update(survey.id, { status: 'closed', metadata: { files: '["a", "b"]' } });
      await waitUntil('a to start', () => readyTitles(store).includes('Edit a') || undefined);
      const [, b] = JSON.parse(
        store.get(byRef(c.engine.members(root.id), 'survey.bond')!.id)!.metadata![K.BONDED],
      ) as string[];
      expect(byRef(c.engine.members(b), 'wait')!.status).to.equal('open');
      await closeStep(c, 'Edit a');
      await waitUntil('b to start', () => readyTitles(store).includes('Edit b') || undefined);
      c.engine.stop();
    });

    it('parallel (the default, or parallel = true): every run starts at once', async function () {
      const c = controller(store);
      const root = await cookAndSurvey(c, ', parallel = true', ['a', 'b']);
      await waitUntil('two runs poured', () => pouredRoots(store, root).length === 2 || undefined);
      await waitUntil('both to start', () => readyTitles(store).length === 2 || undefined);
      expect(readyTitles(store)).to.deep.equal(['Edit a', 'Edit b']);
      c.engine.stop();
    });

    it('sequential, the controller stopped as a run ends: the next one starts after the restart, once', async function () {
      const first = controller(store);
      const root = await cookAndSurvey(first, ', sequential = true', ['a', 'b']);
      await waitUntil('two runs poured', () => pouredRoots(store, root).length === 2 || undefined);
      await closeStep(first, 'Edit a');
      // The controller stops; the last step of run a closes in the store with no controller to see it.
      first.engine.stop();
      const test = store.ready({ limit: 10 }).items.find((b) => b.title === 'Test a')!;
      store.update(test.id, { status: 'closed', metadata: { [K.OUTCOME]: 'pass' } });
      expect(readyTitles(store)).to.deep.equal([]);
      store.close();
      store = backend.open(dir);
      const second = controller(store);
      second.engine.resume();
      await waitUntil('b to start', () => readyTitles(store).includes('Edit b') || undefined);
      expect(pouredRoots(store, root)).to.have.length(2);
      expect(second.events.filter((e) => e.type === 'molecule.created')).to.have.length(0);
      second.engine.stop();
    });

    it('a pour cut short after any of its beads is finished once on restart: no run or bead twice, none missing', async function () {
      this.timeout(60_000);
      // Three runs of four beads: a crash after each of the twelve.
      for (let crashAfter = 1; crashAfter <= 12; crashAfter++) {
        const at = `crash after bead ${crashAfter}`;
        let made = 0;
        let crashed = false;
        // The "crash": the pour never goes on past this bead (its controller is gone).
        const hang = () =>
          ++made === crashAfter ? ((crashed = true), new Promise<void>(() => undefined)) : Promise.resolve();
        const first = controller(store, hang);
        const root = await cookAndSurvey(first, ', sequential = true', ['a', 'b', 'c']);
        await waitUntil(`${at}: the crash`, () => crashed || undefined);
        first.engine.stop();
        store.close();
        store = backend.open(dir);
        const second = controller(store);
        second.engine.resume();
        const bond = byRef(second.engine.members(root), 'survey.bond')!;
        await waitUntil(`${at}: the pour to end`, () => store.get(bond.id)?.status === 'closed' || undefined);
        const runs = pouredRoots(store, root);
        expect(runs.map((r) => r.metadata?.[K.POURED_BY]).sort(), at).to.deep.equal(
          [0, 1, 2].map((i) => `${bond.id}#${i}`),
        );
        const bonded = JSON.parse(store.get(bond.id)!.metadata![K.BONDED]) as string[];
        expect(bonded, at).to.deep.equal(
          [0, 1, 2].map((i) => runs.find((r) => r.metadata?.[K.POURED_BY] === `${bond.id}#${i}`)!.id),
        );
        for (const [i, run] of bonded.entries()) {
          const refs = second.engine.members(run).map((b) => b.metadata?.[K.STEP_REF]);
          expect(refs, `${at}: run ${i}`).to.deep.equal(['edit', 'test', 'per-file.workflow-finalize']);
          const edit = byRef(second.engine.members(run), 'edit')!;
          const waitsFor = (edit.dependencies ?? []).map((d) => d.depends_on_id);
          expect(waitsFor, `${at}: run ${i} waits for the one before`).to.deep.equal(i ? [bonded[i - 1]] : []);
        }
        expect(readyTitles(store), at).to.deep.equal(['Edit a']);
        second.engine.stop();
        store.close();
        rmSync(dir, { recursive: true, force: true });
        dir = tempDir('ctl-pours-');
        store = backend.open(dir);
      }
    });

    it('a loop whose next iteration was made but not counted when the controller died makes it no second time', async function () {
      const first = controller(store);
      const { root } = await first.engine.instantiate(compiled('polish', LOOP), { source: 'cook' });
      await closeStep(first, 'Draft');
      await closeStep(first, 'Review');
      const loop = byRef(first.engine.members(root.id), 'polish')!;
      await waitUntil('iteration 2', () => store.get(loop.id)?.metadata?.[K.LOOP_ITERATION] === '2' || undefined);
      first.engine.stop();
      // As if the controller died right after making iteration 2's beads: the loop bead neither waits for them
      // nor counts them yet.
      const made = first.engine.members(root.id).filter((b) => b.metadata?.[K.STEP_REF]?.startsWith('polish.iter2.'));
      expect(made).to.have.length(2);
      for (const bead of made) store.removeDependency(loop.id, bead.id, 'blocks');
      store.update(loop.id, { metadata: { [K.LOOP_ITERATION]: '1' } });
      const second = controller(store);
      second.engine.resume();
      await waitUntil('the loop to count iteration 2', () =>
        store.get(loop.id)?.metadata?.[K.LOOP_ITERATION] === '2' ? true : undefined,
      );
      const refs = second.engine.members(root.id).map((b) => b.metadata?.[K.STEP_REF]);
      expect(refs.filter((r) => r?.startsWith('polish.iter2.'))).to.deep.equal([
        'polish.iter2.draft',
        'polish.iter2.review',
      ]);
      expect((store.get(loop.id)!.dependencies ?? []).map((d) => d.depends_on_id)).to.include.members(
        made.map((b) => b.id),
      );
      second.engine.stop();
    });
  });
}
