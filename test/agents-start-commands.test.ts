import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { isAlive } from './helpers/processes.js';
import { session, sessionEvents, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// An agent's start keys with the shipped example agent (no real agent CLI): overlay_dir, pre_start,
// session_setup, nudge — and what the city shows when a start command fails or hangs, down to a quarantine
// that lifts by itself.
const START_CITY = `
[daemon]
patrol_interval = "500ms"
restart_backoff = "100ms"
restart_window = "10s"
max_restarts = 2
quarantine_duration = "2s"

[session]
setup_timeout = "2s"

[[agent]]
name = "prepared"
provider = "echo"
work_dir = "work/prepared"
min_active_sessions = 0
max_active_sessions = 1
overlay_dir = "overlay"
pre_start = ["echo pre {{.Agent}} {{.Session}} in $PWD from {{.ConfigDir}} > pre-start.txt; echo said-by-pre-start"]
session_setup = ["echo setup $CTL_SESSION_NAME > {{.WorkDir}}/setup.txt; echo printed-by-setup; exit 4"]
nudge = "Check your hook for work."

[[agent]]
name = "refused"
provider = "echo"
pre_start = ["echo cannot prepare >&2; exit 7"]

[[agent]]
name = "hangs"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 1
pre_start = ["echo $$ > {{.CityRoot}}/hangs.pid; sleep 30"]

[[agent]]
name = "aging"
provider = "echo"
min_active_sessions = 0
max_active_sessions = 1
max_session_age = "1500ms"
`;

interface SessionItem {
  id: string;
  template: string;
  state: string;
  running: boolean;
  session_name: string;
  reason?: string;
}

async function sessionsOf(city: SessionCity, agent: string): Promise<SessionItem[]> {
  return (await city.api.get<{ items: SessionItem[] }>(`/sessions?template=${agent}`)).body.items;
}

describe('agent start keys: overlay_dir, pre_start, session_setup, nudge (real controller, example agent)', function () {
  let city: SessionCity;

  before(async function () {
    city = await startSessionCity('starts', START_CITY);
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('lays the overlay in, runs pre_start before and session_setup after the start, and nudges with the work', async function () {
    const work = join(city.dir, 'work', 'prepared');
    mkdirSync(join(city.dir, 'overlay', 'sub'), { recursive: true });
    writeFileSync(join(city.dir, 'overlay', 'AGENTS.md'), 'from the overlay\n');
    writeFileSync(join(city.dir, 'overlay', 'keep.txt'), 'the overlay’s\n');
    writeFileSync(join(city.dir, 'overlay', 'sub', 'tool.sh'), '#!/bin/sh\n', { mode: 0o755 });
    const secret = join(tempDir('ctl-overlay-outside-'), 'secret.txt');
    writeFileSync(secret, 'not to be copied\n');
    symlinkSync(secret, join(city.dir, 'overlay', 'escape.txt'));
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'keep.txt'), 'the work directory’s own\n');

    const bead = await city.api.create({ title: 'prepare me' });
    expect((await city.api.post('/sling', { target: 'prepared', bead: bead.id })).status).to.equal(200);
    const [started] = await waitUntil('a session of prepared', async () => {
      const list = await sessionsOf(city, 'prepared');
      return list.length ? list : undefined;
    });
    // The startup nudge is its first turn; the work line carries the nudge after it.
    await waitForTurn(city.api, started.id, 'user', 'Check your hook for work.');
    await waitForTurn(
      city.api,
      started.id,
      'user',
      new RegExp(`^Work on bead ${bead.id}: prepare me \\(details: .*\\) Check your hook for work\\.$`),
    );

    expect(readFileSync(join(work, 'AGENTS.md'), 'utf8')).to.equal('from the overlay\n');
    expect(readFileSync(join(work, 'keep.txt'), 'utf8')).to.equal('the work directory’s own\n');
    expect(existsSync(join(work, 'sub', 'tool.sh'))).to.equal(true);
    expect(existsSync(join(work, 'escape.txt')), 'a link out of the overlay is not followed').to.equal(false);
    expect(readFileSync(join(work, 'pre-start.txt'), 'utf8')).to.equal(
      `pre prepared ${started.session_name} in ${work} from ${city.dir}\n`,
    );

    // session_setup ran after the start, in the session's environment; its failure is an event naming its output.
    await waitUntil('setup.txt', async () => existsSync(join(work, 'setup.txt')));
    expect(readFileSync(join(work, 'setup.txt'), 'utf8')).to.equal(`setup ${started.session_name}\n`);
    const [failed] = await waitUntil('session_setup’s failure to be recorded', async () => {
      const events = await sessionEvents(city.api, 'session.updated', started.id);
      const found = events.filter((e) => String(e.payload.reason).startsWith('session_setup[0]'));
      return found.length ? found : undefined;
    });
    const log = join(city.dir, '.ctl', 'sessions', started.id, 'start-commands.log');
    expect(failed.payload.reason).to.equal(
      `session_setup[0] \`echo setup $CTL_SESSION_NAME > ${work}/setup.txt; echo printed-by-setup; exit 4\` exited with code 4: printed-by-setup (its output: ${log})`,
    );
    const kept = readFileSync(log, 'utf8');
    expect(kept).to.include('said-by-pre-start');
    expect(kept).to.include('printed-by-setup');
    expect(kept).to.match(/overlay_dir .*: skipped escape\.txt: a symbolic link leading out of the overlay/);
    // It runs on regardless.
    expect((await session(city.api, started.id)).state).to.equal('active');
  });

  it('does not start a session whose pre_start fails, says why, quarantines it, and lifts the quarantine by itself', async function () {
    const [first] = await waitUntil('a session of refused', async () => {
      const list = await sessionsOf(city, 'refused');
      return list.length ? list : undefined;
    });
    const quarantined = await waitUntil(
      'refused to be quarantined',
      async () => (await sessionEvents(city.api, 'session.quarantined', first.id))[0],
    );
    expect(String(quarantined.payload.reason)).to.match(
      /failed 2 times in a row .*; it may start again at \S+Z, or wake it now$/,
    );
    const view = await session(city.api, first.id);
    expect(view.running).to.equal(false);
    const crashed = await sessionEvents(city.api, 'session.crashed', first.id);
    expect(String(crashed[0]?.message)).to.match(
      /^pre_start\[0\] `echo cannot prepare >&2; exit 7` exited with code 7: cannot prepare \(its output: .*start-commands\.log\)$/,
    );
    const lifted = await waitUntil(
      'the quarantine to lift by itself',
      async () => (await sessionEvents(city.api, 'session.quarantine_lifted', first.id))[0],
    );
    expect(String(lifted.payload.reason)).to.match(/^its quarantine ended at \S+Z: it may start again$/);
    // It tries again (and fails again: its pre_start still refuses).
    await waitUntil(
      'another start after the quarantine',
      async () => (await sessionEvents(city.api, 'session.crashed', first.id)).length > crashed.length,
    );
  });

  it('stops a pre_start that outlasts [session] setup_timeout, its whole process group', async function () {
    const bead = await city.api.create({ title: 'hang' });
    expect((await city.api.post('/sling', { target: 'hangs', bead: bead.id })).status).to.equal(200);
    const [hung] = await waitUntil('a session of hangs', async () => {
      const list = await sessionsOf(city, 'hangs');
      return list.length ? list : undefined;
    });
    const crashed = await waitUntil(
      'the time-out',
      async () => (await sessionEvents(city.api, 'session.crashed', hung.id))[0],
    );
    expect(String(crashed.message)).to.match(/^pre_start\[0\] `.*sleep 30` timed out after 2000 ms/);
    const pid = Number(readFileSync(join(city.dir, 'hangs.pid'), 'utf8'));
    await waitUntil('the hung command to be gone', async () => !isAlive(pid));
  });

  it('restarts a session past max_session_age once idle, the same session on its agent’s configuration', async function () {
    const bead = await city.api.create({ title: 'grow old' });
    expect((await city.api.post('/sling', { target: 'aging', bead: bead.id })).status).to.equal(200);
    const [aging] = await waitUntil('a session of aging', async () => {
      const list = await sessionsOf(city, 'aging');
      return list.length ? list : undefined;
    });
    await waitUntil('the bead to be handed over', async () => (await city.api.bead(bead.id)).status === 'in_progress');
    await city.api.close(bead.id);
    const stopped = await waitUntil('an age restart', async () =>
      (await sessionEvents(city.api, 'session.stopped', aging.id)).find((e) =>
        /^restarting: it has run \S+, past its max_session_age \(1\.5s\)$/.test(String(e.payload.reason)),
      ),
    );
    await waitUntil(
      'it to be running again',
      async () =>
        (await sessionEvents(city.api, 'session.woke', aging.id)).some((e) => e.seq > stopped.seq) &&
        (await session(city.api, aging.id)).running,
    );
    expect((await city.api.post('/agent/aging/suspend')).status).to.equal(200);
  });
});
