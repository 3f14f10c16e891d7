import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAlive } from './helpers/processes.js';
import { join } from 'node:path';
import { expect } from 'chai';
import { CSRF, tempDir } from './helpers/supervisor.js';
import { expectProblem, type CityApi, type Envelope } from './helpers/city-api.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

/** Three steps, a loop of two and a condition (the `notes` step runs only with notes = yes). */
const RELEASE = `
formula = "release"
description = "Release {{version}}"

[vars]
version = { required = true, pattern = "\\\\d+\\\\.\\\\d+", description = "major.minor" }
notes = { default = "no", enum = ["yes", "no"] }

[[steps]]
id = "build"
title = "Build {{version}}"

[[steps]]
id = "review"
title = "Review"
needs = ["build"]
[steps.loop]
count = 2
var = "round"
[[steps.loop.body]]
id = "read"
title = "Read pass {{round}}"

[[steps]]
id = "notes"
title = "Write release notes"
needs = ["build"]
condition = "{{notes}} == yes"

[[steps]]
id = "ship"
title = "Ship {{version}}"
needs = ["review", "notes"]
`;

interface RunStep {
  id: string;
  title: string;
  status: string;
  kind: string;
  step_ref?: string;
  attempt?: number;
  assignee?: string;
}
interface Run {
  run_id: string;
  status: string;
  formula?: string;
  target?: string;
  last_error?: { code: string; message?: string };
}

async function putFormula(api: CityApi, name: string, text: string, type = 'application/octet-stream') {
  const res = await fetch(api.url(`/formulas/${name}`), {
    method: 'PUT',
    headers: { ...CSRF, 'Content-Type': type },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function validate(api: CityApi, name: string, text: string) {
  const res = await fetch(api.url(`/formulas/${name}/validate`), {
    method: 'POST',
    headers: { ...CSRF, 'Content-Type': 'text/plain' },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as { valid: boolean; errors?: string[] } };
}

async function steps(api: CityApi, runId: string): Promise<RunStep[]> {
  const res = await api.get<{ steps: RunStep[] }>(`/runs/${runId}/steps`);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body.steps;
}

async function run(api: CityApi, runId: string): Promise<Run> {
  return (await api.get<Run>(`/runs/${runId}`)).body;
}

/** The one ready work step of a run (by its formula step id), once the controller has made it ready. */
async function readyStep(api: CityApi, runId: string): Promise<RunStep> {
  return waitUntil(`a ready step of ${runId}`, async () => {
    const ready = (await steps(api, runId)).filter((s) => s.kind === 'step' && s.status === 'pending');
    return ready.length === 1 ? ready[0] : undefined;
  });
}

async function close(api: CityApi, id: string, metadata?: Record<string, string>): Promise<void> {
  if (metadata) expect((await api.patch(`/bead/${id}`, { metadata })).status).to.equal(200);
  expect((await api.post(`/bead/${id}/close`)).status).to.equal(200);
}

async function resolved(api: CityApi, runId: string): Promise<Envelope> {
  return waitUntil(`molecule.resolved for ${runId}`, async () =>
    (await api.events('molecule.resolved')).find((e) => e.subject === runId),
  );
}

describe('formulas and runs (molecules)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let api: CityApi;
  const clockFile = join(tempDir('ctl-clock-'), 'now');

  before(async function () {
    writeFileSync(clockFile, '2026-06-01T10:00:00Z');
    city = await startSessionCity(
      'works',
      `
[[agent]]
name = "worker"
provider = "echo"
suspended = true
`,
      { CTL_CLOCK_FILE: clockFile },
    );
    api = city.api;
  });
  after(async () => city?.sup.cleanup());

  it('PUT writes formulas/<name>.toml and GET /formulas lists it at once, with its vars; source and detail', async function () {
    expect((await putFormula(api, 'release', RELEASE)).status).to.equal(200);
    expect(existsSync(join(city.dir, 'formulas', 'release.toml'))).to.equal(true);
    const list = await api.get<{
      items: { name: string; var_defs: { name: string; required?: boolean; default?: string }[]; run_count: number }[];
      total: number;
    }>('/formulas');
    expect(list.status).to.equal(200);
    const release = list.body.items.find((f) => f.name === 'release')!;
    expect(release.var_defs.map((v) => [v.name, v.required ?? false, v.default])).to.deep.equal([
      ['version', true, undefined],
      ['notes', false, 'no'],
    ]);
    expect(release.run_count).to.equal(0);
    const source = await api.get<{ source: string }>('/formulas/release/source');
    expect(source.body.source).to.equal(RELEASE);
    const detail = await api.get<{ steps: { id: string; kind: string; needs: string[] }[] }>('/formula/release');
    expect(detail.status).to.equal(200);
    // Every step (conditions are decided per run), the loop unrolled, finalize last.
    expect(detail.body.steps.map((s) => s.id)).to.deep.equal([
      'build',
      'review.iter1.read',
      'notes',
      'review.iter2.read',
      'review',
      'ship',
      'release.workflow-finalize',
    ]);
    expect(detail.body.steps.find((s) => s.id === 'ship')!.needs).to.have.members(['review', 'notes']);
    expectProblem(await api.get('/formulas/nope'), 404, 'formula-not-found');
  });

  it('validate names every error with file and step; a PUT of a broken formula is a 422 and writes nothing', async function () {
    const broken = `
[[steps]]
id = "a"
title = "A {{missing}}"
needs = ["b"]

[[steps]]
id = "b"
title = "B"
needs = ["a"]

[[steps]]
id = "c"
title = "C"
needs = ["ghost"]
`;
    const checked = await validate(api, 'broken', broken);
    expect(checked.status).to.equal(200);
    expect(checked.body.valid).to.equal(false);
    const errors = checked.body.errors!.join('\n');
    expect(errors).to.include('formulas/broken.toml: step "a": title: unknown var "missing"');
    expect(errors).to.include('formulas/broken.toml: step "c": needs: no step "ghost"');
    expect(errors).to.match(/step "(a|b)": needs: cycle: (a → b → a|b → a → b)/);
    const syntax = await validate(api, 'syntax', '[[steps]\nid = ');
    expect(syntax.body.valid).to.equal(false);
    expect(syntax.body.errors![0]).to.match(/^formulas\/syntax\.toml:\d+:\d+: /);
    expect((await validate(api, 'release', RELEASE)).body).to.deep.equal({ valid: true });

    const put = await putFormula(api, 'broken', broken, 'text/plain');
    expect(put.status).to.equal(422);
    expect(JSON.stringify(put.body)).to.include('no step \\"ghost\\"');
    expect(existsSync(join(city.dir, 'formulas', 'broken.toml'))).to.equal(false);

    // A broken file written on disk is listed with its errors, and a run of it is a 422 naming them.
    writeFileSync(join(city.dir, 'formulas', 'ondisk.toml'), broken);
    const list = await api.get<{ items: { name: string; errors?: string[] }[] }>('/formulas');
    expect(list.body.items.find((f) => f.name === 'ondisk')!.errors!.join('\n')).to.include('no step "ghost"');
    const cook = await api.post('/formulas/ondisk/cook', {});
    expectProblem(cook, 422, 'validation-failed');
    expect(JSON.stringify(cook.body)).to.include('no step');
  });

  it('a formula whose nested loops multiply past the limit is refused before it is expanded', async function () {
    const nested = (outer: number, inner: number) => `
[[steps]]
id = "outer"
title = "Outer"
[steps.loop]
count = ${outer}
[[steps.loop.body]]
id = "inner"
title = "Inner"
[steps.loop.body.loop]
count = ${inner}
[[steps.loop.body.loop.body]]
id = "leaf"
title = "Leaf"
`;
    // Expanding a million steps kept the controller busy for minutes: a status request now answers meanwhile.
    const [checked, status] = await Promise.all([validate(api, 'huge', nested(1000, 1000)), api.get('/status')]);
    expect(status.status).to.equal(200);
    expect(checked.body.valid).to.equal(false);
    expect(checked.body.errors!.join('\n')).to.include(
      'step "outer": loop: 1,000 × 1,000 = 1,000,000 iterations of nested loops; the formula expands to ' +
        '1,001,001 steps, which exceeds the limit of 10,000 steps per formula',
    );
    const put = await putFormula(api, 'huge', nested(300, 300), 'text/plain');
    expect(put.status).to.equal(422);
    expect(JSON.stringify(put.body)).to.include('300 × 300 = 90,000');
    // On disk, it is listed with the error and a run of it is a 422.
    mkdirSync(join(city.dir, 'formulas'), { recursive: true });
    writeFileSync(join(city.dir, 'formulas', 'huge.toml'), nested(1000, 1000));
    expectProblem(await api.post('/formulas/huge/cook', {}), 422, 'validation-failed');
    expectProblem(await api.post('/formulas/huge/preview', {}), 422, 'validation-failed');
    // Just under the limit is fine.
    expect((await validate(api, 'big', nested(99, 100))).body).to.deep.equal({ valid: true });
  });

  it('preview compiles with the vars — condition decided, loop unrolled — and creates nothing; bad vars are 422', async function () {
    const before = await api.head();
    const preview = await api.post<{
      steps: { id: string; title: string; needs: string[] }[];
      preview: { nodes: unknown[]; edges: { from: string; to: string }[] };
    }>('/formulas/release/preview', { target: 'worker', vars: { version: '1.2' } });
    expect(preview.status, JSON.stringify(preview.body)).to.equal(200);
    expect(preview.body.steps.map((s) => s.id)).to.not.include('notes');
    expect(preview.body.steps.find((s) => s.id === 'build')!.title).to.equal('Build 1.2');
    expect(preview.body.steps.find((s) => s.id === 'review.iter2.read')!.title).to.equal('Read pass 2');
    // The dropped step passes on what it needed: ship waits for review and build.
    expect(preview.body.steps.find((s) => s.id === 'ship')!.needs).to.have.members(['review', 'build']);
    expect(preview.body.preview.edges).to.deep.include({
      from: 'review.iter2.read',
      to: 'review.iter1.read',
      kind: 'blocks',
    });
    const withNotes = await api.post<{ steps: { id: string }[] }>('/formulas/release/preview', {
      target: 'worker',
      vars: { version: '1.2', notes: 'yes' },
    });
    expect(withNotes.body.steps.map((s) => s.id)).to.include('notes');
    expect(await api.head()).to.equal(before);

    const missing = await api.post('/formulas/release/preview', { target: 'worker', vars: {} });
    expectProblem(missing, 422, 'validation-failed');
    expect(JSON.stringify(missing.body)).to.include('vars.version: is required');
    const bad = await api.post('/formulas/release/preview', {
      target: 'worker',
      vars: { version: 'one', notes: 'maybe', extra: 'x' },
    });
    const text = JSON.stringify(bad.body);
    expect(bad.status).to.equal(422);
    expect(text).to.include('does not match');
    expect(text).to.include('is not one of yes, no');
    expect(text).to.include('vars.extra: unknown var');
  });

  it('a run is stepped through by closing its ready beads until molecule.resolved, and its root closes', async function () {
    const cooked = await api.post<{
      root_bead_id: string;
      workflow_id: string;
      created: number;
      beads: Record<string, string>;
    }>('/formulas/release/cook', { vars: { version: '2.0' } });
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    const runId = cooked.body.root_bead_id;
    expect(cooked.body.workflow_id).to.equal(runId);
    expect(cooked.body.created).to.equal(7); // build, 2 reads, review, ship, finalize, root
    expect((await run(api, runId)).status).to.equal('pending');
    // The next step is what GET /beads/ready hands out; the controller's own steps never are.
    const ready = await api.readyIds();
    expect(ready).to.include(cooked.body.beads.build);
    expect(ready).to.not.include(cooked.body.beads.review);
    expect(ready).to.not.include(cooked.body.beads['release.workflow-finalize']);

    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const step = await readyStep(api, runId);
      order.push(step.step_ref!);
      await close(api, step.id);
      if (i === 0) expect((await run(api, runId)).status).to.equal('active');
    }
    expect(order).to.deep.equal(['build', 'review.iter1.read', 'review.iter2.read', 'ship']);
    const event = await resolved(api, runId);
    expect(event.payload).to.include({ run_id: runId, outcome: 'pass', formula: 'release' });
    const done = await run(api, runId);
    expect(done.status).to.equal('completed');
    expect((await api.bead(runId)).status).to.equal('closed');
    expect((await steps(api, runId)).every((s) => s.status === 'completed')).to.equal(true);
    const runs = await api.get<{ runs: Run[]; status_counts: Record<string, number> }>('/runs');
    expect(runs.body.runs.find((r) => r.run_id === runId)!.status).to.equal('completed');
    expect(runs.body.status_counts.completed).to.be.at.least(1);
    const census = await api.get<{ status_counts: Record<string, number> }>('/runs/census');
    expect(census.body.status_counts).to.deep.equal(runs.body.status_counts);
    const feed = await api.get<{ items: { id: string; type: string; status: string }[] }>('/formulas/feed?limit=1');
    expect(feed.body.items).to.deep.equal([{ ...feed.body.items[0], id: runId, type: 'run', status: 'completed' }]);
    const snapshot = await api.get<{ beads: { id: string; kind: string }[]; deps: { from: string; to: string }[] }>(
      `/workflow/${runId}`,
    );
    expect(snapshot.body.beads[0]).to.include({ id: runId, kind: 'workflow' });
    expect(snapshot.body.deps).to.deep.include({
      from: runId,
      to: cooked.body.beads['release.workflow-finalize'],
      kind: 'blocks',
    });
    // The run as written: the loop is a scope group holding its two reads, and `ship` waits for the group (and
    // for `build`, through the `notes` step its condition dropped).
    const graph = snapshot.body as unknown as {
      logical_nodes: { id: string; kind: string; status: string; scope_group?: string }[];
      logical_edges: { from: string; to: string }[];
      scope_groups: { id: string; node_ids: string[]; status: string }[];
    };
    expect(graph.logical_nodes.map((n) => [n.id, n.kind, n.status, n.scope_group ?? ''])).to.deep.equal([
      ['build', 'step', 'completed', ''],
      ['review.iter1.read', 'step', 'completed', 'review'],
      ['review.iter2.read', 'step', 'completed', 'review'],
      ['review', 'group', 'completed', ''],
      ['ship', 'step', 'completed', ''],
    ]);
    expect(graph.logical_edges.map((e) => `${e.from}>${e.to}`)).to.have.members([
      'review.iter1.read>build',
      'review.iter2.read>review.iter1.read',
      'ship>review',
      'ship>build',
    ]);
    expect(graph.scope_groups).to.deep.equal([
      { id: 'review', title: 'Review', status: 'completed', node_ids: ['review.iter1.read', 'review.iter2.read'] },
    ]);
    const formulaRuns = await api.get<{ run_count: number }>('/formulas/release/runs');
    expect(formulaRuns.body.run_count).to.be.at.least(1);
  });

  it("a snapshot's version moves only with its run, and a blocking query waits for the run to change", async function () {
    type Snap = { snapshot_version: number; snapshot_event_seq: number };
    const cook = async () =>
      (await api.post<{ root_bead_id: string }>('/formulas/release/cook', { vars: { version: '4.0' } })).body
        .root_bead_id;
    const [mine, other] = [await cook(), await cook()];
    const first = await api.get<Snap>(`/workflow/${mine}`);
    expect(first.headers.get('x-ctl-index')).to.equal(String(first.body.snapshot_version));
    const step = await readyStep(api, other);
    await close(api, step.id);
    // Another run changing moves the city's head, not this run's version.
    const after = await api.get<Snap>(`/workflow/${mine}`);
    expect(after.body.snapshot_event_seq).to.be.greaterThan(first.body.snapshot_event_seq);
    expect(after.body.snapshot_version).to.equal(first.body.snapshot_version);
    const waited = api.get<Snap>(`/workflow/${mine}?index=${first.body.snapshot_version}&wait=20s`);
    let answered = false;
    void waited.then(() => (answered = true));
    await close(api, (await readyStep(api, other)).id);
    await api.get(`/workflow/${mine}`);
    expect(answered, 'a change to another run does not answer the wait').to.equal(false);
    await close(api, (await readyStep(api, mine)).id);
    const changed = await waited;
    expect(changed.body.snapshot_version).to.be.greaterThan(first.body.snapshot_version);
    expectProblem(await api.get(`/workflow/${mine}?index=1&wait=soon`), 422, 'validation-failed');
  });

  it('cancel mid-way closes what is open (canceled) and the run ends canceled', async function () {
    const cooked = await api.post<{ root_bead_id: string }>('/formulas/release/cook', { vars: { version: '3.0' } });
    const runId = cooked.body.root_bead_id;
    await close(api, (await readyStep(api, runId)).id);
    await readyStep(api, runId);
    const cancel = await api.post<{ run_id: string; status: string; closed: number }>(`/runs/${runId}/cancel`);
    expect(cancel.status).to.equal(202);
    expect(cancel.body).to.include({ run_id: runId, status: 'canceled' });
    expect(cancel.body.closed).to.equal(6); // 2 reads, review, ship, finalize, root
    const after = await steps(api, runId);
    expect(after.find((s) => s.step_ref === 'build')!.status).to.equal('completed');
    expect(after.filter((s) => s.status === 'canceled')).to.have.length(5);
    expect((await run(api, runId)).last_error).to.deep.include({ code: 'canceled' });
    expect((await resolved(api, runId)).payload).to.include({ outcome: 'canceled' });
    expectProblem(await api.post('/runs/nope-1/cancel'), 404, 'run-not-found');
  });

  it('a check step that fails is retried (the step reopens for attempt 2) and the run passes when it then passes', async function () {
    const counter = join(city.dir, 'check-count');
    const formula = `
[[steps]]
id = "fix"
title = "Fix the build"
[steps.check]
max_attempts = 3
command = "n=$(cat ${counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${counter}; echo attempt $n; [ $n -ge 2 ]"
timeout = "10s"
`;
    expect((await putFormula(api, 'fixit', formula)).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/fixit/cook', {});
    const runId = cooked.body.root_bead_id;
    const fix = cooked.body.beads.fix;
    await close(api, fix);
    const retried = await waitUntil('molecule.step_retried', async () =>
      (await api.events('molecule.step_retried')).find((e) => e.subject === fix),
    );
    expect(retried.payload).to.include({ attempt: 2, step: 'fix' });
    expect(String((retried.payload as { reason: string }).reason)).to.include('attempt 1');
    const again = await readyStep(api, runId);
    expect(again).to.include({ id: fix, attempt: 2 });
    await close(api, fix);
    expect((await resolved(api, runId)).payload).to.include({ outcome: 'pass' });
    expect((await steps(api, runId)).map((s) => [s.kind, s.status])).to.deep.equal([
      ['step', 'completed'],
      ['check', 'completed'],
      ['finalize', 'completed'],
    ]);
  });

  it('a step an agent closes with outcome fail fails the run: the rest is skipped', async function () {
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/release/cook', {
      vars: { version: '4.0' },
    });
    const runId = cooked.body.root_bead_id;
    await close(api, cooked.body.beads.build, { 'ctl.outcome': 'fail', 'ctl.outcome_reason': 'compiler crashed' });
    expect((await resolved(api, runId)).payload).to.include({ outcome: 'fail' });
    const failed = await run(api, runId);
    expect(failed.status).to.equal('failed');
    expect(failed.last_error).to.deep.equal({ code: 'fail', message: 'compiler crashed' });
    expect((await steps(api, runId)).filter((s) => s.status === 'skipped')).to.have.length(5);
  });

  it('sling with a formula routes its work steps to the agent and names the run; the workflow can be deleted', async function () {
    const attached = (await api.create({ title: 'Ship the thing' })).id;
    const slung = await api.post<{
      mode: string;
      root_bead_id: string;
      workflow_id: string;
      run: { kind: string; run_id: string; status: string };
      routed: string[];
      attached_bead_id: string;
    }>('/sling', { target: 'worker', formula: 'release', vars: { version: '5.1' }, bead: attached });
    expect(slung.status, JSON.stringify(slung.body)).to.equal(200);
    const runId = slung.body.root_bead_id;
    expect(slung.body).to.include({ mode: 'formula', workflow_id: runId, attached_bead_id: attached });
    expect(slung.body.run).to.deep.equal({ kind: 'sling', run_id: runId, status: 'pending' });
    expect(slung.body.routed).to.have.length(4);
    const r = await run(api, runId);
    expect(r).to.include({ formula: 'release', target: 'worker' });
    const build = (await steps(api, runId)).find((s) => s.step_ref === 'build')!;
    expect(build.assignee).to.equal('worker');

    // Stepping it through closes the bead it was started for.
    for (let i = 0; i < 4; i++) await close(api, (await readyStep(api, runId)).id);
    await resolved(api, runId);
    await waitUntil('the attached bead to close', async () => (await api.bead(attached)).status === 'closed');

    expectProblem(
      await api.post('/sling', { target: 'worker', formula: 'release', vars: {} }),
      422,
      'validation-failed',
    );
    expectProblem(await api.post('/sling', { target: 'worker', formula: 'nope' }), 404, 'formula-not-found');

    const other = await api.post<{ root_bead_id: string }>('/sling', {
      target: 'worker',
      formula: 'release',
      vars: { version: '5.2' },
    });
    const otherId = other.body.root_bead_id;
    const removed = await api.del<{ deleted: number }>(`/workflow/${otherId}?delete=true`);
    expect(removed.status).to.equal(200);
    expect(removed.body.deleted).to.equal(7);
    expectProblem(await api.get(`/runs/${otherId}`), 404, 'run-not-found');
    expectProblem(await api.get(`/workflow/${otherId}`), 404, 'workflow-not-found');
  });

  it('DELETE /formulas/{name} removes the file; runs of it stay', async function () {
    expect((await putFormula(api, 'scratch', '[[steps]]\nid = "x"\ntitle = "X"\n')).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string }>('/formulas/scratch/cook', {});
    expect((await api.del('/formulas/scratch')).status).to.equal(200);
    expect(existsSync(join(city.dir, 'formulas', 'scratch.toml'))).to.equal(false);
    expectProblem(await api.get('/formulas/scratch'), 404, 'formula-not-found');
    expect((await run(api, cooked.body.root_bead_id)).formula).to.equal('scratch');
    expectProblem(await api.del('/formulas/scratch'), 404, 'formula-not-found');
  });

  it('gates are waits: a timer opens when the clock passes it, a human gate when a person closes it', async function () {
    const formula = `
[[steps]]
id = "prepare"
title = "Prepare"

[[steps]]
id = "cool-off"
needs = ["prepare"]
gate = { type = "timer", duration = "2h" }

[[steps]]
id = "approve"
title = "Approval"
needs = ["prepare"]
gate = { type = "human" }

[[steps]]
id = "launch"
title = "Launch"
needs = ["cool-off", "approve"]
`;
    expect((await putFormula(api, 'gated', formula)).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/gated/cook', {});
    const runId = cooked.body.root_bead_id;
    const { beads } = cooked.body;
    const waits = async () =>
      (
        await api.get<{
          waits: {
            id: string;
            kind: string;
            state: string;
            run_id?: string;
            dep_ids?: string[];
            expires_at?: string;
          }[];
        }>('/waits')
      ).body.waits.filter((w) => w.run_id === runId);
    expect((await waits()).map((w) => [w.kind, w.state]).sort()).to.deep.equal([
      ['human', 'pending'],
      ['timer', 'pending'],
    ]);
    await close(api, beads.prepare);
    await waitUntil('both gates reached', async () => (await waits()).every((w) => w.state === 'ready'));
    const timer = (await waits()).find((w) => w.kind === 'timer')!;
    expect(timer.dep_ids).to.deep.equal([beads.launch]);
    await waitUntil(
      'the timer armed',
      async () => (await api.get<{ expires_at?: string }>(`/wait/${timer.id}`)).body.expires_at,
    );
    // Two hours after it was reached on the city's clock (which runs on from the time the file set).
    expect((await api.get<{ expires_at: string }>(`/wait/${timer.id}`)).body.expires_at).to.match(
      /^2026-06-01T12:00:0\d/,
    );
    expect((await run(api, runId)).status).to.equal('waiting');
    writeFileSync(clockFile, '2026-06-01T12:00:30Z');
    await waitUntil('the timer gate to open', async () => (await api.bead(beads['cool-off'])).status === 'closed');
    expect((await steps(api, runId)).find((s) => s.id === beads.launch)!.status).to.equal('blocked');
    // A person opens the human gate by closing it.
    await close(api, beads.approve);
    const launch = await readyStep(api, runId);
    expect(launch.id).to.equal(beads.launch);
    await close(api, launch.id);
    expect((await resolved(api, runId)).payload).to.include({ outcome: 'pass' });
    expect((await api.get<{ state: string }>(`/wait/${timer.id}`)).body.state).to.equal('closed');
    expectProblem(await api.get(`/wait/${beads.launch}`), 404, 'wait-not-found');
  });

  it('a run carries on after its controller is killed: its state is its beads, and the next controller goes on', async function () {
    const formula = `
[[steps]]
id = "work"
title = "Work"
[steps.check]
command = "true"

[[steps]]
id = "after"
title = "After"
needs = ["work"]
`;
    expect((await putFormula(api, 'restartable', formula)).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>(
      '/formulas/restartable/cook',
      {},
    );
    const runId = cooked.body.root_bead_id;
    const before = (await city.sup.city('works'))!.pid!;
    process.kill(before, 'SIGKILL');
    await waitUntil('the controller to be gone', () => !isAlive(before));
    await waitUntil(
      'a new controller',
      async () => {
        const c = await city.sup.city('works');
        return c?.running === true && c.pid !== before;
      },
      30_000,
    );
    const stepsBefore = await steps(api, runId);
    expect(stepsBefore.map((s) => s.status)).to.deep.equal(['pending', 'blocked', 'blocked', 'blocked']);
    await close(api, cooked.body.beads.work);
    const next = await readyStep(api, runId);
    expect(next.id).to.equal(cooked.body.beads.after);
    await close(api, next.id);
    expect((await resolved(api, runId)).payload).to.include({ outcome: 'pass' });
  });

  it('an agent with a default_sling_formula gets a slung bead wrapped in a run of it', async function () {
    expect(
      (await putFormula(api, 'do-work', '[[steps]]\nid = "do"\ntitle = "Do {{attached_bead_id}}"\n')).status,
    ).to.equal(200);
    const toml = join(city.dir, 'city.toml');
    writeFileSync(
      toml,
      `${readFileSync(toml, 'utf8')}\n[[agent]]\nname = "wrapper"\nprovider = "echo"\nsuspended = true\ndefault_sling_formula = "do-work"\n`,
    );
    await waitUntil('the agent', async () => (await api.get('/agent/wrapper')).status === 200);
    const bead = (await api.create({ title: 'Paint the fence' })).id;
    const slung = await api.post<{
      mode: string;
      root_bead_id: string;
      formula: string;
      convoy_id?: string;
      routed: string[];
    }>('/sling', {
      target: 'wrapper',
      bead,
    });
    expect(slung.status, JSON.stringify(slung.body)).to.equal(200);
    expect(slung.body).to.include({ mode: 'formula', formula: 'do-work' });
    expect(slung.body.convoy_id).to.be.a('string');
    const [step] = await steps(api, slung.body.root_bead_id);
    expect(step.title).to.equal(`Do ${bead}`);
    expect(step.assignee).to.equal('wrapper');
    expect((await api.bead(bead)).metadata?.['ctl.routed_to']).to.equal(undefined);
    const plain = await api.post<{ mode: string }>('/sling', { target: 'wrapper', bead, no_formula: true });
    expect(plain.body.mode).to.equal('direct');
  });
});
