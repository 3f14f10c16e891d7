import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ctlEntryPath, packageRoot } from '../shared/paths.js';
import { expectFailure, runCtl } from './helpers/cli.js';
import { processesMentioning } from './helpers/processes.js';
import { createSession, send, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { tempDir } from './helpers/supervisor.js';
import { hasTmux } from './helpers/tmux-installed.js';
import { TmuxPane } from './helpers/tmux-pane.js';
import { waitUntil } from './helpers/wait.js';

// `ctl top` on a real terminal (a detached tmux pane of a fixed size, read as a person sees it) against a real
// supervisor and city: the stream-json example agent asks for a permission, the keys answer it, and the program
// gets the answer; a tmux session is attached to and left; the page opens in "the browser"; the supervisor goes
// away and comes back; q leaves the terminal as it was and no process behind. Issue 23.

const TUI_AGENT = join(packageRoot, 'examples', 'agents', 'tui-agent.mjs');

describe('ctl top', function () {
  this.timeout(60_000);
  let city: SessionCity;
  let pane: TmuxPane | undefined;
  let claude: string;
  let tui: string;
  let opened: string;
  /** What top's command line, and only it, mentions. */
  let marker: string;

  before(async function () {
    this.timeout(90_000);
    // .ci/run installs tmux; the terminal is tmux's.
    if (!hasTmux()) this.skip();
    city = await startSessionCity(
      'town',
      `
[providers.tui]
command = "${process.execPath} ${TUI_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"

[[agent]]
name = "helper"
provider = "echo"
min_active_sessions = 0
`,
    );
    claude = await createSession(city.api, { name: 'pretend-claude' });
    tui = await createSession(city.api, { name: 'tui' });
    const dir = tempDir('ctl-top-browser-');
    opened = join(dir, 'opened');
    const browser = join(dir, 'browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
    chmodSync(browser, 0o755);
    marker = `--api=${city.sup.base}`;
    pane = TmuxPane.start([process.execPath, ctlEntryPath(), 'top', marker], {
      columns: 100,
      rows: 30,
      cwd: city.dir,
      // CI set, as on a build host: the screen is drawn all the same.
      env: { CTL_HOME: city.sup.home, BROWSER: browser, DISPLAY: undefined, NO_COLOR: undefined, CI: 'true' },
    });
  });

  /** Moves the selection to a session: up to the first row, then down to its row. */
  async function select(id: string): Promise<void> {
    pane!.keys('k', 'k', 'k', 'k', 'k', 'k');
    const rows = (await pane!.waitFor(/^SESSIONS.*\n▶ /m)).split('\n');
    const first = rows.findIndex((l) => l.startsWith('SESSIONS')) + 1;
    const at = rows.slice(first).findIndex((l) => l.includes(` ${id} `));
    expect(at, `${id} on the screen`).to.be.at.least(0);
    if (at > 0) pane!.keys(...Array<string>(at).fill('j'));
    await pane!.waitFor(new RegExp(`▶ ${id} `));
  }

  after(async () => {
    pane?.close();
    await city?.sup.cleanup();
  });

  it('shows the city of the working directory live, its sessions and recent events', async () => {
    const screen = await pane!.waitFor(/ctl top — city town .*● live/);
    expect(screen).to.include(claude).and.include(tui);
    expect(screen).to.match(/session\.created +/);
    // Each session's host, after its state: both run here.
    for (const id of [claude, tui]) expect(screen).to.match(new RegExp(`${id} +\\S+ +\\S+ +local `));
  });

  it('puts a session waiting on a permission first, and a allows it: the program runs the tool', async () => {
    await send(city.api, claude, 'run ls -la');
    await pane!.waitFor(new RegExp(`▶ ${claude} .*waiting +\\? tool-approval: Allow Bash`));
    await pane!.waitFor(/1 waiting for you/);
    pane!.keys('a');
    await waitForTurn(city.api, claude, 'assistant', /I ran `ls -la`\./);
    await pane!.waitFor(new RegExp(`Allowed \\S+ of ${claude}`));
    await pane!.waitFor(/0 waiting for you/);
  });

  it('d asks for a reason and denies with it', async () => {
    await send(city.api, claude, 'run rm -rf build');
    await pane!.waitFor(new RegExp(`▶ ${claude} .*waiting`));
    pane!.keys('d');
    await pane!.waitFor(new RegExp(`Deny ${claude}, reason:`));
    pane!.type('not on main');
    pane!.keys('Enter');
    await waitForTurn(city.api, claude, 'assistant', /not allowed to run it: not on main/);
    await pane!.waitFor(new RegExp(`Denied \\S+ of ${claude}`));
  });

  it("o opens the session's page in the browser, signed in by a one-time link", async () => {
    await select(claude);
    pane!.keys('o');
    await pane!.waitFor(/Opened http:\S+ in the browser/);
    const url = readFileSync(opened, 'utf8');
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.match(new RegExp(`^/ui/city/town/session/${claude}$`));
    expect(res.headers.get('set-cookie')).to.match(/^ctl_session=/);
  });

  it("tab selects the agents: o opens the agent's page, r the run its work is part of (here none: the runs)", async () => {
    pane!.keys('Tab');
    await pane!.waitFor(/AGENTS +◀\n▶ helper /);
    pane!.keys('o');
    await pane!.waitFor(/Opened http:\S+\/ui\/city\/town\/agent\/helper in the browser/);
    const res = await fetch(readFileSync(opened, 'utf8'), { redirect: 'manual' });
    expect(res.headers.get('location')).to.equal('/ui/city/town/agent/helper');
    pane!.keys('r');
    await pane!.waitFor(/helper holds no bead; Opened http:\S+\/ui\/city\/town\/runs in the browser/);
    pane!.keys('Tab');
    await pane!.waitFor(/SESSIONS.*◀/);
  });

  it('t hands the terminal to ctl session attach, and takes it back once detached', async () => {
    await select(tui);
    pane!.keys('t');
    // The session's own terminal: the example agent's prompt, and none of top's screen.
    await pane!.waitFor(/^❯/m);
    expect(pane!.screen()).not.to.include('ctl top —');
    pane!.keys('C-b', 'd');
    await pane!.waitFor(new RegExp(`ctl top — city town[\\s\\S]*Back from ${tui}`));
  });

  it('fits 80 columns (70, without its HOST column) and redraws when the terminal is resized', async () => {
    pane!.resize(80, 24);
    const screen = await waitUntil('an 80-column screen', () => {
      const lines = pane!.screen().replace(/\n$/, '').split('\n');
      return lines.length === 24 && lines[0].startsWith('ctl top') ? lines : undefined;
    });
    expect(Math.max(...screen.map((l) => [...l].length))).to.be.at.most(80);
    expect(screen.join('\n')).to.match(/SESSIONS[\s\S]*AGENTS[\s\S]*EVENTS/);
    expect(screen[23]).to.match(/^↑↓ select/);
    expect(screen.find((l) => l.slice(2).startsWith(`${claude} `))).to.match(/ local /);
    // Narrower still, the HOST column makes room for what the sessions say.
    pane!.resize(70, 24);
    // Ink redraws once it hears of the new size: until then tmux shows the old screen cut at 70.
    const row = await waitUntil('the session line redrawn without its host', () => {
      const line = pane!
        .screen()
        .split('\n')
        .find((l) => /^[▶ ] /.test(l) && l.slice(2).startsWith(`${claude} `));
      return line !== undefined && !/ local /.test(line) ? line : undefined;
    });
    expect([...row].length).to.be.at.most(70);
    expect(row).to.match(new RegExp(`${claude} +\\S+ +active `));
    pane!.resize(120, 30);
    await pane!.waitFor(/^↑↓ select/m);
  });

  it('says when the supervisor is down, and is live again once it is back', async () => {
    await city.sup.stop();
    await pane!.waitFor(/✗ supervisor down/);
    await city.sup.launch();
    await waitUntil('town to run again', async () => (await city.sup.city('town'))?.running === true, 30_000);
    await pane!.waitFor(/● live/, 40_000);
    // The city's restart, read from its stream once it is open again.
    await pane!.waitFor(/controller\.stopped[\s\S]*controller\.started/);
  });

  it('q quits, leaving the terminal as it found it and no process behind', async () => {
    pane!.keys('q');
    const screen = await pane!.waitFor(/EXITED \d+/);
    expect(screen).to.include('EXITED 0');
    // Out of the alternate screen, cursor shown, the line discipline back to cooked with echo.
    expect(pane!.format('#{alternate_on} #{cursor_flag}')).to.equal('0 1');
    expect(screen)
      .to.match(/(^|\s)icanon(\s|$)/m)
      .and.match(/(^|\s)echo(\s|$)/m);
    expect(processesMentioning(marker)).to.deep.equal([]);
  });

  it('Ctrl-C quits as q does', async function () {
    pane!.close();
    pane = TmuxPane.start([process.execPath, ctlEntryPath(), 'top', '--all', marker], {
      columns: 80,
      rows: 24,
      cwd: city.dir,
      env: { CTL_HOME: city.sup.home },
    });
    await pane.waitFor(/ctl top — every city \(1\) .*● live/);
    pane.keys('C-c');
    await pane.waitFor(/EXITED 0/);
    expect(pane.format('#{alternate_on} #{cursor_flag}')).to.equal('0 1');
    expect(processesMentioning(marker)).to.deep.equal([]);
  });

  it('refuses without a terminal, and a city and --all together', async () => {
    expectFailure(await runCtl(['top', marker], { cwd: city.dir }), 'top', 'top needs a terminal');
    expectFailure(await runCtl(['top', '--all', '--city', 'town', marker]), 'top', 'mutually exclusive');
  });
});
