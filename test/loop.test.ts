// The product's main loop, end to end, with a real coding agent: a city with a rig (a real git repository), a pool
// agent with `isolation = "worktree"` and `merge = "direct"`, three beads slung to it with the real `ctl`. Each
// session takes one, reads it (`ctl bead show`), runs what its description says in its own worktree (writes a file,
// commits it) and closes it with `ctl bead close`; the beads end closed with their branches and commits recorded
// and merged into the rig's main; the person has one session ask before it runs anything and approves that one
// tool call with `ctl session respond`. The agent CLI is a parameter: Claude Code (stream-json), Codex (`codex
// exec`, which cannot ask a person: see `asking`) and Codex through its ACP adapter (which can) each run it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { startCityOf, startScriptedClaude } from './helpers/claude-city.js';
import { expectFailure, expectSuccess, runCtl } from './helpers/cli.js';
import { isAlive, processesWithEnvironment } from './helpers/processes.js';
import { startScriptedCodex } from './helpers/scripted-codex.js';
import { session, sessionEvents, type SessionCity, type SessionView } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

/** An agent CLI the loop runs: a provider for it (offline, against its scripted model server) and its modes. */
interface LoopCli {
  /** Its name in the test titles. */
  name: string;
  /**
   * Starts what it needs (its scripted model server, its home) and returns the `[providers.agent-cli]` table
   * (TOML) of a provider that runs it without asking, except that reading a bead never asks, and its HOME (a
   * folder of its own: every process it starts has it in its environment).
   */
  start(): Promise<{ providerToml: string; home: string; close(): Promise<void> }>;
  /**
   * The permission mode in which each tool call waits for the person; none for a CLI that has no way to ask
   * (`codex exec`: docs/agent-clis.md), whose loop is the rest.
   */
  asking?: string;
  /**
   * Its program takes a new permission mode when it next starts (an ACP adapter's flags): the person restarts the
   * watched session's program (`ctl session kill`; the pool starts it again), which loads its conversation.
   */
  modeAtStart?: boolean;
}

const CLAUDE_CODE: LoopCli = {
  name: 'Claude Code',
  async start() {
    // bash as its shell, whatever the machine's SHELL (agents-claude.test.ts runs the same through zsh).
    const claude = await startScriptedClaude({ SHELL: '/bin/bash' });
    return {
      // bypassPermissions: nothing asks unless the person says so; `ctl bead show` never asks, in any mode.
      providerToml: claude.providerToml(
        'agent-cli',
        'default_permission_mode = "bypassPermissions"\nargs_append = ["--allowedTools", "Bash(ctl bead show:*)"]\n',
      ),
      home: claude.home,
      close: () => claude.close(),
    };
  },
  asking: 'default',
};

const CODEX: LoopCli = {
  name: 'Codex',
  async start() {
    const codex = await startScriptedCodex();
    return {
      // Unsandboxed: its sandboxes keep the network (the city's API, which `ctl` calls) and the rig's .git (where
      // a worktree's commits go) out of reach, and `workspace-write` needs bubblewrap, which CI machines lack.
      providerToml: codex.providerToml('agent-cli', 'default_permission_mode = "danger-full-access"\n'),
      home: codex.home,
      close: () => codex.close(),
    };
  },
};

/**
 * Codex again, through its ACP adapter (the `codex-acp` preset, the native Codex agent in one process for as long
 * as the session runs), which can ask a person: its `untrusted` mode asks before every command it does not know to
 * be safe, reading a bead included.
 */
const CODEX_ACP: LoopCli = {
  name: 'Codex over ACP (codex-acp)',
  async start() {
    // Nothing asks unless the person says so; unsandboxed, as CODEX says why.
    const codex = await startScriptedCodex({ acp: true, approvalPolicy: 'never' });
    return { providerToml: codex.providerToml('agent-cli'), home: codex.home, close: () => codex.close() };
  },
  asking: 'untrusted',
  modeAtStart: true,
};

/** Each bead writes a file of its own, so that the three branches merge without conflict. */
const WORK = ['alpha', 'beta', 'gamma'].map((name) => ({
  name,
  file: `notes/${name}.md`,
  title: `Write notes/${name}.md`,
  description: `run: mkdir -p notes && printf '# ${name}\\n' > notes/${name}.md && git add notes/${name}.md && git commit -q -m 'Write notes/${name}.md'`,
}));

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

/** A repository on `main` with one commit and a committer of its own (its worktrees share its config). */
function repository(): string {
  const repo = join(tempDir('ctl-loop-rig-'), 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'agent@example.invalid');
  git(repo, 'config', 'user.name', 'agent');
  writeFileSync(join(repo, 'README.md'), '# web\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  return repo;
}

interface Worktree {
  path: string;
  branch: string;
}

function describeLoop(cli: LoopCli): void {
  const approval = cli.asking ? ', one approval' : '';
  describe(`the loop, end to end, with ${cli.name} (scripted model): three beads, three worktrees${approval}`, function () {
    this.timeout(180_000);
    let agentCli: Awaited<ReturnType<LoopCli['start']>>;
    let city: SessionCity;
    let repo: string;
    const pids: number[] = [];

    const ctl = async (...args: string[]) =>
      expectSuccess(await runCtl([...args, '--city', 'loop'], { env: city.sup.env, timeoutMs: 30_000 }));
    const sessions = async () =>
      (await city.api.get<{ items: (SessionView & { worktree?: Worktree })[] }>('/sessions?template=web/coder')).body
        .items;

    before(async function () {
      this.timeout(11 * 60_000); // a CLI version named by an environment variable is installed on first use
      agentCli = await cli.start();
      repo = repository();
      city = await startCityOf('loop', {
        'city.toml': `[daemon]\npatrol_interval = "500ms"\n${agentCli.providerToml}`,
      });
      // What a person runs: the repository becomes a rig; the pool agent works in it, a worktree per session.
      await ctl('rig', 'add', 'web', repo);
      writeFileSync(
        join(city.dir, 'city.toml'),
        readFileSync(join(city.dir, 'city.toml'), 'utf8') +
          `\n[[agent]]\nname = "coder"\ndir = "web"\nprovider = "agent-cli"\nisolation = "worktree"\n` +
          `merge = "direct"\nmin_active_sessions = 3\nmax_active_sessions = 3\n`,
      );
    });

    after(async function () {
      await city?.sup.cleanup();
      // Whatever the CLI started (its processes, their shells, the `ctl` they ran) has its HOME.
      const left = agentCli ? processesWithEnvironment('HOME', agentCli.home) : [];
      await agentCli?.close();
      if (repo) rmSync(dirname(repo), { recursive: true, force: true });
      for (const pid of pids) expect(isAlive(pid), `${cli.name} ${pid} outlived its city`).to.equal(false);
      expect(left, `processes of ${cli.name} that outlived its city`).to.deep.equal([]);
    });

    it('each session works one bead in its own worktree and closes it with ctl; the branches land on main', async function () {
      const { api } = city;
      const seePids = (items: SessionView[]) => {
        for (const s of items) if (s.pid !== undefined && !pids.includes(s.pid)) pids.push(s.pid);
      };
      const running = await waitUntil(
        'the pool’s three sessions to run, each in its worktree',
        async () => {
          const items = (await sessions()).filter((s) => s.running && s.worktree);
          return items.length === 3 && items;
        },
        90_000,
      );
      seePids(running);
      const trees = new Map(running.map((s) => [s.session_name, s.worktree!]));
      expect(new Set([...trees.values()].map((t) => t.branch)).size, 'a branch each').to.equal(3);

      // The person wants to see what one of them runs before it runs it.
      const watched = running[0].session_name;
      if (cli.asking) {
        const [set] = await ctl('session', 'permission-mode', watched, cli.asking);
        const later = cli.modeAtStart ? ' (takes effect when the program next starts)' : '';
        expect(set).to.equal(`${running[0].id}: permission mode ${cli.asking}${later}`);
        expect((await session(api, watched)).permission_mode).to.equal(cli.asking);
        if (cli.modeAtStart) {
          // Its program ends; the pool (three kept ready) starts it again at once, in the new mode.
          await ctl('session', 'kill', watched);
          const woken = await waitUntil(
            'the watched session to run again',
            async () => {
              const view = await session(api, watched);
              return view.running && view.pid !== running[0].pid && view;
            },
            90_000,
          );
          expect(isAlive(running[0].pid!), 'its former program ended').to.equal(false);
          seePids([woken]);
        }
      }
      expectFailure(
        await runCtl(['session', 'permission-mode', watched, 'yolo', '--city', 'loop'], { env: city.sup.env }),
        'session permission-mode',
        /yolo is not a permission mode of agent-cli \(/,
      );

      // Every session ready and idle before the work goes in: one still starting (a CLI loading its conversation
      // under load) would leave its bead to a quicker session, which then does two.
      await waitUntil(
        'the pool’s three sessions to be ready and idle',
        async () => {
          const views = await Promise.all(running.map((s) => session(api, s.id)));
          return views.every((v) => v.running && v.state === 'active' && v.activity === 'idle');
        },
        90_000,
      );
      const ids: string[] = [];
      for (const work of WORK) {
        const [created] = await ctl('bead', 'create', work.title, '--description', work.description);
        ids.push(/^Created (\S+):/.exec(created)![1]);
      }
      // All three in one sling, so that the tick hands them out together, one to each idle session: slung one by
      // one, a quick session could close its bead before the last sling and take that one too (the tick hands
      // work to the first idle session), leaving the watched session with nothing to ask about.
      await ctl('sling', 'web/coder', ...ids, '--no-convoy');

      // The watched session asks before its work command runs; nothing of it is done until the person answers.
      const asked = cli.asking ? await approveWatched(watched, trees.get(watched)!) : undefined;

      // A bead's branch is recorded (and merged: one at a time into one repository) just after it closes.
      const closed = await waitUntil(
        'all three beads to be closed, their branches merged',
        async () => {
          seePids(await sessions()); // a turn's process, where each turn is one (`codex exec`)
          const now = await Promise.all(ids.map((id) => api.bead(id)));
          const done = (b: (typeof now)[number]) =>
            b.status === 'closed' && ['ctl.merged', 'ctl.merge_error'].some((k) => b.metadata?.[k]);
          return now.every(done) && now;
        },
        120_000,
      );
      const closers = new Set<string>();
      for (const bead of closed) {
        const work = WORK.find((w) => w.title === bead.title)!;
        const closer = String(bead.metadata!.closed_by);
        closers.add(closer);
        const tree = trees.get(closer);
        expect(tree, `${bead.id} closed by a session of the pool (${closer})`).to.not.equal(undefined);
        expect(bead.metadata).to.include({ close_reason: 'done', 'ctl.branch': tree!.branch, 'ctl.base': 'main' });
        // Its last commit is the one that wrote its file, and it is on main now.
        const commit = String(bead.metadata!['ctl.commit']);
        expect(git(repo, 'log', '-1', '--format=%s', commit)).to.equal(`Write ${work.file}`);
        expect(bead.metadata!['ctl.merged'], 'merged into main').to.be.a('string');
        expect(git(repo, 'merge-base', '--is-ancestor', commit, 'main')).to.equal('');
        expect(readFileSync(join(repo, work.file), 'utf8'), 'the rig’s checkout moved with main').to.equal(
          `# ${work.name}\n`,
        );
      }
      expect(closers.size, 'one bead per session').to.equal(3);
      expect(git(repo, 'log', '--format=%s', 'main').split('\n').sort()).to.deep.equal(
        ['first', ...WORK.map((w) => `Write ${w.file}`)].sort(),
      );
      const cleared = await sessionEvents(api, 'session.pending_cleared', running[0].id);
      expect(cleared.map((e) => e.payload)).to.deep.equal(
        (asked?.allowed ?? []).map((request_id) => ({ session_id: running[0].id, request_id, action: 'allow' })),
      );
    });

    /**
     * Waits for the watched session's question to run its work command, checks nothing of its work is done yet,
     * and allows it; a question to read its bead first (where reading asks too) is allowed on the way.
     */
    async function approveWatched(watched: string, tree: Worktree) {
      const allowed: string[] = [];
      let asked: NonNullable<SessionView['pending']>;
      for (;;) {
        try {
          asked = await waitUntil(
            'the watched session to ask',
            async () => {
              const pending = (await session(city.api, watched)).pending;
              return pending && !allowed.includes(pending.request_id) && pending;
            },
            90_000,
          );
        } catch (err) {
          // What the city did instead, for a failure in CI: who holds which bead, and each session's state.
          const beads = (await city.api.listAll({ all: true })).map(
            (b) => `${b.id} ${b.issue_type} ${b.status} ${b.assignee ?? '-'}`,
          );
          const states = (await sessions()).map((v) => `${v.session_name} ${v.state} ${v.activity ?? '-'}`);
          throw new Error(`${(err as Error).message}; beads: ${beads.join(', ')}; sessions: ${states.join(', ')}`, {
            cause: err,
          });
        }
        if (!/ctl bead show/.test(asked.prompt ?? '') || /git commit/.test(asked.prompt ?? '')) break;
        allowed.push(asked.request_id);
        await ctl('session', 'respond', watched, 'allow');
      }
      expect(asked.kind).to.equal('tool-approval');
      expect(asked.prompt, 'it asks to run the work command').to.include('git commit');
      const held = (await city.api.list({ assignee: watched, status: 'in_progress', limit: 10 })).items;
      expect(held, 'the bead the watched session took').to.have.length(1);
      expect(git(repo, 'log', '--format=%s', tree.branch)).to.equal('first');
      const pendingList = expectSuccess(await runCtl(['session', 'pending', '--city', 'loop'], { env: city.sup.env }));
      expect(pendingList.join('\n')).to.include(asked.request_id);
      allowed.push(asked.request_id);
      await ctl('session', 'respond', watched, 'allow');
      return { ...asked, allowed };
    }
  });
}

describeLoop(CLAUDE_CODE);
describeLoop(CODEX);
describeLoop(CODEX_ACP);
