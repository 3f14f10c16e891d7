import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
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
    claude = await startScriptedClaude({ SHELL: '/bin/bash' });
    hosts = await makeHosts(2, { slots: 2 });
    const port = Number(new URL(claude.model.url).port);
    for (const host of hosts.hosts) {
      host.put(realpathSync(claude.cli.bin), CLAUDE_ON_HOST);
      await host.exec(`mkdir -p ${HOME_ON_HOST}`);
      tunnels.push(await modelTunnel(host, port));
    }
    const env = { ...claude.env, HOME: HOME_ON_HOST };
    const envToml = Object.entries(env)
      .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
      .join(', ');
    city = await startSessionCity(
      'remote-claude',
      `
${hosts.hosts.map((h) => h.tomlTable()).join('\n')}
[providers.agent-cli]
base = "builtin:claude"
command = "${CLAUDE_ON_HOST}"
env = { ${envToml} }
default_permission_mode = "bypassPermissions"

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
    expect((await session(city.api, id))).to.include({ host: hosts.hosts[0].name });
    await deliver(city.api, id, 'hello from here');
    await waitForTurn(city.api, id, 'assistant', 'You said: hello from here', 120_000);
    await deliver(city.api, id, 'and again');
    await waitForTurn(city.api, id, 'assistant', 'You said: and again', 120_000);
  });
});
