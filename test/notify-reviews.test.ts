import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { registerCity, type CityApi } from './helpers/city-api.js';
import { createSession, providersToml, send, waitForTurn } from './helpers/sessions.js';
import { TestSupervisor, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// `[notify] on = ["review"]` with a real supervisor and city: an agent with `merge = "review"` (the echo example
// agent, running shell commands in its worktree of a real git rig) finishes work; the notice command (a shell
// command appending what it reads to a file) is told of the review waiting, and of one whose branch could not go
// in; a permission, a kind not chosen, is not sent. Issue 33.

interface Notice {
  kind: string;
  city: string;
  title: string;
  text: string;
  url: string;
  event: { type: string; city: string; payload: Record<string, unknown> };
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

describe('notifications of reviews ([notify] on = ["review"])', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let repo: string;
  let written: string;

  const notices = (): Notice[] =>
    existsSync(written)
      ? readFileSync(written, 'utf8')
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l) as Notice)
      : [];

  before(async function () {
    this.timeout(90_000);
    const dir = tempDir('ctl-notify-reviews-');
    written = join(dir, 'notices.jsonl');
    repo = join(dir, 'web');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'user.email', 'dev@example.invalid');
    git(repo, 'config', 'user.name', 'dev');
    writeFileSync(join(repo, 'shared.txt'), 'base\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'first');
    sup = await TestSupervisor.start({
      config: ['[notify]', 'on = ["review"]', `command = ${JSON.stringify(['/bin/sh', '-c', `cat >> '${written}'`])}`],
    });
    const cityDir = sup.cityDir('rev');
    mkdirSync(cityDir, { recursive: true });
    writeFileSync(
      join(cityDir, 'city.toml'),
      `[workspace]\nprovider = "echo"\n${providersToml(join(sup.root, 'agent-state'))}
[[rigs]]
name = "web"
path = "${repo}"

[[agent]]
name = "coder"
dir = "web"
provider = "echo"
isolation = "worktree"
merge = "review"
min_active_sessions = 0
`,
    );
    api = await registerCity(sup, 'rev');
  });

  after(async () => sup?.cleanup());

  /** A session of web/coder commits `file` and closes a bead for it: a pending review. */
  async function finishForReview(file: string, text: string): Promise<string> {
    const id = await createSession(api, { kind: 'agent', name: 'web/coder' });
    const mark = `${Date.now()}-${Math.random()}`;
    await api.post(`/session/${id}/messages`, {
      message: `run printf '${text}\\n' > ${file} && git add . && git commit -q -m 'edit ${file}'; echo done-${mark}`,
    });
    await waitForTurn(api, id, 'assistant', new RegExp(`done-${mark}`));
    const bead = (await api.create({ title: `edit ${file}`, metadata: { 'ctl.assigned_session': id } })).id;
    expect((await api.post(`/bead/${bead}/close`)).status).to.equal(200);
    return bead;
  }

  it('tells of a review waiting: the agent, the bead, its page; and of one that conflicts with its base', async () => {
    const bead = await finishForReview('shared.txt', 'from the agent');
    const requested = await waitUntil('the notice of the review', () =>
      notices().find((n) => n.event.type === 'review.requested' && n.event.payload.bead === bead),
    );
    expect(requested).to.include({
      kind: 'review',
      city: 'rev',
      title: `rev: web/coder asks for a review of ${bead}`,
      url: `${sup.base}/ui/city/rev/reviews/${bead}`,
    });
    expect(requested.text).to.equal(`the branch of ${bead} waits for review`);
    expect(requested.event.payload).to.include({ agent: 'web/coder', base: 'main', state: 'pending' });

    // The base moves on over the same line: approving it cannot go in, and the person is told so.
    writeFileSync(join(repo, 'shared.txt'), 'from main\n');
    git(repo, 'commit', '-q', '-am', 'main edits shared.txt');
    // Approved into the merge queue, which finds the conflict.
    expect((await api.post<{ state: string }>(`/reviews/${bead}/approve`)).body.state).to.equal('approved');
    const conflicted = await waitUntil('the notice of the conflict', () =>
      notices().find((n) => n.event.type === 'review.conflicted' && n.event.payload.bead === bead),
    );
    expect(conflicted).to.include({
      kind: 'review',
      title: `rev: the review of ${bead} conflicts with main`,
      url: `${sup.base}/ui/city/rev/reviews/${bead}`,
    });
    expect(conflicted.text).to.match(/could not go in: it conflicts with main in shared\.txt/);
    expect(conflicted.event.payload.files).to.deep.equal(['shared.txt']);
  });

  it('sends no kind the person did not choose (a permission), nor a comment on a review', async () => {
    const before = notices().length;
    const bead = await finishForReview('other.txt', 'more');
    await waitUntil('the notice of the second review', () =>
      notices().find((n) => n.event.type === 'review.requested' && n.event.payload.bead === bead),
    );
    expect((await api.post(`/reviews/${bead}/comments`, { text: 'fine' })).status).to.equal(201);
    const asking = await createSession(api, { name: 'pretend-claude' });
    await send(api, asking, 'run ls -la');
    await waitUntil('the permission to be pending', async () => {
      const s = await api.get<{ pending?: unknown }>(`/session/${asking}`);
      return s.body.pending ? true : undefined;
    });
    // A notice after them both, to know the notifier has taken every event before it.
    const last = await finishForReview('last.txt', 'last');
    await waitUntil('the notice of the last review', () =>
      notices().find((n) => n.event.type === 'review.requested' && n.event.payload.bead === last),
    );
    const sent = notices().slice(before);
    expect(sent.map((n) => [n.kind, n.event.type, n.event.payload.bead])).to.deep.equal([
      ['review', 'review.requested', bead],
      ['review', 'review.requested', last],
    ]);
  });
});
