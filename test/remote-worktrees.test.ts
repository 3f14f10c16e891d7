import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { controllerPid } from './helpers/controller-pid.js';
import type { Envelope } from './helpers/city-api.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { git, rigRepository, runInSession, type WorktreeView } from './helpers/rigs.js';
import {
  createSession,
  sessionEvents,
  startSessionCity,
  terminalOf,
  waitForTurn,
  type Accepted,
  type SessionCity,
} from './helpers/sessions.js';
import { tempDir } from './helpers/temp-dir.js';
import { waitUntil } from './helpers/wait.js';

const ECHO_AGENT = join(packageRoot, 'examples', 'agents', 'echo.sh');
const ON_HOST = '/srv/agents/echo.sh';
/** A committer on the host, where nobody configured one (the host's home is its own). */
const COMMIT = 'git -c user.name=agent -c user.email=agent@example.invalid commit -q -m';

interface View {
  id: string;
  state: string;
  pid?: number;
  host?: string;
  worktree?: WorktreeView;
}

/** A rig on `main`, checked out, that ignores what the agent's start lays into a worktree. */
const repository = () =>
  rigRepository(
    { README: 'hello\n', '.gitignore': 'from-overlay.txt\npre-start.txt\nsetup.txt\n' },
    { prefix: 'ctl-remote-rig-' },
  );

// A worktree session on a host, as a person uses one: the rig stays here, the session's worktree and branch are on
// the host (the rig's base pushed there over the host's connection, which is all the host can reach), its agent's
// start (overlay, pre_start, session_setup) happens there, and its commits come back into the rig at each turn's
// end and when it closes its bead with its own `ctl`, which records and merges them as a local session's would.
describe('worktrees on a host over OpenSSH (a real supervisor, a network-namespace host)', function () {
  this.timeout(180_000);
  let hosts: TestHosts;
  let host: TestHost;
  let city: SessionCity;
  let repo: string;

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    repo = repository();
    const overlay = tempDir('ctl-remote-overlay-');
    writeFileSync(join(overlay, 'from-overlay.txt'), 'laid by the overlay\n');
    // Never replaced: a file the worktree has already keeps its own content.
    writeFileSync(join(overlay, 'README'), 'from the overlay\n');
    hosts = await makeHosts(1, { slots: 4 });
    [host] = hosts.hosts as [TestHost];
    host.put(ECHO_AGENT, ON_HOST);
    city = await startSessionCity(
      'remote-work',
      `
${host.tomlTable()}
[providers.remote-echo]
command = "${ON_HOST}"
ready_prompt_prefix = "ready>"
env = { ECHO_READY = "ready>" }

[[rigs]]
name = "web"
path = "${repo}"

[[agent]]
name = "lander"
dir = "web"
provider = "remote-echo"
isolation = "worktree"
merge = "direct"
hosts = ["${host.name}"]
min_active_sessions = 0
overlay_dir = "${overlay}"
pre_start = ["echo pre-start {{.Session}} in $PWD > pre-start.txt; echo said-by-pre-start"]
session_setup = ["echo setup $CTL_SESSION_NAME > setup.txt"]

[[agent]]
name = "refused"
provider = "remote-echo"
hosts = ["${host.name}"]
min_active_sessions = 0
pre_start = ["echo cannot prepare on $(hostname) >&2; exit 7"]
`,
    );
  });

  before(async function () {
    if (!city) return;
    // An agent of its own directory, whose prompt is a template naming where it works.
    const home = join(city.dir, 'agents', 'templ');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'prompt.template.md'), 'Work in {{work_dir}} as {{agent}}.');
    writeFileSync(
      join(home, 'agent.toml'),
      `dir = "web"\nprovider = "remote-echo"\nisolation = "worktree"\nhosts = ["${host.name}"]\nmin_active_sessions = 0\n`,
    );
    await waitUntil('agent web/templ', async () => (await city.api.get('/agent/web/templ')).status === 200);
    await waitUntil('the host up', async () => {
      const shown = await city.api.get<{ state: string }>(`/hosts/${host.name}`);
      return shown.body.state === 'up';
    });
  });

  after(async function () {
    await city?.sup.cleanup();
    await hosts?.cleanup();
  });

  const view = async (id: string): Promise<View> => (await city.api.get<View>(`/session/${id}`)).body;
  const active = (id: string) => waitUntil('the session to run', async () => (await view(id)).state === 'active');
  /** Has the session's program run `command` where it works (on the host); resolves with what it printed. */
  const run = (id: string, command: string) => runInSession(city.api, id, command);
  const hostPath = (worktree: WorktreeView) => worktree.path.replace(`${host.name}:`, '');

  it('works in its own worktree on the host, made from the rig’s base, with its start run there', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const shown = await view(id);
    expect(shown.host).to.equal(host.name);
    const tree = shown.worktree!;
    expect(tree.path.startsWith(`${host.name}:/srv/ctl-work/`), tree.path).to.equal(true);
    const where = hostPath(tree);
    expect(await run(id, 'pwd')).to.equal(where);
    expect(await run(id, 'git rev-parse --abbrev-ref HEAD')).to.equal(tree.branch);
    expect(await run(id, 'echo "$CTL_WORKTREE $CTL_BRANCH"')).to.equal(`${where} ${tree.branch}`);
    expect(await run(id, 'git rev-parse HEAD')).to.equal(git(repo, 'rev-parse', 'main'));
    // pre_start ran on the host, in the work dir; the overlay is there, never replacing the worktree's own files.
    expect(await run(id, 'cat pre-start.txt')).to.match(new RegExp(`^pre-start \\S+ in ${where}$`));
    expect(await run(id, 'cat from-overlay.txt README')).to.equal('laid by the overlay\nhello');
    await waitUntil(
      'session_setup to have run on the host',
      async () => (await host.exec(`cat ${where}/setup.txt`)).code === 0,
    );
    expect((await host.exec(`cat ${where}/setup.txt`)).stdout).to.match(/^setup \S*lander\S*$/m);
    // What the start commands printed is kept here, as locally; nothing of them ran on this machine.
    const log = readFileSync(join(city.dir, '.ctl', 'sessions', id, 'start-commands.log'), 'utf8');
    expect(log).to.include('said-by-pre-start');
    expect(existsSync(join(city.dir, '.ctl', 'worktrees'))).to.equal(false);
    expect(existsSync(join(repo, 'pre-start.txt'))).to.equal(false);
    // Nothing is written into the person's home on the host.
    expect((await host.exec('ls -A /root')).stdout.trim()).to.equal('');
  });

  it('brings its commits into the rig at the end of each turn', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    await run(id, `printf 'draft\\n' > draft.txt && git add draft.txt && ${COMMIT} 'a draft'`);
    const onHost = (await host.exec(`git -C ${hostPath(tree)} rev-parse HEAD`)).stdout.trim();
    await waitUntil('the branch fetched into the rig', () => {
      try {
        return git(repo, 'rev-parse', tree.branch) === onHost;
      } catch {
        return false;
      }
    });
    expect(git(repo, 'log', '-1', '--format=%s', tree.branch)).to.equal('a draft');
  });

  it('two sessions on the host committing one file are a rig overlap at the turn’s end; uncommitted work there is not', async function () {
    const a = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    const b = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await Promise.all([active(a), active(b)]);
    await run(a, `printf 'a\\n' > collide.txt && git add collide.txt && ${COMMIT} 'a collides'`);
    await run(a, `printf 'draft\\n' > loose.txt`);
    await run(b, `printf 'b\\n' > collide.txt && git add collide.txt && ${COMMIT} 'b collides'`);
    await run(b, `printf 'draft\\n' > loose.txt`);
    const mine = (e: Envelope) => (e.payload.session_ids as string[]).join(' ') === `${a} ${b}`;
    const [event] = await waitUntil('a rig.overlap for the two', async () => {
      const found = (await city.api.eventsAbout('rig.overlap', 'web')).filter(mine);
      return found.length ? found : undefined;
    });
    // Only what came back with their branches: loose.txt is uncommitted on the host.
    expect(event.payload.files).to.deep.equal(['collide.txt']);
    const read = await city.api.get<{ items: { session_ids: string[]; files: string[] }[] }>('/rigs/web/overlaps');
    expect(read.body.items.find((i) => i.session_ids.join(' ') === `${a} ${b}`)?.files).to.deep.equal(['collide.txt']);
    // The host's slots are for the tests after this one.
    for (const id of [a, b]) expect((await city.api.post(`/session/${id}/close`)).status).to.equal(200);
  });

  it('a bead its ctl closes on the host records its branch and merges it into the rig’s base', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    const bead = await city.api.create({ title: 'land it', metadata: { 'ctl.assigned_session': id } });
    const said = await run(
      id,
      `printf 'landed\\n' > landed.txt && git add landed.txt && ${COMMIT} 'land it' && ctl bead close ${bead.id} 2>&1`,
    );
    const head = (await host.exec(`git -C ${hostPath(tree)} rev-parse HEAD`)).stdout.trim();
    const done = await waitUntil('the bead closed', async () => {
      const read = await city.api.bead(bead.id);
      return read.status === 'closed' && read;
    });
    expect(done.metadata, said).to.include({
      'ctl.branch': tree.branch,
      'ctl.commit': head,
      'ctl.merged': head,
      'ctl.base': 'main',
    });
    expect(git(repo, 'rev-parse', 'main')).to.equal(head);
    // The rig's checkout moved with it.
    expect(readFileSync(join(repo, 'landed.txt'), 'utf8')).to.equal('landed\n');
    // Nothing unmerged is left: closing the session removes its worktree, there and here.
    const closed = await city.api.post<{ worktree: { removed: boolean; reason?: string } }>(`/session/${id}/close`);
    expect(closed.body.worktree.removed, closed.body.worktree.reason).to.equal(true);
    expect((await host.exec(`test -e ${hostPath(tree)}`)).code).to.not.equal(0);
    expect(() => git(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${tree.branch}`)).to.throw();
  });

  it('rebases a branch behind the base in its worktree on the host, then merges it', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    await run(id, `printf 'second\\n' > second.txt && git add second.txt && ${COMMIT} 'second'`);
    // The base moves on here while the session works there.
    writeFileSync(join(repo, 'elsewhere.txt'), 'elsewhere\n');
    git(repo, 'add', 'elsewhere.txt');
    git(repo, 'commit', '-q', '-m', 'elsewhere');
    const bead = await city.api.create({ title: 'land after main moved', metadata: { 'ctl.assigned_session': id } });
    const closed = await city.api.post(`/bead/${bead.id}/close`);
    expect(closed.status).to.equal(200);
    const landed = await city.api.bead(bead.id);
    expect(landed.metadata!['ctl.merged'], JSON.stringify(landed.metadata)).to.equal(git(repo, 'rev-parse', 'main'));
    expect(git(repo, 'log', '--format=%s', '-2', 'main').split('\n')).to.deep.equal(['second', 'elsewhere']);
    // The worktree there is on the rebased branch.
    expect((await host.exec(`git -C ${hostPath(tree)} rev-parse HEAD`)).stdout.trim()).to.equal(
      git(repo, 'rev-parse', 'main'),
    );
    await city.api.post(`/session/${id}/close`);
  });

  it('a prompt template’s {{work_dir}} is its worktree on the host', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/templ' });
    await active(id);
    const where = hostPath((await view(id)).worktree!);
    await waitForTurn(city.api, id, 'user', `Work in ${where} as web/templ.`);
    const prime = await city.api.get<{ prompt?: string }>(`/session/${id}/prime`);
    expect(prime.body.prompt).to.equal(`Work in ${where} as web/templ.`);
    await city.api.post(`/session/${id}/close`);
  });

  it('does not start a session whose pre_start fails on the host, and says why with its output', async function () {
    const reply = await city.api.post<Accepted>('/sessions', { kind: 'agent', name: 'refused' });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(202);
    expect((await terminalOf(city.api, reply.body.request_id)).type).to.equal('request.failed');
    const id = reply.body.session_id;
    const [crashed] = await waitUntil('its start to fail', async () => {
      const events = await sessionEvents(city.api, 'session.crashed', id);
      return events.length ? events : undefined;
    });
    // It ran there: the host's own hostname, not this machine's.
    expect(String(crashed.message)).to.match(
      new RegExp(
        `^pre_start\\[0\\] \`.*\` exited with code 7: cannot prepare on ${host.name} \\(its output: .*start-commands\\.log\\)$`,
      ),
    );
    const log = readFileSync(join(city.dir, '.ctl', 'sessions', id, 'start-commands.log'), 'utf8');
    expect(log).to.include(`cannot prepare on ${host.name}`);
  });

  it('keeps a worktree on the host that holds uncommitted work when its session closes', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    await run(id, "printf 'unsaved\\n' > unsaved.txt");
    const closed = await city.api.post<{ worktree: { removed: boolean; reason?: string } }>(`/session/${id}/close`);
    expect(closed.body.worktree).to.include({ removed: false, reason: 'uncommitted changes in unsaved.txt' });
    expect((await host.exec(`cat ${hostPath(tree)}/unsaved.txt`)).stdout).to.equal('unsaved\n');
  });
  it('a new controller finds its worktree on the host again, uncommitted work and all', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    await run(id, "printf 'in progress\\n' > wip.txt");
    const before = (await view(id)).pid;
    expect(before).to.be.a('number');
    // Its pid is the host's: that program gone from the host's table, and a new one started there in its place.
    expect(host.processes().some((p) => p.pid === before && p.args.includes(ON_HOST))).to.equal(true);
    process.kill(controllerPid(city.dir), 'SIGKILL');
    const after = await waitUntil('its program started again', async () => {
      const shown = await view(id);
      return shown.state === 'active' && shown.pid !== undefined && shown.pid !== before && shown.pid;
    });
    expect(host.processes().some((p) => p.pid === after && p.args.includes(ON_HOST))).to.equal(true);
    await active(id);
    expect(await run(id, 'pwd')).to.equal(hostPath(tree));
    expect(await run(id, 'cat wip.txt')).to.equal('in progress');
    await run(id, 'rm wip.txt');
    await city.api.post(`/session/${id}/close`);
  });

  it('never waits on a host that does not answer: its view says so, and its close keeps the worktree', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'web/lander' });
    await active(id);
    const tree = (await view(id)).worktree!;
    await run(id, `printf 'late\\n' > late.txt && git add late.txt && ${COMMIT} 'late'`);
    // Its turn's end brought the commit into the rig before the host stopped answering.
    await waitUntil('the commit fetched into the rig', () => {
      try {
        return git(repo, 'log', '-1', '--format=%s', tree.branch) === 'late';
      } catch {
        return false;
      }
    });
    await host.partition();
    try {
      await waitUntil(
        'the host down',
        async () => (await city.api.get<{ state: string }>(`/hosts/${host.name}`)).body.state === 'down',
        30_000,
      );
      // Said from what the host is known to be, not from a command sent to it.
      const shown = await view(id);
      expect(shown.worktree!.error).to.match(new RegExp(`^its host ${host.name} does not answer`));
      const closed = await city.api.post<{ worktree: { removed: boolean; reason?: string } }>(`/session/${id}/close`);
      expect(closed.body.worktree.removed).to.equal(false);
      expect(closed.body.worktree.reason).to.be.a('string').and.not.equal('');
    } finally {
      await host.heal();
    }
    // What it committed there is still there, and nothing was removed from the rig.
    expect((await host.exec(`git -C ${hostPath(tree)} log -1 --format=%s`)).stdout.trim()).to.equal('late');
    expect(git(repo, 'log', '-1', '--format=%s', tree.branch)).to.equal('late');
  });
});
