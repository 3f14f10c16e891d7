import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, notifyingPage, seriousViolations, watchedPage, type WatchedPage } from './helpers/browser.js';
import type { Bead } from './helpers/city-api.js';
import { createSession, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// Reviewing agents' work on the dashboard (issue 33, section 4), in Debian's Chromium against a real supervisor and
// controller over a real git rig, by role and accessible name: the Reviews view (what waits first), a review's
// page (its diff unified and side by side, coloured, file to file by keyboard, a comment on a line, request
// changes, approve), the overlaps of two sessions' worktrees on the review and session pages, and a browser
// notification of kind `review`. The sessions' program is the echo example agent, whose `run` runs a shell
// command in its worktree.

const CITY = 'reviewing';

interface Review {
  bead: string;
  state: string;
  comments: { text: string; path?: string; line?: number }[];
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

function repository(): string {
  const repo = join(tempDir('ctl-review-ui-rig-'), 'web');
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'dev@example.invalid');
  git(repo, 'config', 'user.name', 'dev');
  writeFileSync(join(repo, 'shared.txt'), 'base\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  return repo;
}

const AGENTS = (repo: string) => `
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
`;

async function live(page: Page): Promise<void> {
  await page.getByText('Live', { exact: true }).first().waitFor({ timeout: 15_000 });
}

describe('dashboard in Chromium: reviewing what agents did', function () {
  this.timeout(90_000);
  let city: SessionCity;
  let browser: Browser;
  let watched: WatchedPage;
  let repo: string;
  /** Two sessions' finished work, both pending; both changed shared.txt (an overlap). */
  let first: { session: string; bead: Bead };
  let second: { session: string; bead: Bead };

  const run = async (id: string, command: string): Promise<void> => {
    const mark = `${Date.now()}-${Math.random()}`;
    await city.api.post(`/session/${id}/messages`, { message: `run ${command}; echo done-${mark}` });
    await waitForTurn(city.api, id, 'assistant', new RegExp(`done-${mark}`));
  };
  const review = async (bead: string): Promise<Review> => (await city.api.get<Review>(`/reviews/${bead}`)).body;
  const pendingReview = async (session: string, title: string, files: Record<string, string>) => {
    const writes = Object.entries(files).map(([file, text]) => `printf '${text}' > ${file}`);
    await run(session, `${writes.join(' && ')} && git add -A && git commit -q -m '${title}'`);
    const bead = await city.api.create({ title, metadata: { 'ctl.assigned_session': session } });
    expect((await city.api.post(`/bead/${bead.id}/close`)).status).to.equal(200);
    await waitUntil(`${bead.id} pending`, async () => (await review(bead.id)).state === 'pending');
    return bead;
  };

  before(async function () {
    this.timeout(150_000);
    repo = repository();
    city = await startSessionCity(CITY, AGENTS(repo));
    browser = await launchChromium();
    const a = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    const b = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    first = {
      session: a,
      bead: await pendingReview(a, 'add the feature', {
        'feature.ts': 'export const one = 1;\\nexport function two() {\\n  return "two";\\n}\\n',
        'notes.md': '# Notes\\n\\nWritten by the agent.\\n',
        'shared.txt': 'from the first\\n',
      }),
    };
    second = {
      session: b,
      bead: await pendingReview(b, 'a small fix', { 'fix.txt': 'fixed\\n', 'shared.txt': 'from the second\\n' }),
    };
  });

  beforeEach(async () => {
    watched = await watchedPage(browser);
  });
  afterEach(async () => {
    await watched?.context.close();
  });
  after(async () => {
    await browser?.close();
    await city?.sup.cleanup();
  });

  it('lists what waits first, opens a review, shows its diff both ways and moves file to file by keyboard', async () => {
    const { page } = watched;
    await page.goto(`${city.sup.base}/ui/city/${CITY}`);
    await live(page);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Reviews' }).click();
    await page.waitForURL(`${city.sup.base}/ui/city/${CITY}/reviews`);
    await page.getByRole('heading', { name: `Reviews of ${CITY}` }).waitFor();
    await live(page);
    const waiting = page.getByRole('region', { name: /^Waiting for you/ });
    await waiting.getByRole('link', { name: first.bead.id }).waitFor();
    // Oldest first: the first finished waits longest. Each row: bead and title, agent, rig, round, files.
    const rows = waiting.locator('tbody tr');
    expect(await rows.count()).to.equal(2);
    const top = rows.first();
    await top.getByText('add the feature').waitFor();
    expect(await top.getByRole('rowheader').textContent()).to.equal(`${first.bead.id}add the feature`);
    expect((await top.locator('td').allTextContents()).slice(0, 5)).to.deep.equal([
      'pending',
      'web/coder',
      'web',
      '1',
      '3 +8 −1',
    ]);
    expect(await top.locator('td time').count()).to.equal(1);
    expect(await seriousViolations(page), 'axe-core, the Reviews view').to.deep.equal([]);

    await top.getByRole('link', { name: first.bead.id }).click();
    await page.getByRole('heading', { name: `Review of ${first.bead.id}` }).waitFor();
    await live(page);
    await page.getByRole('link', { name: 'add the feature' }).waitFor();
    const files = page.getByRole('navigation', { name: 'Files in this diff' }).getByRole('link');
    expect(await files.allTextContents()).to.deep.equal(['feature.ts', 'notes.md', 'shared.txt']);
    // Coloured in the page (nothing fetched: `offMachine` below), a TypeScript keyword as one.
    const feature = page.getByRole('region', { name: 'feature.ts' });
    await feature.locator('.hljs-keyword').first().waitFor();
    expect(await feature.locator('.hljs-keyword').first().textContent()).to.equal('export');
    expect(await feature.locator('table.diff-unified').count()).to.equal(1);

    // Side by side, remembered by the browser: a reload still shows it.
    await page.getByRole('button', { name: 'Side by side' }).click();
    await page.getByRole('button', { name: 'Side by side', pressed: true }).waitFor();
    await feature.locator('table.diff-split').waitFor();
    await page.reload();
    await live(page);
    await page.getByRole('region', { name: 'feature.ts' }).locator('table.diff-split').waitFor();
    expect(await page.getByRole('button', { name: 'Unified', pressed: false }).count()).to.equal(1);
    await page.getByRole('button', { name: 'Unified' }).click();
    await page.getByRole('region', { name: 'feature.ts' }).locator('table.diff-unified').waitFor();

    // j: the next file, again the one after; k back. Each file's heading takes focus, visibly.
    const focused = () => page.evaluate<string>('document.activeElement?.textContent ?? ""');
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('j');
    await waitUntil('feature.ts focused', async () => (await focused()) === 'feature.ts');
    await page.keyboard.press('j');
    await waitUntil('notes.md focused', async () => (await focused()) === 'notes.md');
    expect(await page.evaluate<boolean>("document.activeElement.matches(':focus-visible')")).to.equal(true);
    await page.keyboard.press('n');
    await waitUntil('shared.txt focused', async () => (await focused()) === 'shared.txt');
    await page.keyboard.press('k');
    await waitUntil('notes.md again', async () => (await focused()) === 'notes.md');
    expect(watched.consoleErrors).to.deep.equal([]);
    expect(watched.offMachine).to.deep.equal([]);
  });

  it('comments on a line inline, by click and by keyboard, and shows what else changed the same files', async () => {
    const { page } = watched;
    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews/${first.bead.id}`);
    await live(page);
    const feature = page.getByRole('region', { name: 'feature.ts' });
    await feature.getByRole('button', { name: 'Comment on feature.ts line 2' }).click();
    const box = page.getByRole('textbox', { name: 'Comment on feature.ts line 2' });
    await box.fill('Call it deux');
    await page.getByRole('button', { name: 'Comment', exact: true }).first().click();
    // Under its line, at once; and the API has it on that file and line.
    const inline = feature.locator('tr.line-comments').filter({ hasText: 'Call it deux' });
    await inline.waitFor();
    expect(await inline.locator('xpath=preceding-sibling::tr[1]').getByRole('button').textContent()).to.equal('2');
    await box.waitFor({ state: 'detached' });
    const stored = await waitUntil('the comment stored', async () =>
      (await review(first.bead.id)).comments.find((c) => c.text === 'Call it deux'),
    );
    expect(stored).to.include({ path: 'feature.ts', line: 2 });

    // By keyboard: a file's first line number is a Tab stop, ↓ the next, c opens its form, Escape closes it.
    const line1 = feature.getByRole('button', { name: 'Comment on feature.ts line 1' });
    await line1.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate<string>('document.activeElement.getAttribute("aria-label")')).to.equal(
      'Comment on feature.ts line 3',
    );
    await page.keyboard.press('c');
    const third = page.getByRole('textbox', { name: 'Comment on feature.ts line 3' });
    await third.waitFor();
    // The form takes focus once drawn (asked from outside the page: its CSP refuses waitForFunction's eval).
    await waitUntil('the comment form to take focus', async () =>
      (await page.evaluate<string>('document.activeElement.tagName')) === 'TEXTAREA' ? true : undefined,
    );
    await page.keyboard.type('Keyboard only');
    await page.keyboard.press('Control+Enter');
    await feature.locator('tr.line-comments').filter({ hasText: 'Keyboard only' }).waitFor();
    await waitUntil('the keyboard comment stored', async () =>
      (await review(first.bead.id)).comments.some((c) => c.text === 'Keyboard only' && c.line === 3),
    );

    // Both sessions changed shared.txt: each side's pages say so, linking to the other.
    const overlaps = page.getByRole('region', { name: 'Overlaps in web' });
    const other = await city.api.get<{ session_name: string }>(`/session/${second.session}`);
    await overlaps.getByRole('link', { name: new RegExp(other.body.session_name) }).waitFor();
    expect(await overlaps.getByRole('listitem').first().textContent()).to.match(/^Also changed by .+: shared\.txt$/);
    expect(await seriousViolations(page), 'axe-core, the review page').to.deep.equal([]);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await seriousViolations(page), 'axe-core, the review page, dark').to.deep.equal([]);
    await page.emulateMedia({ colorScheme: 'light' });

    await page.goto(`${city.sup.base}/ui/city/${CITY}/session/${second.session}`);
    await live(page);
    const mine = await city.api.get<{ session_name: string }>(`/session/${first.session}`);
    await page
      .getByRole('region', { name: 'Overlaps in web' })
      .getByRole('link', { name: new RegExp(mine.body.session_name) })
      .waitFor();
    expect(watched.consoleErrors).to.deep.equal([]);
  });

  it('requests changes (the API’s refusal of a blank text shown in the dialog) and approves another', async () => {
    const { page } = watched;
    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews/${first.bead.id}`);
    await live(page);
    await page.getByRole('button', { name: 'Request changes' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send it back with changes to make?' });
    await dialog.getByRole('button', { name: 'Request changes' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('alert').textContent()).to.equal('invalid: text is empty');
    await dialog.getByRole('textbox', { name: 'What to change' }).fill('See the comments, and add a test');
    await dialog.getByRole('button', { name: 'Request changes' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator('.badge-review-changes_requested').filter({ hasText: 'changes requested' }).waitFor();
    expect((await review(first.bead.id)).state).to.equal('changes_requested');
    // Nothing more to decide but abandoning.
    expect(await page.getByRole('button', { name: 'Approve' }).count()).to.equal(0);
    expect(await page.getByRole('button', { name: 'Request changes' }).count()).to.equal(0);
    await page.getByRole('button', { name: 'Abandon' }).waitFor();
    await waitForTurn(city.api, first.session, 'assistant', /See the comments, and add a test/);

    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews/${second.bead.id}`);
    await live(page);
    await page.getByRole('button', { name: 'Approve' }).click();
    const approve = page.getByRole('dialog', { name: `Approve ${second.bead.id} and merge it?` });
    await approve.getByRole('button', { name: 'Approve' }).click();
    await approve.waitFor({ state: 'detached' });
    // Merged at once, or queued behind others of the rig: either way no longer waiting on a person.
    await page.locator('.badge-review-merged, .badge-review-approved').waitFor();
    expect(['merged', 'approved']).to.include((await review(second.bead.id)).state);
    expect(await page.getByRole('button', { name: 'Approve' }).count()).to.equal(0);
    expect(watched.consoleErrors.filter((e) => !/status of 422/.test(e))).to.deep.equal([]);

    // The Reviews view follows: the approved one left what waits.
    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews`);
    await live(page);
    await page
      .getByRole('region', { name: /^Sent back/ })
      .getByRole('link', { name: first.bead.id })
      .waitFor();
    expect(
      await page
        .getByRole('region', { name: /^Waiting for you/ })
        .getByRole('link', { name: second.bead.id })
        .count(),
    ).to.equal(0);
  });

  it('shows a second round since the last one, or whole', async () => {
    const { page } = watched;
    // Sent back above: the agent mends feature.ts and closes the bead again.
    await run(
      first.session,
      `printf 'export const one = 1;\\nexport const deux = 2;\\n' > feature.ts && git commit -q -am 'deux'`,
    );
    expect((await city.api.post(`/bead/${first.bead.id}/close`)).status).to.equal(200);
    await waitUntil('round 2 pending', async () => (await review(first.bead.id)).state === 'pending');
    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews/${first.bead.id}`);
    await live(page);
    await page.getByRole('button', { name: 'Since last round', pressed: true }).waitFor();
    const files = page.getByRole('navigation', { name: 'Files in this diff' }).getByRole('link');
    expect(await files.allTextContents()).to.deep.equal(['feature.ts']);
    expect(await page.getByRole('region', { name: 'feature.ts' }).locator('tr.line-del').count()).to.be.greaterThan(0);
    await page.getByRole('button', { name: 'Whole' }).click();
    await page.getByRole('button', { name: 'Whole', pressed: true }).waitFor();
    await waitUntil('the whole diff', async () => (await files.count()) === 3);
    // The comments of round 1 are kept: the one on line 2 is still under it.
    await page
      .getByRole('region', { name: 'feature.ts' })
      .locator('tr.line-comments')
      .filter({ hasText: 'Call it deux' })
      .waitFor();
    expect(watched.consoleErrors).to.deep.equal([]);
  });

  it('notifies a review requested (kind review), opening its page, and lists it live', async () => {
    const { page, context, errors } = await notifyingPage(browser, `${city.sup.base}/ui/city/${CITY}/reviews`);
    try {
      await live(page);
      await page.getByRole('button', { name: 'Notification kinds' }).click();
      expect(await page.getByRole('checkbox', { name: /^A review waits for you/ }).isChecked()).to.equal(true);
      await page.getByRole('button', { name: 'Notifications', exact: true }).click();
      await page.getByRole('button', { name: 'Notifications', exact: true, pressed: true }).waitFor();
      const c = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
      const bead = await pendingReview(c, 'a third piece', { 'third.txt': 'three\\n' });
      const title = `${CITY}: web/coder asks for a review of ${bead.id}`;
      await waitUntil('the review’s notification', () =>
        page.evaluate<boolean>(`window.__notices.some((n) => n.title === ${JSON.stringify(title)})`),
      );
      // Live: the view shows it without a reload.
      await page
        .getByRole('region', { name: /^Waiting for you/ })
        .getByRole('link', { name: bead.id })
        .waitFor();
      expect(errors).to.deep.equal([]);
    } finally {
      await context.close();
    }
  });

  it('opens a 400-file review quickly: the files past the budget folded, each opening on demand', async () => {
    const { page } = watched;
    const d = await createSession(city.api, { kind: 'agent', name: 'web/coder' });
    await run(
      d,
      `mkdir -p many && for i in $(seq 1 400); do seq 1 30 | sed "s/^/export const v = /" > many/f$i.ts; done && git add -A && git commit -q -m 'many files'`,
    );
    const bead = await city.api.create({ title: 'a large change', metadata: { 'ctl.assigned_session': d } });
    expect((await city.api.post(`/bead/${bead.id}/close`)).status).to.equal(200);
    await waitUntil(`${bead.id} pending`, async () => (await review(bead.id)).state === 'pending');

    const asked = Date.now();
    await review(bead.id);
    const served = Date.now() - asked;
    const started = Date.now();
    await page.goto(`${city.sup.base}/ui/city/${CITY}/reviews/${bead.id}`);
    // Found by CSS, not by role: a role query walks the accessibility tree of 400 files, which would be timed too.
    await page.locator('#file-0 table.diff').waitFor();
    const opened = Date.now() - started;
    const sections = page.locator('section.diff-file');
    expect(await sections.count()).to.equal(400);
    const drawn = await page.locator('table.diff tr.line').count();
    const folded = await page.getByRole('button', { name: /^Show 31 lines of / }).count();
    console.log(
      `      a 400-file review: served in ${served} ms, its first file drawn ${opened} ms after opening; ${drawn} lines drawn, ${folded} files folded`,
    );
    // Drawn again whole (no request): the page's own cost, timed in the page from the click to the next frame.
    const redrawn = await page.evaluate<number>(`new Promise((resolve) => {
      const button = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Side by side');
      const t0 = performance.now();
      button.click();
      const check = () =>
        document.querySelector('#file-0 table.diff-split')
          ? requestAnimationFrame(() => resolve(Math.round(performance.now() - t0)))
          : requestAnimationFrame(check);
      check();
    })`);
    console.log(`      side by side drawn in ${redrawn} ms`);
    await page.getByRole('button', { name: 'Unified' }).click();
    expect(folded).to.be.greaterThan(340);
    expect(drawn).to.be.at.most(1500);
    const last = page.getByRole('region', { name: 'many/f400.ts' });
    await last.getByRole('button', { name: 'Show 31 lines of many/f400.ts' }).click();
    await last.locator('table.diff .hljs-keyword').first().waitFor();
    expect(await last.getByRole('button', { name: 'Fold' }).getAttribute('aria-expanded')).to.equal('true');
    expect(watched.consoleErrors).to.deep.equal([]);
  });
});
