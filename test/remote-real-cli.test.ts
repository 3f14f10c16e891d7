import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { startScriptedClaude, type ScriptedClaude } from './helpers/claude-city.js';
import { hostsAvailable, makeHosts, type TestHost, type TestHosts } from './helpers/netns-hosts.js';
import { startScriptedCodex, type ScriptedCodex } from './helpers/scripted-codex.js';
import {
  createSession,
  deliver,
  session,
  startSessionCity,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { tempDir } from './helpers/temp-dir.js';
import { waitUntil } from './helpers/wait.js';

/** Where Claude Code is installed on each host, and the home it runs with there. */
const CLAUDE_ON_HOST = '/srv/cli/claude';
const HOME_ON_HOST = '/srv/claude-home';

interface BeadView {
  id: string;
  status: string;
  metadata?: Record<string, string>;
}

/**
 * Opens `ssh -R` from the host's loopback to the scripted model server here: the host reaches nothing else, so a
 * CLI there calls its model through this tunnel, as it would call its provider's API over the internet.
 */
async function modelTunnel(host: TestHost, port: number): Promise<ChildProcess> {
  const options = host.sshOptions();
  const tunnel = spawn(
    'ssh',
    [
      ...options.slice(0, -1),
      '-N',
      '-o',
      'ExitOnForwardFailure=yes',
      '-R',
      `127.0.0.1:${port}:127.0.0.1:${port}`,
      options.at(-1)!,
    ],
    { stdio: 'ignore' },
  );
  await waitUntil(`the model tunnel to ${host.name}`, async () => {
    const probe = await host.exec(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}'`);
    return probe.code === 0;
  });
  return tunnel;
}

/**
 * The scripted model server and `count` hosts (two slots each), each with Claude Code installed, its home made, and
 * a tunnel (added to `tunnels`) from its loopback to the model server here.
 */
async function claudeOnHosts(
  count: number,
  tunnels: ChildProcess[],
): Promise<{ claude: ScriptedClaude; hosts: TestHosts }> {
  const claude = await startScriptedClaude({ SHELL: '/bin/bash' });
  const hosts = await makeHosts(count, { slots: 2 });
  const port = Number(new URL(claude.model.url).port);
  for (const host of hosts.hosts) {
    host.put(realpathSync(claude.cli.bin), CLAUDE_ON_HOST);
    await host.exec(`mkdir -p ${HOME_ON_HOST}`);
    tunnels.push(await modelTunnel(host, port));
  }
  return { claude, hosts };
}

/**
 * `[providers.agent-cli]`: Claude Code as installed on the hosts, with its scripted environment, its home there and
 * `more` variables, asking nothing.
 */
function claudeProviderOnHosts(claude: ScriptedClaude, more: Record<string, string>): string {
  const env = { ...claude.env, HOME: HOME_ON_HOST, ...more };
  const envToml = Object.entries(env)
    .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
    .join(', ');
  return [
    '[providers.agent-cli]',
    'base = "builtin:claude"',
    `command = "${CLAUDE_ON_HOST}"`,
    `env = { ${envToml} }`,
    'default_permission_mode = "bypassPermissions"',
  ].join('\n');
}

// A real agent CLI doing slung work on two hosts: Claude Code (offline, against the scripted model server, reached
// through a tunnel), installed on each host as a person would; a pool agent whose hosts are both takes two beads,
// one session on each host; each session reads its bead with ctl, runs what it says in its directory there, and
// closes it with ctl — through the host's tunnel home, as its agent.
describe('a real agent CLI on two hosts (Claude Code, a real supervisor, network-namespace hosts)', function () {
  this.timeout(240_000);
  let hosts: TestHosts;
  let claude: ScriptedClaude;
  let city: SessionCity;
  const tunnels: ChildProcess[] = [];

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    ({ claude, hosts } = await claudeOnHosts(2, tunnels));
    city = await startSessionCity(
      'remote-claude',
      `
${hosts.hosts.map((h) => h.tomlTable()).join('\n')}
${claudeProviderOnHosts(claude, {})}

[[agent]]
name = "coder"
provider = "agent-cli"
hosts = [${hosts.hosts.map((h) => JSON.stringify(h.name)).join(', ')}]
max_active_sessions = 2
`,
    );
    for (const host of hosts.hosts)
      await waitUntil(`${host.name} up`, async () => {
        return (await city.api.get<{ state: string }>(`/hosts/${host.name}`)).body.state === 'up';
      });
  });

  after(async function () {
    await city?.sup.cleanup();
    for (const tunnel of tunnels) tunnel.kill();
    await hosts?.cleanup();
    await claude?.close();
  });

  it('takes two beads, one session on each host, each closed by its session with ctl there', async function () {
    const jobs: BeadView[] = [];
    for (const name of ['alpha', 'beta']) {
      const bead = await city.api.create({
        title: `Write ${name}.txt`,
        description: `run: printf '${name}\\n' > ${name}.txt && cat ${name}.txt`,
      });
      jobs.push(bead);
      expect((await city.api.post('/sling', { target: 'coder', bead: bead.id })).status).to.equal(200);
    }
    const closed = await waitUntil(
      'both beads closed by their sessions',
      async () => {
        const now = await Promise.all(jobs.map(async (j) => (await city.api.get<BeadView>(`/bead/${j.id}`)).body));
        return now.every((b) => b.status === 'closed') ? now : undefined;
      },
      180_000,
    );
    const holders = closed.map((b) => b.metadata?.['ctl.assigned_session']);
    const sessions = (await city.api.get<{ items: { id: string; host: string }[] }>('/sessions')).body.items;
    const placed = new Set(holders.map((id) => sessions.find((s) => s.id === id)?.host));
    expect([...placed].sort()).to.deep.equal(hosts.hosts.map((h) => h.name).sort());
    // Each close came through a host's gateway, as its agent.
    const closes = (await city.api.events('bead.closed')).filter((e) => jobs.some((j) => j.id === e.subject));
    expect(closes.map((e) => e.actor)).to.deep.equal(['coder', 'coder']);
    // The work was done there: each host has the file its session wrote.
    for (const host of hosts.hosts) {
      const found = await host.exec('cat /srv/ctl-work/cities/*/sessions/*/work/*.txt');
      expect(found.stdout.trim()).to.match(/^(alpha|beta)$/);
    }
  });
});

// Codex's exec runtime (a `codex exec` process per turn) with Codex installed on a host, its model reached through
// the same kind of tunnel: a turn answered, and the next turn a new process there resuming the conversation.
describe('Codex exec on a host (a real supervisor, a network-namespace host)', function () {
  this.timeout(240_000);
  let hosts: TestHosts;
  let codex: ScriptedCodex;
  let city: SessionCity;
  let tunnel: ChildProcess | undefined;

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    codex = await startScriptedCodex({ model: 'scripted' });
    hosts = await makeHosts(1);
    const [host] = hosts.hosts as [TestHost];
    // The npm launcher and its platform package, where the launcher looks for it.
    for (const pkg of ['@openai/codex', `@openai/codex-linux-${process.arch}`])
      host.put(join(packageRoot, 'node_modules', pkg), `/srv/cli/node_modules/${pkg}`);
    host.put(codex.codexHome, '/srv/codex-home');
    tunnel = await modelTunnel(host, Number(new URL(codex.model.url).port));
    city = await startSessionCity(
      'remote-codex',
      `
${host.tomlTable()}
[providers.codex-remote]
base = "builtin:codex"
command = "node /srv/cli/node_modules/@openai/codex/bin/codex.js"
env = { HOME = "/srv", CODEX_HOME = "/srv/codex-home", MOCK_KEY = "test-key" }

[[agent]]
name = "coder"
provider = "codex-remote"
hosts = ["${host.name}"]
min_active_sessions = 0
`,
    );
    await waitUntil(`${host.name} up`, async () => {
      return (await city.api.get<{ state: string }>(`/hosts/${host.name}`)).body.state === 'up';
    });
  });

  after(async function () {
    await city?.sup.cleanup();
    tunnel?.kill();
    await hosts?.cleanup();
    await codex?.close();
  });

  it('answers each turn with a codex exec there', async function () {
    const id = await createSession(city.api, { kind: 'agent', name: 'coder' });
    expect(await session(city.api, id)).to.include({ host: hosts.hosts[0].name });
    await deliver(city.api, id, 'hello from here');
    await waitForTurn(city.api, id, 'assistant', 'You said: hello from here', 120_000);
    await deliver(city.api, id, 'and again');
    await waitForTurn(city.api, id, 'assistant', 'You said: and again', 120_000);
  });
});

/** Each bead writes and commits a file of its own, so that the three branches merge without conflict. */
const LOOP_WORK = ['alpha', 'beta', 'gamma'].map((name) => ({
  name,
  file: `notes/${name}.md`,
  title: `Write notes/${name}.md`,
  description: `run: mkdir -p notes && printf '# ${name}\\n' > notes/${name}.md && git add notes/${name}.md && git commit -q -m 'Write notes/${name}.md'`,
}));

// The agents-at-work loop on two hosts: a rig here, a pool of three Claude Code sessions over two hosts, each in its
// own worktree there; three beads slung at once; the person has one session ask before it runs its work and
// approves it with ctl; every bead ends closed, its branch fetched back, recorded and merged into the rig's main here.
describe('the loop on two hosts with Claude Code: three beads, three worktrees there, one approval', function () {
  this.timeout(300_000);
  let hosts: TestHosts;
  let claude: ScriptedClaude;
  let city: SessionCity;
  let repo: string;
  const tunnels: ChildProcess[] = [];
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
  const ctl = async (...args: string[]) => {
    const result = await city.sup.ctl(['--city', 'remote-loop', ...args]);
    expect(result.code, result.stderr).to.equal(0);
    return result.stdout.trim();
  };

  before(async function () {
    const why = hostsAvailable();
    if (why) {
      this.test!.parent!.title += ` (skipped: ${why})`;
      return this.skip();
    }
    ({ claude, hosts } = await claudeOnHosts(2, tunnels));
    repo = join(tempDir('ctl-remote-loop-rig-'), 'web');
    mkdirSync(repo);
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'dev@example.invalid');
    git('config', 'user.name', 'dev');
    writeFileSync(join(repo, 'README.md'), '# web\n');
    git('add', '.');
    git('commit', '-q', '-m', 'first');
    // Its commits there are the agent's: who they are by is the agent's own env, as on any machine.
    const author = {
      GIT_AUTHOR_NAME: 'agent',
      GIT_AUTHOR_EMAIL: 'agent@example.invalid',
      GIT_COMMITTER_NAME: 'agent',
      GIT_COMMITTER_EMAIL: 'agent@example.invalid',
    };
    city = await startSessionCity(
      'remote-loop',
      `
${hosts.hosts.map((h) => h.tomlTable()).join('\n')}
${claudeProviderOnHosts(claude, author)}
args_append = ["--allowedTools", "Bash(ctl bead show:*)"]
`,
    );
    await ctl('rig', 'add', 'web', repo);
    writeFileSync(
      join(city.dir, 'city.toml'),
      readFileSync(join(city.dir, 'city.toml'), 'utf8') +
        `\n[[agent]]\nname = "coder"\ndir = "web"\nprovider = "agent-cli"\nisolation = "worktree"\nmerge = "direct"\n` +
        `min_active_sessions = 3\nmax_active_sessions = 3\nhosts = [${hosts.hosts.map((h) => JSON.stringify(h.name)).join(', ')}]\n`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    for (const tunnel of tunnels) tunnel.kill();
    await hosts?.cleanup();
    await claude?.close();
    if (repo) rmSync(dirname(repo), { recursive: true, force: true });
  });

  it('each session works one bead in its worktree on a host and closes it with ctl; the branches land on main', async function () {
    const { api } = city;
    type Listed = {
      id: string;
      session_name: string;
      host: string;
      state: string;
      activity?: string;
      running: boolean;
      reason?: string;
    };
    const sessions = async () => (await api.get<{ items: Listed[] }>('/sessions?template=web/coder')).body.items;
    let seen: Listed[] = [];
    const running = await waitUntil(
      'three sessions running over the two hosts',
      async () => {
        seen = await sessions();
        const items = seen.filter((s) => s.running && s.state === 'active' && s.activity === 'idle');
        return items.length === 3 ? items : undefined;
      },
      120_000,
    ).catch((err: Error) => {
      const states = seen.map(
        (s) =>
          `${s.session_name}@${s.host} ${s.state}/${s.activity ?? '-'}${s.running ? '' : ' (not running)'}${s.reason ? ` (${s.reason})` : ''}`,
      );
      throw new Error(`${err.message}; last seen: ${states.join(', ') || 'none'}`);
    });
    expect(new Set(running.map((s) => s.host))).to.deep.equal(new Set(hosts.hosts.map((h) => h.name)));
    // The person wants to see what one of them runs before it runs it.
    const watched = running[0].session_name;
    await ctl('session', 'permission-mode', watched, 'default');
    const ids: string[] = [];
    for (const work of LOOP_WORK) {
      const created = await ctl('bead', 'create', work.title, '--description', work.description);
      ids.push(/^Created (\S+):/.exec(created)![1]);
    }
    await ctl('sling', 'web/coder', ...ids, '--no-convoy');
    // It asks before its work command runs there; nothing of that work is done until the person answers.
    const asked = await waitUntil(
      'the watched session to ask to run its work',
      async () => {
        const pending = (await session(api, watched)).pending;
        return pending && /git commit/.test(pending.prompt ?? '') ? pending : undefined;
      },
      120_000,
    );
    expect(asked.kind).to.equal('tool-approval');
    await ctl('session', 'respond', watched, 'allow');
    const closed = await waitUntil(
      'all three beads closed, their branches merged',
      async () => {
        const now = await Promise.all(ids.map((id) => api.bead(id)));
        return now.every((b) => b.status === 'closed' && b.metadata?.['ctl.merged']) ? now : undefined;
      },
      180_000,
    );
    const closers = new Set(closed.map((b) => String(b.metadata!.closed_by)));
    expect(closers.size, 'one bead per session').to.equal(3);
    for (const bead of closed) {
      const work = LOOP_WORK.find((w) => w.title === bead.title)!;
      expect(git('log', '-1', '--format=%s', String(bead.metadata!['ctl.commit']))).to.equal(`Write ${work.file}`);
      expect(readFileSync(join(repo, work.file), 'utf8')).to.equal(`# ${work.name}\n`);
    }
    expect(git('log', '--format=%s', 'main').split('\n').sort()).to.deep.equal(
      ['first', ...LOOP_WORK.map((w) => `Write ${w.file}`)].sort(),
    );
  });
});
