import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa } from 'execa';
import { ctlEntryPath, packageRoot } from '../shared/paths.js';
import { expectProblem } from './helpers/city-api.js';
import { isAlive, processesMentioning } from './helpers/processes.js';
import {
  createSession,
  deliver,
  session,
  sessionEvents,
  startSessionCity,
  terminalOf,
  turns,
  waitForTurn,
  type SessionCity,
} from './helpers/sessions.js';
import { hasTmux } from './helpers/tmux-installed.js';
import { waitUntil } from './helpers/wait.js';

const TUI_AGENT = join(packageRoot, 'examples', 'agents', 'tui-agent.mjs');
const MISHEARING_AGENT = join(packageRoot, 'test', 'fixtures', 'hard-of-hearing-tui-agent.mjs');

/**
 * The tmux runtime with the shipped interactive example (examples/agents/tui-agent.mjs), read off its screen by
 * its rules (controller/sessions/tmux/rules/tui-agent.toml): a prompt, a busy line, a numbered permission menu.
 */
describe('sessions in tmux (an interactive terminal program, read by screen rules)', function () {
  this.timeout(60_000);
  let city: SessionCity;

  before(async function () {
    // .ci/run installs tmux; a machine without it cannot run this runtime at all.
    if (!hasTmux()) this.skip();
    city = await startSessionCity(
      'tmux',
      `
[providers.tui]
command = "${process.execPath} ${TUI_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"

[providers.tui-slow]
command = "${process.execPath} ${TUI_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"
env = { TUI_AGENT_THINK_MS = "3000" }

[providers.tui-drops-first]
command = "${process.execPath} ${MISHEARING_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"
env = { TUI_MISHEAR = "drop" }

[providers.tui-garbles-first]
command = "${process.execPath} ${MISHEARING_AGENT}"
runtime = "tmux"
screen_rules = "tui-agent"
env = { TUI_MISHEAR = "garble" }

[providers.tui-no-rules-file]
command = "${process.execPath} ${TUI_AGENT}"
runtime = "tmux"
screen_rules = "/nonexistent/rules.toml"

[daemon]
patrol_interval = "500ms"

[[agent]]
name = "watched"
provider = "tui"
`,
    );
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  function socketOf(): string {
    return join(city.dir, '.ctl', 'tmux.sock');
  }

  /** A local session's place to join: its socket, its tmux session, and the command that joins it here. */
  function attachOf(id: string): { socket: string; target: string; command: string[] } {
    const target = `ctl-${id}`;
    return { socket: socketOf(), target, command: ['tmux', '-S', socketOf(), 'attach-session', '-t', target] };
  }

  it('starts in the city’s tmux server, answers two messages read off its screen, and can be peeked at and attached to', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui' });
    const view = await session(api, id);
    expect(view).to.include({ running: true, state: 'active' });
    expect(existsSync(socketOf()), 'the city’s own tmux server').to.equal(true);
    await deliver(api, id, 'hello there');
    await waitForTurn(api, id, 'assistant', 'You said: hello there');
    await deliver(api, id, 'and again');
    await waitForTurn(api, id, 'assistant', 'You said: and again');
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello there'],
      ['assistant', 'You said: hello there'],
      ['user', 'and again'],
      ['assistant', 'You said: and again'],
    ]);
    const peeked = await api.get<{ last_output?: string; attach?: { socket: string; target: string } }>(
      `/session/${id}?peek=true&peek_lines=3`,
    );
    expect(peeked.status).to.equal(200);
    expect(peeked.body.last_output?.split('\n')).to.deep.equal(['You said: and again', '', '❯']);
    expect(peeked.body.attach).to.deep.equal(attachOf(id));
    const panes = execFileSync('tmux', ['-S', socketOf(), 'list-sessions', '-F', '#{session_name}'], {
      encoding: 'utf8',
    });
    expect(panes.split('\n')).to.include(`ctl-${id}`);
    await api.post(`/session/${id}/close`);
  });

  it('a permission menu on its screen is pending until respond: allow and deny press the rule’s keys', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui' });
    await deliver(api, id, 'run: make test');
    const first = await waitUntil('the permission prompt', async () => (await session(api, id)).pending);
    expect(first).to.include({ kind: 'tool-approval', prompt: 'Bash(make test) Do you want to proceed?' });
    // Nothing is typed into the menu: a message waits for the turn to end.
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', /Ran: make test$/);
    expectProblem(
      await api.post(`/session/${id}/respond`, { action: 'allow', request_id: first.request_id }),
      409,
      'conflict-wrong-state',
    );
    await deliver(api, id, 'run: rm -rf build');
    await waitUntil('the second prompt', async () => {
      const pending = (await session(api, id)).pending;
      return pending && pending.request_id !== first.request_id;
    });
    expect((await api.post(`/session/${id}/respond`, { action: 'deny' })).status).to.equal(202);
    await waitForTurn(api, id, 'assistant', /Denied: rm -rf build$/);
    const cleared = (await sessionEvents(api, 'session.pending_cleared', id)).map((e) => e.payload.action);
    expect(cleared).to.deep.equal(['allow', 'deny']);
    await api.post(`/session/${id}/close`);
  });

  it('stop presses the interrupt key; kill ends the program, and a message wakes it again', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui-slow' });
    await deliver(api, id, 'take your time');
    await waitUntil('it to be at work', async () => {
      const peeked = await api.get<{ last_output?: string }>(`/session/${id}?peek=true`);
      return peeked.body.last_output?.includes('esc to interrupt');
    });
    await api.post(`/session/${id}/stop`);
    await waitForTurn(api, id, 'assistant', 'Interrupted by user');
    const pid = (await session(api, id)).pid!;
    expect((await api.post(`/session/${id}/kill`)).status).to.equal(200);
    await waitUntil('the program to end', () => !isAlive(pid));
    await deliver(api, id, 'back?');
    await waitForTurn(api, id, 'assistant', 'You said: back?');
    expect((await session(api, id)).pid).to.not.equal(pid);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    await api.post(`/session/${id}/close`);
  });

  it('reset starts its program again in its pane, the transcript marking where, and it answers as before', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui' });
    await deliver(api, id, 'before the reset');
    await waitForTurn(api, id, 'assistant', 'You said: before the reset');
    const pid = (await session(api, id)).pid!;
    const reset = await api.post<{ restarted: boolean; transcript_seq: number }>(`/session/${id}/reset`);
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
    expect(reset.body.restarted).to.equal(true);
    await waitUntil('the old program to end', () => !isAlive(pid));
    await deliver(api, id, 'after the reset');
    await waitForTurn(api, id, 'assistant', 'You said: after the reset', 15_000);
    expect((await session(api, id)).pid).to.not.equal(pid);
    const raw = await api.get<{ messages: { seq: number; kind: string }[] }>(`/session/${id}/transcript?format=raw`);
    const kinds = raw.body.messages.filter((m) => m.seq >= reset.body.transcript_seq).map((m) => m.kind);
    expect(kinds.slice(0, 2)).to.deep.equal(['reset', 'start']);
    expect(await sessionEvents(api, 'session.crashed', id)).to.deep.equal([]);
    await api.post(`/session/${id}/close`);
  });

  it('ctl session attach joins its terminal in tmux (and refuses without a terminal, or for a session not in tmux)', async function () {
    const { api, sup } = city;
    const id = await createSession(api, { name: 'tui' });
    const noTerminal = await sup.ctl(['session', 'attach', id, '--city', 'tmux']);
    expect(noTerminal.code).to.equal(1);
    expect(noTerminal.stderr.trim()).to.equal('ctl session attach: attach needs a terminal (stdin is not one)');
    const asJson = await sup.ctl(['session', 'attach', id, '--city', 'tmux', '--json']);
    expect(JSON.parse(asJson.stdout)).to.deep.equal(attachOf(id));
    const echo = await createSession(api, { name: 'echo' });
    const notTmux = await sup.ctl(['session', 'attach', echo, '--city', 'tmux']);
    expect(notTmux.code).to.equal(1);
    expect(notTmux.stderr).to.match(/has no terminal to join \(its provider echo does not run in tmux\)/);

    // On a terminal (a pty from util-linux script): a tmux client of the session until it is detached.
    const command = [process.execPath, ctlEntryPath(), 'session', 'attach', id, '--city', 'tmux']
      .map((w) => `'${w}'`)
      .join(' ');
    const attached = execa('script', ['-qefc', command, '/dev/null'], {
      env: { ...process.env, ...sup.env },
      reject: false,
      timeout: 20_000,
      stdin: 'pipe',
    });
    const clients = () =>
      execFileSync('tmux', ['-S', socketOf(), 'list-clients', '-t', `ctl-${id}`], { encoding: 'utf8' }).trim();
    await waitUntil('a client attached to the session', () => clients() !== '');
    // The session counts as attached (so a configuration change waits for the person), and the stream is closed.
    await waitUntil('the session to count as attached', async () => (await session(api, id)).attached);
    expect((await sup.ctl(['session', 'show', id, '--city', 'tmux'])).stdout).to.match(/Attached:? +yes/);
    execFileSync('tmux', ['-S', socketOf(), 'detach-client', '-s', `ctl-${id}`]);
    const result = await attached;
    expect(result.exitCode, String(result.stdout)).to.equal(0);
    expect(clients()).to.equal('');
    await waitUntil('no longer attached once detached', async () => !(await session(api, id)).attached);
    // tmux's own client, not ctl's: a control-mode client (`tmux -C attach`) counts as well.
    const control = execa('tmux', ['-C', '-S', socketOf(), 'attach-session', '-t', `ctl-${id}`], {
      stdin: 'pipe',
      reject: false,
      timeout: 20_000,
    });
    await waitUntil('attached by tmux -C', async () => (await session(api, id)).attached);
    control.stdin.end();
    await control;
    await waitUntil('detached again', async () => !(await session(api, id)).attached);
    expect((await session(api, id)).running, 'detaching leaves it running').to.equal(true);
    await api.post(`/session/${id}/close`);
    await api.post(`/session/${echo}/close`);
  });

  it('a person attached with tmux holds back a restart for a configuration change until they leave', async function () {
    const { api, dir } = city;
    const agentSession = async () =>
      (await api.get<{ items: { id: string; running: boolean; pid?: number }[] }>('/sessions?template=watched')).body
        .items[0];
    const before = await waitUntil('the agent’s session to run', async () => {
      const s = await agentSession();
      return s?.running && s.pid ? s : undefined;
    });
    const client = execa('tmux', ['-C', '-S', socketOf(), 'attach-session', '-t', `ctl-${before.id}`], {
      stdin: 'pipe',
      reject: false,
      timeout: 25_000,
    });
    await waitUntil('attached by tmux', async () => (await session(api, before.id)).attached);
    const path = join(dir, 'city.toml');
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(
        'name = "watched"\nprovider = "tui"',
        'name = "watched"\nprovider = "tui-slow"',
      ),
    );
    await waitUntil('session.restart_pending (attached)', async () =>
      (await sessionEvents(api, 'session.restart_pending', before.id)).some((e) =>
        /someone is attached/.test(String(e.payload.reason)),
      ),
    );
    expect((await session(api, before.id)).pid, 'still the same program while they watch').to.equal(before.pid);
    client.stdin.end();
    await client;
    const after = await waitUntil('the restart once they left', async () => {
      const view = await session(api, before.id);
      return view.running && view.pid !== before.pid ? view : undefined;
    });
    expect(after.provider).to.equal('tui-slow');
  });

  it('hooks reported with ctl hook-event take over from the screen: a permission prompt, turn ends, a 404 once closed', async function () {
    const { api, sup } = city;
    const id = await createSession(api, { name: 'tui' });
    // What the program's hooks run (CTL_CITY and CTL_SESSION_ID are in a session's environment), the hook's JSON
    // on stdin.
    const hookEvent = (event: string, input: Record<string, unknown>) =>
      sup.ctl(['hook-event', event], {
        env: { CTL_CITY: 'tmux', CTL_SESSION_ID: id },
        input: JSON.stringify({ session_id: 'conv-1', hook_event_name: event, ...input }),
      });
    expect((await session(api, id)).program_status).to.include({ status: 'idle', source: 'screen' });

    const unknown = await hookEvent('Teleported', {});
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.match(/^ctl hook-event: .*event/);
    expectProblem(await api.post(`/session/${id}/hook`, { event: 'Teleported' }), 422, 'validation-failed');
    const started = await hookEvent('SessionStart', { source: 'startup' });
    expect(started, started.stderr).to.include({ code: 0, stdout: '' });
    expect((await session(api, id)).program_status).to.include({ source: 'hooks', hook: 'SessionStart' });

    // A permission prompt is the hooks' to report: the menu on the screen alone is not pending.
    await deliver(api, id, 'run: make test');
    const notified = await hookEvent('Notification', {
      message: 'Claude needs your permission',
      notification_type: 'permission_prompt',
    });
    expect(notified.code, notified.stderr).to.equal(0);
    const pending = (await session(api, id)).pending!;
    expect(pending).to.include({ kind: 'tool-approval', prompt: 'Claude needs your permission' });
    expect(pending.metadata).to.include({ source: 'hook', hook: 'Notification' });
    expect((await session(api, id)).program_status).to.include({ status: 'asking', hook: 'Notification' });
    // Answered through respond: the rule's keys, pressed on the menu on its screen.
    expect((await api.post(`/session/${id}/respond`, { action: 'allow' })).status).to.equal(202);
    expect((await session(api, id)).pending).to.equal(undefined);
    // Its Stop ends the turn, with the reply it carries (the whole of it, not what the screen still shows).
    expect(
      (
        await api.post(`/session/${id}/hook`, {
          event: 'Stop',
          input: { session_id: 'conv-1', last_assistant_message: 'Ran it.' },
        })
      ).status,
    ).to.equal(200);
    await waitForTurn(api, id, 'assistant', 'Ran it.');
    const ends = async () =>
      (
        await api.get<{ messages: { kind: string; source?: string }[] }>(
          `/session/${id}/transcript?format=raw&tail=1000`,
        )
      ).body.messages
        .filter((m) => m.kind === 'turn_end')
        .map((m) => m.source);
    expect(await ends()).to.deep.equal(['hook']);
    expect((await session(api, id)).program_status).to.include({ status: 'idle', source: 'hooks', hook: 'Stop' });
    const view = await session(api, id);
    expect(view.provider_session_key, 'its conversation, from the hook').to.equal('conv-1');
    const shown = await sup.ctl(['session', 'show', id, '--city', 'tmux']);
    expect(shown.stdout).to.match(/Program:? +idle \(its hooks: Stop\)/);

    // A prompt typed in its terminal by a person is a turn of its own, ended by its Stop.
    expect(
      (await api.post(`/session/${id}/hook`, { event: 'UserPromptSubmit', input: { prompt: 'by hand' } })).status,
    ).to.equal(200);
    expect((await session(api, id)).activity).to.equal('in-turn');
    await api.post(`/session/${id}/hook`, { event: 'Stop', input: { last_assistant_message: 'Done by hand.' } });
    await waitForTurn(api, id, 'assistant', 'Done by hand.');
    await waitUntil('idle again', async () => (await session(api, id)).activity === 'idle');

    await api.post(`/session/${id}/close`);
    const before = (await api.events()).length;
    const gone = await hookEvent('Stop', {});
    expect(gone.code).to.equal(1);
    expect(gone.stderr).to.match(/session .* is closed/);
    expectProblem(await api.post(`/session/${id}/hook`, { event: 'Stop' }), 404, 'session-not-found');
    expect((await api.events()).length, 'nothing else changed').to.equal(before);
  });

  it('after hooks took over, a turn no hook ends (an interrupt) is ended by the screen', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui' });
    await api.post(`/session/${id}/hook`, { event: 'UserPromptSubmit', input: { prompt: 'by hand' } });
    await api.post(`/session/${id}/hook`, { event: 'Stop', input: { last_assistant_message: 'Done by hand.' } });
    await waitForTurn(api, id, 'assistant', 'Done by hand.');
    await waitUntil('idle again', async () => (await session(api, id)).activity === 'idle');
    await deliver(api, id, 'no hook for this one');
    await waitForTurn(api, id, 'assistant', 'You said: no hook for this one');
    await api.post(`/session/${id}/close`);
  });

  it('a message whose typing the program lost is typed again after a back-off, once, and the retry is an event', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui-drops-first' });
    await deliver(api, id, 'hello again');
    await waitForTurn(api, id, 'assistant', 'You said: hello again');
    expect((await turns(api, id)).map((t) => [t.role, t.text])).to.deep.equal([
      ['user', 'hello again'],
      ['assistant', 'You said: hello again'],
    ]);
    const [retried, ...more] = await sessionEvents(api, 'session.delivery_retried', id);
    expect(more).to.deep.equal([]);
    expect(retried.payload).to.include({ session_id: id, attempt: 1, attempts: 4, retry_in_ms: 1000 });
    expect(retried.payload.error).to.match(/never showed on its input line/);
    await api.post(`/session/${id}/close`);
  });

  it('a message the screen never shows typed fails its request after the last attempt, and nothing is typed over', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui-garbles-first' });
    const accepted = await api.post<{ request_id: string }>(`/session/${id}/messages`, { message: 'hello' });
    const result = await terminalOf(api, accepted.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload).to.include({ error_code: 'delivery_failed' });
    expect(String(result.payload.error_message)).to.match(/in 4 attempts: its input line holds other text: olleh$/);
    const retried = await sessionEvents(api, 'session.delivery_retried', id);
    expect(retried.map((e) => [e.payload.attempt, e.payload.retry_in_ms])).to.deep.equal([
      [1, 1000],
      [2, 2000],
      [3, 4000],
    ]);
    const [failed] = await sessionEvents(api, 'session.delivery_failed', id);
    expect(failed.payload).to.include({ attempt: 4, attempts: 4, request_id: accepted.body.request_id });
    const peeked = await api.get<{ last_output?: string }>(`/session/${id}?peek=true&peek_lines=1`);
    expect(peeked.body.last_output, 'typed once, never over').to.equal('❯ olleh');
    expect(await session(api, id)).to.include({ running: true, queued: 0, activity: 'idle' });
    await api.post(`/session/${id}/close`);
  });

  it('a program that exits by itself is a crash with its exit code, read from its pane', async function () {
    const { api } = city;
    const id = await createSession(api, { name: 'tui' });
    const pid = (await session(api, id)).pid!;
    await api.post(`/session/${id}/messages`, { message: 'exit' });
    const [crashed] = await waitUntil('session.crashed', async () => {
      const events = await sessionEvents(api, 'session.crashed', id);
      return events.length ? events : undefined;
    });
    expect(crashed.payload).to.include({ pid, exit_code: 0 });
    await api.post(`/session/${id}/close`);
  });

  it('screen rules that cannot be read: the create fails naming them', async function () {
    const reply = await city.api.post<{ request_id: string }>('/sessions', { name: 'tui-no-rules-file' });
    expect(reply.status).to.equal(202);
    const { terminalOf } = await import('./helpers/sessions.js');
    const result = await terminalOf(city.api, reply.body.request_id);
    expect(result.type).to.equal('request.failed');
    expect(result.payload.error_message).to.include('/nonexistent/rules.toml');
  });

  it('when the city stops, its tmux server and programs are gone', async function () {
    const { api, sup } = city;
    await createSession(api, { name: 'tui' });
    expect(processesMentioning(socketOf()).length, 'a tmux server on the city’s socket').to.be.greaterThan(0);
    const stopped = await fetch(`${sup.base}/v0/city/tmux/stop`, { method: 'POST', headers: { 'X-CTL-Request': 't' } });
    expect(stopped.status).to.be.oneOf([200, 202]);
    await waitUntil(
      'no tmux server and no program left',
      () => processesMentioning(socketOf()).length === 0 && processesMentioning(TUI_AGENT).length === 0,
    );
  });
});
