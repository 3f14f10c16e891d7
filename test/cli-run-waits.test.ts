import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

// A workflow that waits says where, and a person can do what it waits for, from the CLI (issue 19, point 18).

const GATED = `
[[steps]]
id = "prepare"
title = "Prepare"
assignee = "worker"

[[steps]]
id = "approve"
title = "Approval"
needs = ["prepare"]
gate = { type = "human" }

[[steps]]
id = "launch"
title = "Launch"
needs = ["approve"]
`;

const LOST = `
[[steps]]
id = "build"
title = "Build"
assignee = "nobody"

[[steps]]
id = "ship"
title = "Ship"
assignee = "{{who}}"
[vars]
who = { default = "worker" }
`;

describe('ctl formula validate, run show, run waits and run open (the real binary)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'gates', ...args]);

  before(async function () {
    city = await startSessionCity('gates', '\n[[agent]]\nname = "worker"\nprovider = "echo"\nsuspended = true\n');
    mkdirSync(join(city.dir, 'formulas'), { recursive: true });
    writeFileSync(join(city.dir, 'formulas', 'gated.toml'), GATED);
    writeFileSync(join(city.dir, 'formulas', 'lost.toml'), LOST);
  });
  after(async () => city?.sup.cleanup());

  it('validate names a step assignee that is no agent of the city (one made of vars is left to run time)', async function () {
    const result = await ctl('formula', 'validate', 'lost');
    expect(result.code).to.equal(1);
    expect(result.stdout.trim().split('\n')).to.deep.equal([
      'formulas/lost.toml: step "build": assignee: no agent "nobody" in this city (its agents: worker)',
    ]);
    expect(expectSuccess(await ctl('formula', 'validate', 'gated'))).to.deep.equal(['gated is valid']);
  });

  it('run show lists the steps and the gate the run waits at; run waits lists it; run open opens it', async function () {
    const cooked = expectSuccess(await ctl('formula', 'cook', 'gated'));
    const run = /^Root: (\S+)$/.exec(cooked[0])![1];
    const steps = JSON.parse(expectSuccess(await ctl('run', 'steps', run, '--json'))[0]) as {
      steps: { id: string; step_ref?: string }[];
    };
    const bead = (ref: string) => steps.steps.find((s) => s.step_ref === ref)!.id;
    expectSuccess(await ctl('bead', 'close', bead('prepare')));
    const gate = await waitUntil('the human gate to be reached', async () => {
      const out = expectSuccess(await ctl('run', 'waits', '--run', run));
      return out.length > 1 && /\sready\s/.test(out[1]) ? out[1].split(/\s+/)[0] : undefined;
    });
    const waits = expectSuccess(await ctl('run', 'waits'));
    expect(waits[0]).to.match(/^GATE\s+KIND\s+STATE\s+RUN\s+SESSION\s+WAITS FOR$/);
    expect(waits.find((l) => l.startsWith(`${gate} `))).to.match(
      new RegExp(`^${gate}\\s+human\\s+ready\\s+${run}\\s.*\\(open it: ctl run open ${gate}\\)$`),
    );

    const shown = expectSuccess(await ctl('run', 'show', run));
    expect(shown.some((l) => /^BEAD\s+STEP\s+KIND\s+STATUS\s+TRY\s+ASSIGNEE\s+TITLE$/.test(l))).to.equal(true);
    expect(shown.some((l) => new RegExp(`^${bead('prepare')}\\s+prepare\\s+step\\s+completed\\s`).test(l))).to.equal(
      true,
    );
    expect(shown.some((l) => new RegExp(`^${bead('launch')}\\s+launch\\s+step\\s+blocked\\s`).test(l))).to.equal(true);
    const at = shown.indexOf('Waiting at:');
    expect(at, shown.join('\n')).to.be.greaterThan(0);
    expect(shown[at + 1]).to.match(new RegExp(`^  ${gate}  human gate, ready: .*ctl run open ${gate}\\)$`));

    expectFailure(await ctl('run', 'open', bead('launch')), 'run open', `wait not found: ${bead('launch')}`);
    expect(expectSuccess(await ctl('run', 'open', gate))).to.deep.equal([`Opened gate ${gate} of run ${run}`]);
    expectFailure(await ctl('run', 'open', gate), 'run open', `gate ${gate} is already open`);
    await waitUntil('launch to be ready', async () =>
      expectSuccess(await ctl('run', 'steps', run)).some((l) =>
        new RegExp(`^${bead('launch')}\\s+launch\\s+step\\s+(pending|open|ready)\\s`).test(l),
      ),
    );
    expect(expectSuccess(await ctl('run', 'waits', '--run', run))).to.deep.equal(['No waits.']);
    expect(expectSuccess(await ctl('run', 'show', run))).to.not.include('Waiting at:');
  });
});
