import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expectSuccess, lines } from './helpers/cli.js';
import { ECHO_AGENT, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { tempDir, TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// A program that is not installed is said at once, where a person looks, and waited for rather than started
// into a crash loop (issue 19, point 16): the real `ctl`, supervisor and controller.

describe('ctl init --start-command naming no program', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  before(async () => (sup = await TestSupervisor.start()));
  after(async () => sup?.cleanup());

  it('creates the city but warns on stderr, and the API answer carries the warning', async function () {
    const result = await sup.ctl(['init', sup.cityDir('ghost'), '--start-command', '/no/such/prog']);
    expect(result.code, result.stderr).to.equal(0);
    expect(lines(result.stdout)).to.deep.equal([`City ghost is running at ${sup.cityDir('ghost')}`]);
    expect(lines(result.stderr)).to.deep.equal([
      'ctl init: warning: start_command "/no/such/prog": /no/such/prog is not an executable file; ' +
        "the city's agents cannot start until it is installed",
    ]);
    const reply = await fetch(`${sup.base}/v0/city`, {
      method: 'POST',
      headers: { 'X-CTL-Request': 'test', 'Content-Type': 'application/json' },
      body: JSON.stringify({ dir: sup.cityDir('ghost2'), start_command: 'no-such-program-anywhere --flag' }),
    });
    expect(reply.status).to.equal(202);
    const body = (await reply.json()) as { warnings?: string[] };
    expect(body.warnings).to.deep.equal([
      'start_command "no-such-program-anywhere --flag": no-such-program-anywhere not found on PATH; ' +
        "the city's agents cannot start until it is installed",
    ]);
    const quiet = await sup.ctl(['init', sup.cityDir('fine'), '--start-command', 'sleep 3600']);
    expect(quiet.stderr).to.equal('');
  });
});

describe('an agent whose program is not installed', function () {
  // Four waits one after another, each bounded by WAIT_MS (the last one includes the controller's recheck of a
  // missing program and its probe cache, a few seconds, before a session starts).
  this.timeout(180_000);
  let city: SessionCity;
  const bin = tempDir('ctl-later-bin-');
  const program = join(bin, 'later-agent.sh');
  const ctl = (...args: string[]) => city.sup.ctl(['--city', 'lacking', ...args]);

  before(async function () {
    city = await startSessionCity(
      'lacking',
      `
[providers.later]
command = "${program}"

[[agent]]
name = "helper"
provider = "later"
min_active_sessions = 0
`,
    );
  });
  after(async () => {
    await city?.sup.cleanup();
    rmSync(bin, { recursive: true, force: true });
  });

  it('shows why in ctl agent list, waits with slung work instead of crash-looping, and starts once installed', async function () {
    const bead = await city.api.create({ title: 'help out' });
    expectSuccess(await ctl('sling', 'helper', bead.id));
    const row = await waitUntil('the agent list to say why', async () => {
      const out = expectSuccess(await ctl('agent', 'list'));
      return out.find((l) => l.startsWith('helper ') && l.includes('not installed')) ?? undefined;
    });
    expect(row.split(/\s+/)[1]).to.equal('unavailable');
    expect(row).to.include(`${program} is not an executable file`);
    const agent = JSON.parse(expectSuccess(await ctl('agent', 'show', 'helper', '--json'))[0]) as {
      available: boolean;
      unavailable_reason?: string;
    };
    expect(agent.available).to.equal(false);
    expect(agent.unavailable_reason).to.include(`provider later: ${program} is not an executable file`);
    // It waits: said once as agent.waiting, and no session is started to fail.
    await waitUntil('agent.waiting naming the program', async () =>
      (await city.api.events('agent.waiting')).some(
        (e) => e.subject === 'helper' && String(e.payload.reason).includes(program),
      ),
    );
    await city.sup.reconcilerPasses(1);
    const sessions = await city.api.get<{ items: unknown[] }>('/sessions?template=helper&state=all');
    expect(sessions.body.items, 'no session started for a program that is not there').to.have.length(0);

    // Installed: the next tick starts it, and the agent is available again.
    mkdirSync(bin, { recursive: true });
    copyFileSync(ECHO_AGENT, program);
    await waitUntil('a session of helper to run', async () => {
      const list = await city.api.get<{ items: { running: boolean }[] }>('/sessions?template=helper');
      return list.body.items.some((s) => s.running);
    });
    const after = JSON.parse(expectSuccess(await ctl('agent', 'show', 'helper', '--json'))[0]) as {
      available: boolean;
    };
    expect(after.available).to.equal(true);
  });
});
