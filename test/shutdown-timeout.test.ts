import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startSessionCity, type SessionCity } from './helpers/sessions.js';
import { CSRF, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// `[daemon] shutdown_timeout`: when a city stops, each session's program has that long to end after it is asked
// to, before it is killed — longer than the controller's usual grace (3 s) and the supervisor's (7 s) when the
// city says so. The program here takes 5 s to clean up after its hang-up: it finishes only because the city
// gives it 10 s (its controller, its supervisor, and the stop request all wait for it).
describe('[daemon] shutdown_timeout (real supervisor)', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let out: string;

  before(async function () {
    const scratch = tempDir('ctl-shutdown-');
    out = join(scratch, 'out');
    const script = join(scratch, 'slow-exit.sh');
    writeFileSync(
      script,
      '#!/bin/sh\n' +
        'trap \'sleep 5; echo cleaned-up > "$OUT"; exit 0\' HUP TERM\n' +
        'echo started > "$OUT"\n' +
        'while :; do sleep 1; done\n',
    );
    chmodSync(script, 0o755);
    city = await startSessionCity(
      'slow',
      `\n[daemon]\nshutdown_timeout = "10s"\n\n[providers.slow-exit]\ncommand = "${script}"\nenv = { OUT = "${out}" }\n\n[[agent]]\nname = "keeper"\nprovider = "slow-exit"\n`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it("lets a session's program finish its clean-up when the city stops", async function () {
    await waitUntil('the program to start', () => existsSync(out) && readFileSync(out, 'utf8').includes('started'));
    const res = await fetch(`${city.sup.base}/v0/city/slow/stop`, { method: 'POST', headers: CSRF });
    expect(res.status, await res.text()).to.equal(200);
    expect(readFileSync(out, 'utf8')).to.equal('cleaned-up\n');
  });
});
