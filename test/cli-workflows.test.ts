import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectFailure, expectSuccess, type CliResult } from './helpers/cli.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// `ctl formula`, `ctl run` and `ctl order`, as the real binary against a real supervisor and city: a table or a
// line for people, the API's JSON with --json, one line on stderr and exit 1 for a bad input.

const FORMULA = `
formula = "tidy"
description = "Tidy {{room}}"
[vars]
room = { required = true }
[[steps]]
id = "sweep"
title = "Sweep {{room}}"
[[steps]]
id = "mop"
title = "Mop {{room}}"
needs = ["sweep"]
`;

function jsonOf<T>(result: CliResult): T {
  const out = expectSuccess(result);
  expect(out, 'one line of JSON').to.have.length(1);
  return JSON.parse(out[0]) as T;
}

describe('ctl formula, ctl run and ctl order (the real binary)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'flows', ...args]);

  before(async function () {
    city = await startSessionCity('flows', '\n[[agent]]\nname = "worker"\nprovider = "echo"\nsuspended = true\n');
    mkdirSync(join(city.dir, 'formulas'), { recursive: true });
    mkdirSync(join(city.dir, 'orders'), { recursive: true });
    writeFileSync(join(city.dir, 'formulas', 'tidy.toml'), FORMULA);
    writeFileSync(join(city.dir, 'orders', 'ping.toml'), '[order]\ntrigger = "manual"\nexec = "echo pong"\n');
  });
  after(async () => city?.sup.cleanup());

  it('formula list, show and preview describe it; validate prints every error and exits 1', async function () {
    const list = expectSuccess(await ctl('formula', 'list'));
    expect(list[0]).to.match(/^NAME\s+RUNS\s+VARS\s+DESCRIPTION$/);
    expect(list[1]).to.match(/^tidy\s+0\s+room\*\s+Tidy \{\{room\}\}$/);
    const show = expectSuccess(await ctl('formula', 'show', 'tidy'));
    expect(show.some((l) => /^Vars:\s+room \(required\)$/.test(l))).to.equal(true);
    expect(show.some((l) => /^mop\s+step\s+sweep\s+Mop \{\{room\}\}$/.test(l))).to.equal(true);
    const preview = expectSuccess(await ctl('formula', 'preview', 'tidy', '--var', 'room=kitchen'));
    expect(preview[0]).to.equal('tidy: 3 steps — Tidy kitchen');
    expect(preview.some((l) => /^sweep\s+step\s+-\s+Sweep kitchen$/.test(l))).to.equal(true);

    expect(expectSuccess(await ctl('formula', 'validate', 'tidy'))).to.deep.equal(['tidy is valid']);
    const bad = join(city.dir, 'bad.toml');
    writeFileSync(bad, '[[steps]]\nid = "a"\ntitle = "A"\nneeds = ["zz"]\n[[steps]]\nid = "b"\n');
    const result = await ctl('formula', 'validate', 'bad', '--file', bad);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.equal('');
    expect(result.stdout.trim().split('\n')).to.deep.equal([
      'formulas/bad.toml: step "b": title: is required',
      'formulas/bad.toml: step "a": needs: no step "zz"',
    ]);
    expectFailure(
      await ctl('formula', 'validate', 'bad', '--file', join(city.dir, 'none.toml')),
      'formula validate',
      /cannot read .*none\.toml: ENOENT/,
    );
    expectFailure(await ctl('formula', 'show', 'nope'), 'formula show', /formula not found: nope/);
    expectFailure(await ctl('formula', 'preview', 'tidy'), 'formula preview', /vars\.room: is required/);
  });

  it('formula cook starts a run; run list, show, steps and cancel follow it', async function () {
    const cooked = expectSuccess(await ctl('formula', 'cook', 'tidy', '--var', 'room=hall', '--target', 'worker'));
    const root = /^Root: (\S+)$/.exec(cooked[0])![1];
    expect(cooked[1]).to.equal('Created: 4');
    expect(cooked.slice(2).map((l) => l.trim().split(' → ')[0])).to.deep.equal([
      'sweep',
      'mop',
      'tidy.workflow-finalize',
    ]);
    const runs = expectSuccess(await ctl('run', 'list'));
    expect(runs.some((l) => new RegExp(`^${root}\\s+pending\\s+tidy\\s+worker\\s+Tidy hall$`).test(l))).to.equal(true);
    expect(runs.at(-1)).to.equal('1 pending');
    const steps = expectSuccess(await ctl('run', 'steps', root));
    expect(steps[0]).to.match(/^BEAD\s+STEP\s+KIND\s+STATUS\s+TRY\s+ASSIGNEE\s+TITLE$/);
    expect(steps[1]).to.match(/\s+sweep\s+step\s+pending\s+1\s+worker\s+Sweep hall$/);
    expect(steps[2]).to.match(/\s+mop\s+step\s+blocked\s+1\s+worker\s+Mop hall$/);
    const shown = jsonOf<{ run_id: string; status: string; formula: string }>(await ctl('run', 'show', root, '--json'));
    expect(shown).to.include({ run_id: root, status: 'pending', formula: 'tidy' });
    expect(expectSuccess(await ctl('run', 'cancel', root))).to.deep.equal([`Canceled run ${root} (4 beads closed)`]);
    expect(expectSuccess(await ctl('run', 'cancel', root))).to.deep.equal([`Run ${root} had already ended (canceled)`]);
    expect(expectSuccess(await ctl('run', 'show', root)).some((l) => /^Error:\s+canceled: canceled$/.test(l))).to.equal(
      true,
    );
    expectFailure(await ctl('run', 'show', 'flo-999'), 'run show', /run not found: flo-999/);
  });

  it('sling --formula routes a run to an agent; a bare --var is refused', async function () {
    const slung = expectSuccess(await ctl('sling', 'worker', '--formula', 'tidy', '--var', 'room=attic'));
    expect(slung[0]).to.match(/^Slung a run of tidy to worker: run \S+ \(2 steps\)$/);
    expectFailure(
      await ctl('sling', 'worker', '--var', 'room=x'),
      'sling',
      'a bead, text (or --formula NAME) is required',
    );
    expectFailure(await ctl('sling', 'worker', 'flo-1', '--var', 'room=x'), 'sling', '--var goes with --formula');
    expectFailure(
      await ctl('sling', 'worker', '--formula', 'tidy', '--var', 'room'),
      'sling',
      /invalid --var "room": expected KEY=VALUE/,
    );
  });

  it('order list, check, run, history, disable and enable', async function () {
    const list = expectSuccess(await ctl('order', 'list'));
    expect(list[1]).to.match(/^ping\s+yes\s+manual\s+exec: echo pong$/);
    expect(expectSuccess(await ctl('order', 'check'))[1]).to.match(/^ping\s+no\s+-\s+manual trigger/);
    const fired = expectSuccess(await ctl('order', 'run', 'ping'));
    const tracking = /^Fired ping \(tracking bead (\S+)\)$/.exec(fired[0])![1];
    await waitUntil('the firing to end', async () => {
      const h = jsonOf<{ entries: { status?: string }[] }>(await ctl('order', 'history', '--order', 'ping', '--json'));
      return h.entries[0]?.status === 'success';
    });
    const history = expectSuccess(await ctl('order', 'history'));
    expect(history[1]).to.match(new RegExp(`^${tracking}\\s+ping\\s+\\S+\\s+success\\s+0\\s+\\d+`));
    const output = await ctl('order', 'history', tracking);
    expect(expectSuccess(output)).to.deep.equal(['pong']);
    expect(expectSuccess(await ctl('order', 'disable', 'ping'))).to.deep.equal(['Disabled ping']);
    expect(expectSuccess(await ctl('order', 'list'))[1]).to.match(/^ping\s+no\s+/);
    expect(expectSuccess(await ctl('order', 'enable', 'ping'))).to.deep.equal(['Enabled ping']);
    expectFailure(await ctl('order', 'run', 'nope'), 'order run', /order not found: nope/);
  });
});
