import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CSRF, tempDir } from './helpers/supervisor.js';
import type { CityApi } from './helpers/city-api.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// Formulas as the reference's packs write them: one extending another, an expansion formula filling a step, and
// the vars a run knows itself (bead, convoy, target, rig, binding, branch, date), run through the API.
const BASE = `
description = "Polecat base"
[vars]
base_branch = "main"
test_command = { default = "npm test" }
[[steps]]
id = "load-context"
title = "Load {{issue}}"
[[steps]]
id = "implement"
title = "Implement on {{base_branch}}"
needs = ["load-context"]
[[steps]]
id = "self-review"
title = "Review with {{test_command}}"
needs = ["implement"]
`;

const CHILD = `
extends = ["mol-base"]
[[steps]]
id = "implement"
title = "Implement for convoy {{convoy_id}} in rig {{rig_name}} ({{target}})"
needs = ["load-context"]
[[steps]]
id = "commit"
title = "Commit to {{base_branch}} on {{date}}"
needs = ["self-review"]
[[compose.expand]]
target = "self-review"
with = "double-check"
vars = { second = "lint" }
`;

const EXPANSION = `
type = "expansion"
[vars]
second = "typecheck"
[[template]]
id = "{target}.first"
title = "{target.title}"
[[template]]
id = "{target}.{second}"
title = "Then {second}"
needs = ["{target}.first"]
`;

async function put(api: CityApi, name: string, text: string) {
  const res = await fetch(api.url(`/formulas/${name}`), {
    method: 'PUT',
    headers: { ...CSRF, 'Content-Type': 'application/octet-stream' },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as { detail?: string } };
}

describe('formulas that extend, expand and use the run’s own vars (real controller)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let api: CityApi;

  before(async function () {
    // The rig is a git repository whose default branch is trunk: base_branch comes from it.
    const repo = tempDir('ctl-rig-');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
    git('init', '-q', '-b', 'trunk');
    writeFileSync(join(repo, 'README'), 'app\n');
    git('add', 'README');
    git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'start');
    city = await startSessionCity(
      'compose',
      `
[[rigs]]
name = "app"
path = "${repo}"
[rigs.formula_vars]
test_command = "make check"

[[agent]]
name = "coder"
dir = "app"
provider = "echo"
suspended = true
`,
    );
    api = city.api;
  });
  after(async () => city?.sup.cleanup());

  it('a formula extending another lists the parent’s steps with its own, an expansion filling one of them', async function () {
    // Written out of order: the child is refused while its parent and expansion are missing, each named.
    const early = await put(api, 'mol-child', CHILD);
    expect(early.status).to.equal(422);
    expect(early.body.detail).to.include('formulas/mol-child.toml: extends: mol-base: no formula of that name');
    expect((await put(api, 'mol-base', BASE)).status).to.equal(200);
    expect((await put(api, 'double-check', EXPANSION)).status).to.equal(200);
    expect((await put(api, 'mol-child', CHILD)).status).to.equal(200);
    const detail = await api.get<{ steps: { id: string; title: string }[] }>('/formula/mol-child');
    expect(detail.status, JSON.stringify(detail.body)).to.equal(200);
    expect(detail.body.steps.map((s) => s.id)).to.deep.equal([
      'load-context',
      'implement',
      'self-review.first',
      'self-review.lint',
      'commit',
      'mol-child.workflow-finalize',
    ]);
    // An expansion formula is not run by itself.
    const cooked = await api.post<{ detail: string }>('/formulas/double-check/cook', {});
    expect(cooked.status).to.equal(422);
    expect(cooked.body.detail).to.include('an expansion formula does not run by itself');
  });

  it('sling fills the run’s own vars: the bead, its convoy, the target, its rig, the rig’s branch and formula_vars, the date', async function () {
    const bead = (await api.create({ title: 'Fix the login' })).id;
    const slung = await api.post<{ root_bead_id: string; convoy_id: string; workflow_id: string }>('/sling', {
      target: 'app/coder',
      formula: 'mol-child',
      bead,
    });
    expect(slung.status, JSON.stringify(slung.body)).to.equal(200);
    const steps = await api.get<{ steps: { step_ref?: string; title: string }[] }>(
      `/runs/${slung.body.root_bead_id}/steps`,
    );
    const title = (ref: string) => steps.body.steps.find((s) => s.step_ref === ref)?.title;
    const today = new Date().toISOString().slice(0, 10);
    expect(title('load-context')).to.equal(`Load ${bead}`);
    expect(title('implement')).to.equal(`Implement for convoy ${slung.body.convoy_id} in rig app (app/coder)`);
    expect(title('self-review.first')).to.equal('Review with make check');
    expect(title('self-review.lint')).to.equal('Then lint');
    expect(title('commit')).to.match(new RegExp(`^Commit to trunk on (${today}|\\d{4}-\\d{2}-\\d{2})$`));
    // The convoy named in the steps is the one tracking the bead.
    const convoy = await api.get<{ convoy: { id: string }; items?: { id: string }[] }>(
      `/convoy/${slung.body.convoy_id}`,
    );
    expect(convoy.status, JSON.stringify(convoy.body)).to.equal(200);

    // A var given at the launch wins over the run's own and the rig's.
    const preview = await api.post<{ steps: { id: string; title: string }[] }>('/formulas/mol-child/preview', {
      target: 'app/coder',
      vars: { base_branch: 'hotfix', test_command: 'true' },
    });
    expect(preview.status, JSON.stringify(preview.body)).to.equal(200);
    const previewTitle = (id: string) => preview.body.steps.find((s) => s.id === id)?.title;
    expect(previewTitle('self-review.first')).to.equal('Review with true');
    expect(previewTitle('commit')).to.match(/^Commit to hotfix on /);
  });

  it('loop.until runs its body again, one iteration after the other, until the output its agent set says so', async function () {
    const LOOP = `
[[steps]]
id = "polish"
title = "Polish"
[steps.loop]
until = "review.output.approved == yes"
max = 3
[[steps.loop.body]]
id = "draft"
title = "Draft"
[[steps.loop.body]]
id = "review"
title = "Review"
needs = ["draft"]
[[steps]]
id = "ship"
title = "Ship"
needs = ["polish"]
`;
    expect((await put(api, 'polish', LOOP)).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/polish/cook', {});
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    const runId = cooked.body.root_bead_id;
    type Step = { id: string; step_ref?: string; status: string };
    const stepsNow = async () => (await api.get<{ steps: Step[] }>(`/runs/${runId}/steps`)).body.steps;
    const ready = (ref: string) =>
      waitUntil(`${ref} to be ready`, async () =>
        (
          await api.get<{ items: { id: string; metadata?: Record<string, string> }[] }>('/beads/ready?limit=1000')
        ).body.items.find((b) => b.metadata?.['ctl.step_ref'] === ref),
      );
    const close = async (id: string, metadata?: Record<string, string>) => {
      if (metadata) expect((await api.patch(`/bead/${id}`, { metadata })).status).to.equal(200);
      expect((await api.post(`/bead/${id}/close`)).status).to.equal(200);
    };
    // Iteration 1: the review does not approve, so a second iteration is made after it.
    await close((await ready('polish.iter1.draft')).id);
    await close((await ready('polish.iter1.review')).id, { approved: 'no' });
    await close((await ready('polish.iter2.draft')).id);
    const loop = (await stepsNow()).find((s) => s.step_ref === 'polish')!;
    expect(loop.status).to.not.equal('completed');
    expect((await api.bead(loop.id)).metadata).to.include({ 'ctl.loop_iteration': '2' });
    // Iteration 2 approves: the loop ends, and what needed it goes on.
    await close((await ready('polish.iter2.review')).id, { approved: 'yes' });
    await close((await ready('ship')).id);
    await waitUntil('the run to pass', async () =>
      (await api.events('molecule.resolved')).find((e) => e.subject === runId && e.payload.outcome === 'pass'),
    );
    expect((await api.bead(loop.id)).metadata).to.include({
      'ctl.outcome': 'pass',
      'ctl.outcome_reason': 'until held after 2 iteration(s): review.output.approved == yes',
    });
    expect((await stepsNow()).some((s) => s.step_ref === 'polish.iter3.draft')).to.equal(false);
  });

  it('on_complete pours a run per item of the step’s output; a step with waits_for goes on once they all ended', async function () {
    expect(
      (
        await put(
          api,
          'per-file',
          '[vars]\nfile = { required = true }\nn = "0"\n[[steps]]\nid = "check"\ntitle = "Check {{file}} ({{n}})"\n',
        )
      ).status,
    ).to.equal(200);
    const FANOUT = `
[[steps]]
id = "survey"
title = "Survey"
on_complete = { for_each = "output.files", bond = "per-file", vars = { file = "{item}", n = "{index}" } }
[[steps]]
id = "merge"
title = "Merge"
needs = ["survey"]
waits_for = "all-children"
`;
    expect((await put(api, 'fanout', FANOUT)).status).to.equal(200);
    const cooked = await api.post<{ root_bead_id: string; beads: Record<string, string> }>('/formulas/fanout/cook', {});
    expect(cooked.status, JSON.stringify(cooked.body)).to.equal(201);
    type Ready = { id: string; title: string; metadata?: Record<string, string> };
    const readyNow = async () => (await api.get<{ items: Ready[] }>('/beads/ready?limit=1000')).body.items;
    const close = async (id: string, metadata?: Record<string, string>) => {
      if (metadata) expect((await api.patch(`/bead/${id}`, { metadata })).status).to.equal(200);
      expect((await api.post(`/bead/${id}/close`)).status).to.equal(200);
    };
    await close(cooked.body.beads.survey, { files: '["a.ts", "b.ts"]' });
    const poured = await waitUntil('a run per file', async () => {
      const checks = (await readyNow()).filter((b) => b.title.startsWith('Check '));
      return checks.length === 2 ? checks : undefined;
    });
    expect(poured.map((b) => b.title).sort()).to.deep.equal(['Check a.ts (0)', 'Check b.ts (1)']);
    const merge = cooked.body.beads.merge;
    expect((await readyNow()).some((b) => b.id === merge)).to.equal(false);
    await close(poured[0].id);
    expect((await readyNow()).some((b) => b.id === merge)).to.equal(false);
    await close(poured[1].id);
    await waitUntil('merge to be ready once both runs ended', async () =>
      (await readyNow()).some((b) => b.id === merge),
    );
    await close(merge);
    await waitUntil('the run to pass', async () =>
      (await api.events('molecule.resolved')).find(
        (e) => e.subject === cooked.body.root_bead_id && e.payload.outcome === 'pass',
      ),
    );
  });
});
