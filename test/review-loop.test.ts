// The loop with a person in it: the agents-at-work loop of loop.test.ts with `merge = "review"` and a real coding
// agent (Claude Code against the scripted model). Three beads are slung to a pool of three; each session commits its
// work in its own worktree and closes its bead, which waits for review instead of merging. Two of the branches
// change the same file, and the overlap is reported before either merges. The person approves one (merged); sends
// one back with a comment on a line, which reaches the agent — the model's next request holds the comment and its
// file:line — and whose agent commits again and closes, to be approved; and approves the third, whose check (the
// city's `[review] check`) fails once, sending its output to the agent, which mends it and is approved again. What
// landed is read back from git.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { startCityOf, startScriptedClaude, type ScriptedClaude } from './helpers/claude-city.js';
import { expectSuccess, runCtl } from './helpers/cli.js';
import { processesWithEnvironment } from './helpers/processes.js';
import { git, rigRepository } from './helpers/rigs.js';
import { session, type SessionCity, type SessionView } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

interface Review {
  bead: string;
  state: string;
  session: string;
  branch: string;
  commit: string;
  round: number;
  merged?: string;
  files: { path: string }[];
  diff?: { path: string; diff: string }[];
}

/** The shared file two beads edit, at its two ends, so that both branches touch it and still merge cleanly. */
const INDEX = ['# notes', '', 'first: none', '', 'second: none', ''].join('\n');

const WORK = {
  alpha: {
    title: 'Write alpha.md',
    run: `printf '# alpha\\n' > alpha.md && sed -i 's/^first: none/first: alpha/' index.md && git add . && git commit -q -m 'Write alpha.md'`,
  },
  beta: {
    title: 'Write beta.md',
    run: `printf '# beta\\n' > beta.md && sed -i 's/^second: none/second: beta/' index.md && git add . && git commit -q -m 'Write beta.md'`,
  },
  // The check refuses a TODO; its output says how to mend it, as a test runner's output would name the failure.
  gamma: {
    title: 'Write gamma.md',
    run: `printf '# gamma TODO\\n' > gamma.md && git add . && git commit -q -m 'Write gamma.md'`,
  },
};

const CHECK = `if grep -q TODO *.md; then grep -Hn TODO *.md; echo "run: sed -i s/TODO/done/ gamma.md && git commit -q -am 'Resolve the TODO'"; exit 1; fi`;

describe('the loop with review (merge = "review"), Claude Code (scripted model): sent back, checked, merged', function () {
  this.timeout(240_000);
  let claude: ScriptedClaude;
  let city: SessionCity;
  let repo: string;

  const ctl = async (...args: string[]) =>
    expectSuccess(await runCtl([...args, '--city', 'rloop'], { env: city.sup.env, timeoutMs: 60_000 }));
  const review = async (bead: string): Promise<Review> => (await city.api.get<Review>(`/reviews/${bead}`)).body;
  /** The end of what the model was last sent (a tool's result, most often): what the agent saw, for a failure. */
  const lastSent = () =>
    claude.model.requests
      .slice(-3)
      .map((r) => {
        const messages = (r.body.messages as { content: unknown }[] | undefined) ?? [];
        return JSON.stringify(messages.at(-1)?.content ?? '').slice(-600);
      })
      .join(' | ');
  const reviewIn = async (bead: string, state: string, round?: number) => {
    let seen: Review | undefined;
    try {
      return await waitUntil(
        `the review of ${bead} to be ${state}${round ? ` (round ${round})` : ''}`,
        async () => {
          const r = await city.api.get<Review>(`/reviews/${bead}`);
          seen = r.body;
          return (
            r.status === 200 && r.body.state === state && (round === undefined || r.body.round === round) && r.body
          );
        },
        120_000,
      );
    } catch (err) {
      const held = await city.api.bead(bead);
      throw new Error(
        `${(err as Error).message}; it is ${seen?.state} (round ${seen?.round}), its bead ${held.status} ` +
          `(${held.assignee ?? '-'}); the model was last sent: ${lastSent()}`,
        { cause: err },
      );
    }
  };

  before(async function () {
    this.timeout(11 * 60_000); // a CLI version named by an environment variable is installed on first use
    claude = await startScriptedClaude({ SHELL: '/bin/bash' });
    repo = rigRepository({ 'index.md': INDEX }, { prefix: 'ctl-review-loop-rig-' });
    city = await startCityOf('rloop', {
      'city.toml':
        `[daemon]\npatrol_interval = "500ms"\n` +
        claude.providerToml(
          'agent-cli',
          'default_permission_mode = "bypassPermissions"\nargs_append = ["--allowedTools", "Bash(ctl bead show:*)"]\n',
        ) +
        `\n[review]\ncheck = ${JSON.stringify(CHECK)}\ncheck_timeout = "60s"\n`,
    });
    await ctl('rig', 'add', 'web', repo);
    writeFileSync(
      join(city.dir, 'city.toml'),
      readFileSync(join(city.dir, 'city.toml'), 'utf8') +
        `\n[[agent]]\nname = "coder"\ndir = "web"\nprovider = "agent-cli"\nisolation = "worktree"\n` +
        `merge = "review"\nmin_active_sessions = 3\nmax_active_sessions = 3\n`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
    const left = claude ? processesWithEnvironment('HOME', claude.home) : [];
    await claude?.close();
    if (repo) rmSync(dirname(repo), { recursive: true, force: true });
    expect(left, 'processes of Claude Code that outlived its city').to.deep.equal([]);
  });

  it('three beads reviewed: one merged, one sent back with a line comment, one failing its check once', async function () {
    const { api } = city;
    const ready = await waitUntil(
      'the pool’s three sessions to be ready and idle, each in its worktree',
      async () => {
        const items = (
          await api.get<{ items: (SessionView & { worktree?: unknown })[] }>('/sessions?template=web/coder')
        ).body.items;
        const views = await Promise.all(items.map((s) => session(api, s.id)));
        const idle = views.filter((v) => v.running && v.state === 'active' && v.activity === 'idle');
        return idle.length === 3 && items.every((s) => s.worktree) && items;
      },
      120_000,
    );
    expect(ready).to.have.length(3);

    const ids: Record<keyof typeof WORK, string> = { alpha: '', beta: '', gamma: '' };
    for (const [name, work] of Object.entries(WORK) as [keyof typeof WORK, (typeof WORK)['alpha']][]) {
      const [created] = await ctl('bead', 'create', work.title, '--description', `run: ${work.run}`);
      ids[name] = /^Created (\S+):/.exec(created)![1];
    }
    const main = git(repo, 'rev-parse', 'main');
    await ctl('sling', 'web/coder', ids.alpha, ids.beta, ids.gamma, '--no-convoy');

    // All three wait for review: nothing has moved in git.
    for (const id of Object.values(ids)) await reviewIn(id, 'pending', 1);
    expect(git(repo, 'rev-parse', 'main')).to.equal(main);

    // alpha and beta both changed index.md: seen before either merges.
    const overlap = await waitUntil('an overlap of alpha’s and beta’s work', async () => {
      const read = await api.get<{ items: { parties: { kind: string; bead?: string }[]; files: string[] }[] }>(
        '/rigs/web/overlaps',
      );
      return read.body.items.find((pair) => {
        const beads = pair.parties.map((p) => p.bead);
        return beads.includes(ids.alpha) && beads.includes(ids.beta);
      });
    });
    expect(overlap.files).to.deep.equal(['index.md']);
    const events = await api.eventsAbout('rig.overlap', 'web');
    expect(
      events.some((e) => JSON.stringify(e.payload).includes('index.md')),
      'a rig.overlap event names the file',
    ).to.equal(true);

    // alpha: approved, checked, merged.
    await ctl('review', 'approve', ids.alpha);
    const alpha = await reviewIn(ids.alpha, 'merged');
    expect(git(repo, 'rev-parse', 'main')).to.equal(alpha.merged);

    // beta: a comment on a line, then sent back; the agent's next model request holds both, file:line included.
    const beta = await review(ids.beta);
    await ctl('review', 'comment', ids.beta, '--file', 'beta.md', '--line', '1', 'Say beta twice');
    const seen = claude.model.requests.length;
    await ctl(
      'review',
      'request-changes',
      ids.beta,
      `run: printf '# beta beta\\n' > beta.md && git commit -q -am 'Say beta twice'`,
    );
    const asked = await waitUntil('the changes to reach the model', () =>
      claude.model.requests
        .slice(seen)
        .find((r) => r.userText?.startsWith(`Changes were requested on bead ${ids.beta}`)),
    );
    expect(asked.userText).to.contain('beta.md:1: Say beta twice');
    const beta2 = await reviewIn(ids.beta, 'pending', 2);
    expect(beta2.session, 'the same session, its context warm').to.equal(beta.session);
    expect(beta2.branch, 'the same branch').to.equal(beta.branch);
    await ctl('review', 'approve', ids.beta);
    await reviewIn(ids.beta, 'merged');
    expect(readFileSync(join(repo, 'beta.md'), 'utf8')).to.equal('# beta beta\n');

    // gamma: approved, its check fails once; the output reaches the agent, which mends it; approved again.
    const gammaSeen = claude.model.requests.length;
    await runCtl(['review', 'approve', ids.gamma, '--city', 'rloop'], { env: city.sup.env, timeoutMs: 60_000 });
    await reviewIn(ids.gamma, 'changes_requested');
    const told = await waitUntil('the check’s output to reach the model', () =>
      claude.model.requests.slice(gammaSeen).find((r) => r.userText?.includes('gamma.md:1:# gamma TODO')),
    );
    expect(told.userText).to.contain(ids.gamma);
    await reviewIn(ids.gamma, 'pending', 2);
    await ctl('review', 'approve', ids.gamma);
    await reviewIn(ids.gamma, 'merged');

    // What landed: every file, the shared one with both edits, each branch rebased on the ones before.
    expect(readFileSync(join(repo, 'index.md'), 'utf8')).to.equal(
      INDEX.replace('first: none', 'first: alpha').replace('second: none', 'second: beta'),
    );
    expect(readFileSync(join(repo, 'gamma.md'), 'utf8')).to.equal('# gamma done\n');
    expect(git(repo, 'log', '--format=%s', 'main').split('\n')).to.have.members([
      'first',
      'Write alpha.md',
      'Write beta.md',
      'Say beta twice',
      'Write gamma.md',
      'Resolve the TODO',
    ]);
    expect(git(repo, 'rev-list', '--merges', 'main'), 'no merge commits: rebased and fast-forwarded').to.equal('');
  });
});
