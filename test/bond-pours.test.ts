// The runs a step's on_complete pours, through a real controller: sequential pours (each run once the one before it
// ended, and a controller killed between two runs going on), and a controller killed (SIGKILL) in the middle of a
// pour — the pour finished by the next one, with no run or bead made twice.
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Bead } from '../shared/dto/beads.js';
import type { CityApi } from './helpers/city-api.js';
import { controllerPid } from './helpers/controller-pid.js';
import { isAlive } from './helpers/processes.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const CITY = 'pours';
// Each poured run: its root, one step of work and finalize — three beads.
const PER_FILE = '[vars]\nfile = { required = true }\n[[steps]]\nid = "check"\ntitle = "Check {{file}}"\n';
const fanout = (mode: string) => `
[[steps]]
id = "survey"
title = "Survey"
on_complete = { for_each = "output.files", bond = "per-file", vars = { file = "{item}" }${mode} }
[[steps]]
id = "merge"
title = "Merge"
needs = ["survey"]
waits_for = "all-children"
`;

/** The controller `pid` is dead and the supervisor runs another. */
async function restarted(city: SessionCity, pid: number): Promise<void> {
  await waitUntil('the controller to die', () => !isAlive(pid));
  await waitUntil('a new controller', async () => {
    const info = await city.sup.city(CITY);
    return info?.running === true && info.pid !== pid;
  });
}

async function put(api: CityApi, name: string, text: string): Promise<void> {
  const res = await fetch(api.url(`/formulas/${name}`), {
    method: 'PUT',
    headers: { 'X-CTL-Request': '1', 'Content-Type': 'text/plain' },
    body: text,
  });
  expect(res.status, await res.text()).to.be.oneOf([200, 201]);
}

describe('runs poured by on_complete (real controller)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let api: CityApi;
  const crashFile = join(tempDir('ctl-pour-crash-'), 'crash-after');

  before(async function () {
    city = await startSessionCity(CITY, '', { CTL_TEST_CRASH_MID_POUR: crashFile });
    api = city.api;
    await put(api, 'per-file', PER_FILE);
    await put(api, 'fanout-seq', fanout(', sequential = true'));
    await put(api, 'fanout-par', fanout(''));
  });
  after(async () => {
    await city?.sup.cleanup();
  });

  const readyTitles = async () =>
    (await api.get<{ items: Bead[] }>('/beads/ready?limit=1000')).body.items.map((b) => b.title).sort();
  const readyBead = async (title: string) =>
    (await api.get<{ items: Bead[] }>('/beads/ready?limit=1000')).body.items.find((b) => b.title === title);
  const close = async (id: string, metadata?: Record<string, string>) => {
    if (metadata) expect((await api.patch(`/bead/${id}`, { metadata })).status).to.equal(200);
    expect((await api.post(`/bead/${id}/close`)).status).to.equal(200);
  };
  /** Cooks a fanout formula and closes its survey with these files: the run's root and beads. */
  async function cookAndSurvey(formula: string, files: string[]) {
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>(
      `/formulas/${formula}/cook`,
      {},
    );
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    await close(cooked.body.beads.survey, { files: JSON.stringify(files) });
    return cooked.body;
  }
  /** The runs poured for a run, and each one's beads (all of them, closed too). */
  async function pouredRuns(rootId: string): Promise<{ root: Bead; members: Bead[] }[]> {
    const all = await api.listAll({ all: true });
    return all
      .filter((b) => b.metadata?.['ctl.parent_root'] === rootId)
      .map((root) => ({ root, members: all.filter((b) => b.metadata?.['ctl.root_bead_id'] === root.id) }));
  }

  it('sequential: each run starts once the one before it ended; killed between two, the controller goes on', async function () {
    const run = await cookAndSurvey('fanout-seq', ['a', 'b', 'c']);
    await waitUntil('the first run to start', async () => (await readyTitles()).includes('Check a'));
    expect((await readyTitles()).filter((t) => t.startsWith('Check '))).to.deep.equal(['Check a']);
    expect(await pouredRuns(run.root_bead_id)).to.have.length(3);
    // A failed run ends too: the next one starts.
    await close((await readyBead('Check a'))!.id, { 'ctl.outcome': 'fail' });
    await waitUntil('b to start after a failed', async () => (await readyTitles()).includes('Check b'));
    expect((await readyTitles()).filter((t) => t.startsWith('Check '))).to.deep.equal(['Check b']);
    // The runs say so too: b's step waits no more, c's does.
    const byItem = (i: number, runs: { root: Bead }[]) =>
      runs.find((r) => r.root.metadata?.['ctl.poured_by']?.endsWith(`#${i}`))!.root.id;
    const poured = await pouredRuns(run.root_bead_id);
    const stepOf = async (runId: string) =>
      (await api.get<{ steps: { kind: string; status: string }[] }>(`/runs/${runId}/steps`)).body.steps.find(
        (st) => st.kind === 'step',
      )?.status;
    expect(await stepOf(byItem(1, poured))).to.equal('pending');
    expect(await stepOf(byItem(2, poured))).to.equal('blocked');
    // b's last step closes and the controller is killed at once, its run maybe not yet ended.
    const pid = controllerPid(city.dir);
    await close((await readyBead('Check b'))!.id);
    process.kill(pid, 'SIGKILL');
    await restarted(city, pid);
    await waitUntil('c to start after the restart', async () => (await readyTitles()).includes('Check c'));
    const runs = await pouredRuns(run.root_bead_id);
    expect(runs).to.have.length(3);
    for (const { members } of runs) expect(members).to.have.length(2);
    await close((await readyBead('Check c'))!.id);
    await close((await waitUntil('merge to be ready', () => readyBead('Merge'))).id);
    await waitUntil('the run to end', async () =>
      (await api.events('molecule.resolved')).find((e) => e.subject === run.root_bead_id),
    );
  });

  it('a controller killed in the middle of a pour: the next one finishes it, no run or bead twice', async function () {
    const pid = controllerPid(city.dir);
    // Killed after the fifth bead of the pour: the first run whole, the second one's root and step made.
    writeFileSync(crashFile, '5');
    const run = await cookAndSurvey('fanout-par', ['x', 'y', 'z']);
    await restarted(city, pid);
    expect(existsSync(crashFile)).to.equal(false);
    await waitUntil('the bond node to close', async () => {
      const bond = (await api.listAll({ all: true })).find(
        (b) => b.metadata?.['ctl.root_bead_id'] === run.root_bead_id && b.metadata?.['ctl.step_ref'] === 'survey.bond',
      );
      return bond?.status === 'closed';
    });
    const runs = await pouredRuns(run.root_bead_id);
    expect(runs).to.have.length(3);
    expect(new Set(runs.map((r) => r.root.metadata?.['ctl.poured_by'])).size).to.equal(3);
    for (const { members } of runs) {
      expect(members.map((b) => b.metadata?.['ctl.step_ref']).sort()).to.deep.equal([
        'check',
        'per-file.workflow-finalize',
      ]);
    }
    await waitUntil('every run to start', async () => (await readyTitles()).includes('Check z'));
    expect((await readyTitles()).filter((t) => t.startsWith('Check '))).to.deep.equal([
      'Check x',
      'Check y',
      'Check z',
    ]);
    for (const t of ['Check x', 'Check y', 'Check z']) await close((await readyBead(t))!.id);
    await close((await waitUntil('merge to be ready', () => readyBead('Merge'))).id);
    await waitUntil('the run to pass', async () =>
      (await api.events('molecule.resolved')).find(
        (e) => e.subject === run.root_bead_id && e.payload.outcome === 'pass',
      ),
    );
  });
});
