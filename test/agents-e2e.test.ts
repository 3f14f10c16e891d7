import { join } from 'node:path';
import { expect } from 'chai';
import { expectProblem } from './helpers/city-api.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { isAlive } from './helpers/processes.js';
import { send, session, startSessionCity, type SessionCity } from './helpers/sessions.js';
import { SseStreamReader } from './helpers/sse.js';
import { CityApi } from './helpers/city-api.js';
import { TestSupervisor, withSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

const COMPACTING_AGENT = join(import.meta.dirname, 'fixtures', 'compacting-agent.mjs');

const OUTPUT_CITY = `
[daemon]
patrol_interval = "500ms"

[providers.compacting]
base = "builtin:claude"
command = "${process.execPath} ${COMPACTING_AGENT}"

[[agent]]
name = "compactor"
provider = "compacting"

[[agent]]
name = "talker"
provider = "echo"

[[agent]]
name = "never"
provider = "echo"
min_active_sessions = 0
`;

interface OutputBody {
  agent: string;
  format: string;
  session_id: string;
  turns: { role: string; text: string; timestamp?: string }[];
  pagination: { total_compactions: number };
}

describe('agent output, the supervisor restart and the CLI (real processes)', function () {
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('output', OUTPUT_CITY);
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it("counts the compactions of an agent's program (Claude Code's compact_boundary) in its output", async function () {
    const id = await waitUntil('compactor to run', async () => {
      const list = await city.api.get<{ items: { id: string; running: boolean }[] }>('/sessions?template=compactor');
      return list.body.items.find((s) => s.running)?.id;
    });
    await send(city.api, id, 'first');
    await send(city.api, id, 'second');
    const output = await waitUntil('two compactions', async () => {
      const reply = await city.api.get<OutputBody>('/agent/compactor/output');
      return reply.body.pagination?.total_compactions === 2 ? reply.body : undefined;
    });
    expect(output.turns.map((t) => [t.role, t.text])).to.deep.include.members([
      ['system', 'conversation compacted (manual)'],
      ['assistant', 'compacted 2'],
    ]);
  });

  it('GET /agent/{base}/output is its conversation; a never-run agent is a 404', async function () {
    const id = await waitUntil('talker to run', async () => {
      const list = await city.api.get<{ items: { id: string; running: boolean }[] }>('/sessions?template=talker');
      return list.body.items.find((s) => s.running)?.id;
    });
    await send(city.api, id, 'hello agent');
    const output = await waitUntil('the reply', async () => {
      const reply = await city.api.get<OutputBody>('/agent/talker/output');
      return reply.body.turns?.some((t) => t.text === 'echo: hello agent') ? reply.body : undefined;
    });
    expect(output).to.include({ agent: 'talker', format: 'conversation', session_id: id });
    expect(output.turns.map((t) => [t.role, t.text])).to.deep.include.members([
      ['user', 'hello agent'],
      ['assistant', 'echo: hello agent'],
    ]);
    expect(output.pagination.total_compactions).to.equal(0);
    expectProblem(await city.api.get('/agent/never/output'), 404, 'agent-not-found');
    const stream = await fetch(city.api.url('/agent/never/output/stream'));
    expect(stream.status).to.equal(404);
    expect(stream.headers.get('content-type')).to.match(/problem\+json/);
    await stream.text();
  });

  it('streams its turns live while it runs; once stopped, replays them with CTL-Agent-Status: stopped, then goes on when it starts again', async function () {
    const [id] = (await city.api.get<{ items: { id: string }[] }>('/sessions?template=talker')).body.items.map(
      (s) => s.id,
    );
    const live = await SseStreamReader.open(city.api.url('/agent/talker/output/stream'));
    expect(live.response.status).to.equal(200);
    expect(live.response.headers.get('content-type')).to.match(/^text\/event-stream/);
    expect(live.response.headers.get('ctl-agent-status')).to.equal(null);
    await send(city.api, id, 'live one');
    const seen = await waitUntil('the live reply', async () => {
      const frame = await live.nextEvent(5000);
      const data = frame && (JSON.parse(frame.data) as OutputBody);
      return data?.turns[0]?.text === 'echo: live one' ? frame : undefined;
    });
    expect(seen.event).to.equal('turn');
    expect(seen.id).to.match(new RegExp(`^${id}:\\d+$`));
    live.close();

    expect((await city.api.post('/agent/talker/suspend')).status).to.equal(200);
    await waitUntil('talker to stop', async () => !(await session(city.api, id)).running);
    // The spec's path (`/agents/{agent}/output/stream`) is the same stream.
    const replay = await SseStreamReader.open(city.api.url('/agents/talker/output/stream'));
    expect(replay.response.status).to.equal(200);
    expect(replay.response.headers.get('ctl-agent-status')).to.equal('stopped');
    const texts: string[] = [];
    while (!texts.includes('echo: live one')) {
      const frame = await replay.nextEvent(5000);
      if (!frame) break;
      texts.push(...(JSON.parse(frame.data) as OutputBody).turns.map((t) => t.text));
    }
    expect(texts).to.include.members(['hello agent', 'echo: hello agent', 'live one', 'echo: live one']);
    // It starts again: the same stream goes on with its new turns.
    await city.api.post('/agent/talker/resume');
    await waitUntil('talker to run again', async () => (await session(city.api, id)).state === 'active');
    await send(city.api, id, 'after restart');
    await waitUntil('the new reply on the old stream', async () => {
      const frame = await replay.nextEvent(5000);
      return frame && (JSON.parse(frame.data) as OutputBody).turns[0]?.text === 'echo: after restart';
    });
    replay.close();
  });

  it('ctl agent list|show|output|suspend|resume and ctl sling speak for the API, one line on stderr for a bad name', async function () {
    const env = { CTL_CITY: 'output' };
    const list = expectSuccess(await city.sup.ctl(['agent', 'list'], { env }));
    expect(list[0]).to.match(/^NAME\s+STATE\s+SESSIONS/);
    expect(list.some((l) => /^talker\s+idle/.test(l))).to.equal(true);
    const shown = JSON.parse((await city.sup.ctl(['agent', 'show', 'talker', '--json'], { env })).stdout) as {
      name: string;
    };
    expect(shown.name).to.equal('talker');
    const output = expectSuccess(await city.sup.ctl(['agent', 'output', 'talker'], { env }));
    expect(output).to.include('assistant: echo: after restart');
    expectFailure(await city.sup.ctl(['agent', 'show', 'nobody'], { env }), 'agent show', /agent not found: nobody/);
    expect(expectSuccess(await city.sup.ctl(['agent', 'suspend', 'never'], { env }))).to.deep.equal([
      'Suspended agent never',
    ]);
    expect(expectSuccess(await city.sup.ctl(['agent', 'resume', 'never'], { env }))).to.deep.equal([
      'Resumed agent never',
    ]);
    const bead = await city.api.create({ title: 'from the cli' });
    const slung = expectSuccess(await city.sup.ctl(['sling', 'talker', bead.id], { env }));
    expect(slung[0]).to.match(new RegExp(`^Slung bead ${bead.id} to talker \\(convoy out-\\d+\\)$`));
    expectFailure(
      await city.sup.ctl(['sling', 'nobody', bead.id], { env }),
      'sling',
      /no agent or open session named nobody/,
    );
    const added = expectSuccess(
      await city.sup.ctl(['agent', 'add', 'extra', '--provider', 'echo', '--min', '0'], { env }),
    );
    expect(added).to.deep.equal(['Added agent extra']);
    expect(expectSuccess(await city.sup.ctl(['agent', 'remove', 'extra'], { env }))).to.deep.equal([
      'Removed agent extra',
    ]);
    const suspended = expectSuccess(await city.sup.ctl(['city', 'suspend', 'output']));
    expect(suspended).to.deep.equal(['City output is suspended']);
    expect(expectSuccess(await city.sup.ctl(['city', 'resume', 'output']))).to.deep.equal([
      'City output is running its agents',
    ]);
  });
});

describe('a supervisor restart keeps sessions running; ctl supervisor stop ends them', function () {
  it('ctl supervisor restart: same controller, same session program; stop: every program gone', async function () {
    const city = await startSessionCity('keep', OUTPUT_CITY);
    try {
      const before = await waitUntil('talker to run', async () => {
        const list = await city.api.get<{ items: { id: string; pid?: number; running: boolean }[] }>(
          '/sessions?template=talker',
        );
        return list.body.items.find((s) => s.running && s.pid);
      });
      const controller = (await city.sup.city('keep')) as { pid?: number };
      expect(controller.pid).to.be.a('number');
      // `ctl supervisor restart`: SIGHUP to the running supervisor (as systemd's reload sends), then a new one in the
      // background on the same home and port.
      const restarted = expectSuccess(await city.sup.ctl(['supervisor', 'restart', '--port', String(city.sup.port)]));
      expect(restarted.at(-1)).to.match(/^Supervisor started \(pid \d+\) at http:\/\/127\.0\.0\.1:\d+$/);
      await city.sup.process;
      expect(isAlive(before.pid!)).to.equal(true);
      expect(isAlive(controller.pid!)).to.equal(true);
      const again = city.sup;
      await waitUntil(
        'the city to run under the new supervisor',
        async () => (await again.city('keep'))?.running === true,
      );
      const shutdown = (await again.events()).filter((e) => e.type === 'supervisor.shutdown_requested').at(-1);
      expect(shutdown?.payload).to.deep.include({ mode: 'preserve_sessions', signal: 'SIGHUP' });
      const api = new CityApi(again, 'keep');
      const after = await session(api, before.id);
      expect(after).to.include({ running: true, pid: before.pid, state: 'active' });
      expect(((await again.city('keep')) as { pid?: number }).pid).to.equal(controller.pid);
      // It still talks.
      await send(api, before.id, 'still here');
      await waitUntil('the reply', async () =>
        (await session(api, before.id)).last_output?.includes('echo: still here'),
      );
      const stop = expectSuccess(await again.ctl(['supervisor', 'stop']));
      expect(stop).to.deep.equal(['Supervisor stopped.']);
      await waitUntil('the session program to be gone', () => !isAlive(before.pid!));
      expect(isAlive(controller.pid!)).to.equal(false);
    } finally {
      await city.sup.cleanup();
    }
  });
});

describe('the demo city (ctl init --template demo): agents doing real work, offline', function () {
  let sup: TestSupervisor;

  withSupervisor((started) => {
    sup = started;
  });

  it('completes 10 beads end to end: created and slung with ctl, done, closed and mailed by the worker', async function () {
    this.timeout(90_000);
    const dir = sup.cityDir('demo');
    const init = expectSuccess(await sup.ctl(['init', dir, '--template', 'demo']));
    expect(init[0]).to.equal(`City demo is running at ${dir}`);
    const env = { CTL_CITY: 'demo' };
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const created = JSON.parse(
        (await sup.ctl(['bead', 'create', `reverse: bead number ${i}`, '--json'], { env })).stdout,
      ) as {
        id: string;
      };
      ids.push(created.id);
      expectSuccess(await sup.ctl(['sling', 'worker', created.id], { env }));
    }
    const api = new CityApi(sup, 'demo');
    await waitUntil(
      'every bead to be closed',
      async () => {
        const beads = await Promise.all(ids.map((id) => api.bead(id)));
        return beads.every((b) => b.status === 'closed');
      },
      60_000,
    );
    // The worker closes each bead, then mails its result.
    const inbox = await waitUntil('ten results in the mail', async () => {
      const reply = await api.get<{ items: { subject: string; body: string; to: string }[] }>(
        '/mail?agent=human&status=all&limit=100',
      );
      return reply.body.items.filter((m) => / done$/.test(m.subject)).length === 10 ? reply : undefined;
    });
    for (const [i, id] of ids.entries()) {
      const mail = inbox.body.items.find((m) => m.subject === `${id} done`);
      expect(mail, `mail for ${id}`).to.not.equal(undefined);
      expect(mail!.body).to.equal([...`bead number ${i}`].reverse().join(''));
    }
    // Two sessions at most (its pool), and every convoy closed with its bead.
    const created = (await api.events('session.created')).filter((e) => e.payload.template === 'worker');
    expect(created.length).to.be.within(1, 2);
    const output = expectSuccess(await sup.ctl(['agent', 'output', 'worker'], { env }));
    expect(output.some((l) => /^assistant: Closed \S+-\d+: /.test(l))).to.equal(true);
  });

  it('runs its formula end to end: ctl sling --formula, each step done by the worker in order, the run completed', async function () {
    this.timeout(60_000);
    const env = { CTL_CITY: 'demo' };
    const slung = expectSuccess(
      await sup.ctl(['sling', 'worker', '--formula', 'shout-back', '--var', 'text=molecule'], { env }),
    );
    const runId = /run (\S+) \(2 steps\)$/.exec(slung[0])?.[1];
    expect(runId, slung[0]).to.be.a('string');
    const api = new CityApi(sup, 'demo');
    await waitUntil(
      'the run to complete',
      async () => (await api.get<{ status: string }>(`/runs/${runId}`)).body.status === 'completed',
      45_000,
    );
    const steps = expectSuccess(await sup.ctl(['run', 'steps', runId!], { env }));
    expect(steps.filter((l) => / completed /.test(l))).to.have.length(3);
    // The worker mails each step's result once it has closed the step.
    await waitUntil('both results in the mail', async () => {
      const mail = await api.get<{ items: { body: string }[] }>('/mail?agent=human&status=all&limit=100');
      const bodies = mail.body.items.map((m) => m.body);
      return bodies.includes('MOLECULE') && bodies.includes([...'molecule'].reverse().join(''));
    });
    const resolved = (await api.events('molecule.resolved')).find((e) => e.subject === runId);
    expect(resolved?.payload).to.include({ outcome: 'pass', formula: 'shout-back' });
  });
});
