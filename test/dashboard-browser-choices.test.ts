import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, notifyingPage, seriousViolations, watchedPage } from './helpers/browser.js';
import type { CityApi } from './helpers/city-api.js';
import { createSession, send, session, sessionEvents, startSessionCity } from './helpers/sessions.js';
import { CSRF, type TestSupervisor } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// What a person decides on the dashboard, in Debian's Chromium against a real supervisor and controller, driven
// by role and accessible name: deleting a comment they wrote (and only theirs: the page asks GET /v0/whoami who
// it is), confirmed in a dialog; killing a session's program, confirmed in the same dialog; and which kinds of
// browser notification they get. Issue 23.

const CITY = 'choices';

async function live(page: Page): Promise<void> {
  await page.getByText('Live', { exact: true }).first().waitFor({ timeout: 15_000 });
}

interface Comment {
  id: number;
  author: string;
}

describe('dashboard in Chromium: deleting one’s comment, notification kinds', function () {
  this.timeout(60_000);
  let sup: TestSupervisor;
  let api: CityApi;
  let browser: Browser;

  before(async function () {
    this.timeout(120_000);
    ({ sup, api } = await startSessionCity(CITY));
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await sup?.cleanup();
  });

  it('offers to delete only one’s own comments, asks first, and shows the API’s refusal', async () => {
    const watched = await watchedPage(browser);
    try {
      const { page } = watched;
      const bead = await api.create({ title: 'a bead people talk about' });
      const comment = async (text: string, headers: Record<string, string> = {}) => {
        const reply = await api.post<Comment>(`/bead/${bead.id}/comments`, { text }, headers);
        expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
        return reply.body;
      };
      // Someone else's word: written with a token, so its author is token:reviewer.
      const token = await fetch(`${sup.base}/v0/tokens`, {
        method: 'POST',
        headers: { ...CSRF, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'reviewer' }),
      });
      const { token: secret } = (await token.json()) as { token: string };
      const theirs = await comment('Theirs, not yours to delete.', { Authorization: `Bearer ${secret}` });
      expect(theirs.author).to.equal('token:reviewer');
      const mine = await comment('Posted by mistake.');

      await page.goto(`${sup.base}/ui/city/${CITY}/bead/${bead.id}`);
      await live(page);
      const comments = page.getByRole('list', { name: 'Comments, oldest first' });
      const deleteMine = page.getByRole('button', { name: `Delete comment #${mine.id}` });
      await deleteMine.waitFor();
      expect(await page.getByRole('button', { name: `Delete comment #${theirs.id}` }).count()).to.equal(0);

      // Cancel leaves it; confirming deletes it, and it goes from the page.
      await deleteMine.click();
      const dialog = page.getByRole('dialog', { name: `Delete comment #${mine.id}?` });
      await dialog.getByText('Posted by mistake.').waitFor();
      // Enter alone never destroys: Cancel has the focus.
      expect(await page.evaluate<string>('document.activeElement.textContent')).to.equal('Cancel');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      expect(await comments.getByText('Posted by mistake.').count()).to.equal(1);
      await deleteMine.click();
      await dialog.getByRole('button', { name: 'Delete comment' }).click();
      await comments.getByText('Posted by mistake.').waitFor({ state: 'detached' });
      await page.getByRole('heading', { name: 'Comments (1)' }).waitFor();
      // Its button went with it: focus is on the comments' heading, not lost on the page.
      await waitUntil('focus on the heading', () =>
        page.evaluate<boolean>("document.activeElement.id === 'comments-h'"),
      );
      const left = await api.get<{ items: Comment[] }>(`/bead/${bead.id}/comments`);
      expect(left.body.items.map((c) => c.id)).to.deep.equal([theirs.id]);

      // One written elsewhere arrives live with its button; deleted elsewhere while the dialog asks, it goes
      // live too, and confirming shows what the API answers.
      const second = await comment('Second thoughts.');
      const deleteSecond = page.getByRole('button', { name: `Delete comment #${second.id}` });
      await deleteSecond.click();
      const asking = page.getByRole('dialog', { name: `Delete comment #${second.id}?` });
      await asking.waitFor();
      expect((await api.del(`/bead/${bead.id}/comments/${second.id}`)).status).to.equal(200);
      await comments.getByText('Second thoughts.').waitFor({ state: 'detached' });
      await asking.getByRole('button', { name: 'Delete comment' }).click();
      await asking
        .getByRole('alert')
        .filter({ hasText: `has no comment ${second.id}` })
        .waitFor();
      expect(await seriousViolations(page), 'axe-core, the dialog open').to.deep.equal([]);
      await page.keyboard.press('Escape');
      await asking.waitFor({ state: 'detached' });
      // The browser logs the refused DELETE itself; nothing else went wrong.
      expect(watched.consoleErrors.filter((e) => !/status of 404/.test(e))).to.deep.equal([]);
    } finally {
      await watched.context.close();
    }
  });

  it('asks in a dialog before killing a session’s program: Escape and Cancel leave it, a refusal shows there', async () => {
    const watched = await watchedPage(browser);
    try {
      const { page } = watched;
      const id = await createSession(api, { name: 'echo' });
      await waitUntil('the echo program to run', async () => (await session(api, id)).running);
      const { pid } = await session(api, id);
      await page.goto(`${sup.base}/ui/city/${CITY}/session/${id}`);
      await live(page);
      const kill = page.getByRole('button', { name: 'Kill', exact: true });
      const dialog = page.getByRole('dialog', { name: 'Kill the program now?' });
      const focused = () => page.evaluate<string>('document.activeElement.textContent');

      // Escape, then Cancel: the dialog goes, focus is back on Kill, and the same program still runs.
      await kill.click();
      await dialog.getByText('Its turn is lost.', { exact: false }).waitFor();
      expect(await focused(), 'Cancel has the focus first').to.equal('Cancel');
      expect(await seriousViolations(page), 'axe-core, the dialog open').to.deep.equal([]);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      // The dialog gives focus back once it has gone: a moment after it leaves the page.
      await waitUntil('focus back on Kill', async () => (await focused()) === 'Kill');
      await kill.click();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      expect(await session(api, id)).to.deep.include({ running: true, pid });
      expect(await sessionEvents(api, 'session.stopped', id)).to.deep.equal([]);

      // Confirmed, the program is killed and it is said; killed again, the API's refusal stays in the dialog.
      await kill.click();
      await dialog.getByRole('button', { name: 'Kill', exact: true }).click();
      await dialog.waitFor({ state: 'detached' });
      // The dialog gives focus back once it has gone: a moment after it leaves the page.
      await waitUntil('focus back on Kill', async () => (await focused()) === 'Kill');
      await page.getByRole('status').getByText('Killed the program').waitFor();
      await waitUntil('the kill', async () => (await sessionEvents(api, 'session.stopped', id)).length > 0);
      expect((await sessionEvents(api, 'session.stopped', id))[0].payload.reason).to.equal('killed');
      expect((await session(api, id)).running).to.equal(false);
      await kill.click();
      await dialog.getByRole('button', { name: 'Kill', exact: true }).click();
      await dialog
        .getByRole('alert')
        .filter({ hasText: `session ${id} is not running` })
        .waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      // The browser logs the refused POST itself; nothing else went wrong.
      expect(watched.consoleErrors.filter((e) => !/status of 409/.test(e))).to.deep.equal([]);
    } finally {
      await watched.context.close();
    }
  });

  it('notifies only the kinds a person leaves on, and remembers them', async () => {
    const { page, context, errors } = await notifyingPage(browser, `${sup.base}/ui/`);
    try {
      await live(page);
      const kinds = page.getByRole('button', { name: 'Notification kinds' });
      const permission = page.getByRole('checkbox', { name: 'A session asks for a permission' });
      await kinds.click();
      for (const name of ['A session asks a question', 'A run fails', 'An agent is quarantined']) {
        expect(await page.getByRole('checkbox', { name }).isChecked(), name).to.equal(true);
      }
      await permission.uncheck();
      expect(await seriousViolations(page), 'axe-core, the kinds shown').to.deep.equal([]);
      await page.getByRole('button', { name: 'Notifications', exact: true }).click();
      await page.getByRole('button', { name: 'Notifications', exact: true, pressed: true }).waitFor();

      // A permission (turned off), then a question (on): the stream brings them in that order, so once the
      // question's notification shows, the permission's would have.
      const claude = await createSession(api, { name: 'pretend-claude' });
      await send(api, claude, 'run ls -la');
      await waitUntil('the permission', async () => (await sessionEvents(api, 'session.pending', claude)).length > 0);
      const echo = await createSession(api, { name: 'echo' });
      await send(api, echo, 'ask Which port?');
      const asked = `${CITY}: ${echo} is waiting for you (a question)`;
      await waitUntil('the question’s notification', () =>
        page.evaluate<boolean>(`window.__notices.some((n) => n.title === ${JSON.stringify(asked)})`),
      );
      expect(await page.evaluate<string[]>('window.__notices.map((n) => n.title)')).to.deep.equal([asked]);

      // Kept in the browser: after a reload the permission is still off, the others on.
      await page.reload();
      await page.getByRole('button', { name: 'Notifications', exact: true, pressed: true }).waitFor();
      await kinds.click();
      expect(await permission.isChecked()).to.equal(false);
      expect(await page.getByRole('checkbox', { name: 'A session asks a question' }).isChecked()).to.equal(true);
      expect(errors).to.deep.equal([]);
    } finally {
      await context.close();
    }
  });
});
