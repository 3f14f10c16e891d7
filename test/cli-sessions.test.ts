import { execa } from 'execa';
import { expect } from 'chai';
import { ctlEntryPath } from '../shared/paths.js';
import { expectFailure, expectSuccess } from './helpers/cli.js';
import { session, startSessionCity, waitForTurn, type SessionCity } from './helpers/sessions.js';
import { waitUntil } from './helpers/wait.js';

describe('ctl session and ctl provider (real binary, real supervisor, real agents)', function () {
  let city: SessionCity;
  const ctl = (args: string[]) => city.sup.ctl(['--city', 'clisessions', ...args]);

  before(async function () {
    city = await startSessionCity('clisessions');
  });

  after(async function () {
    await city?.sup.cleanup();
  });

  it('session new waits until the program is ready; list and show say what it is', async function () {
    const created = expectSuccess(await ctl(['session', 'new', 'echo', '--alias', 'first', '--title', 'a first one']));
    expect(created).to.have.length(1);
    expect(created[0]).to.match(/^Session \S+ \(first\) of echo is active$/);
    const id = created[0].split(' ')[1];
    const listed = expectSuccess(await ctl(['session', 'list']));
    expect(listed[0]).to.match(/^ID\s+NAME\s+TEMPLATE\s+STATE\s+HOST\s+ACTIVITY\s+PID\s+TITLE$/);
    expect(listed.find((l) => l.startsWith(id))).to.match(/first\s+echo\s+active\s+local\s+idle\s+\d+\s+a first one/);
    const shown = expectSuccess(await ctl(['session', 'show', 'first']));
    expect(
      shown.some((l) => new RegExp(`^ID:\\s+${id}$`).test(l)),
      shown.join('\n'),
    ).to.equal(true);
    expect(shown.some((l) => /^Running:\s+yes \(pid \d+\)$/.test(l))).to.equal(true);
    const json = JSON.parse(expectSuccess(await ctl(['session', 'show', 'first', '--json']))[0]) as {
      id: string;
      state: string;
    };
    expect(json).to.include({ id, state: 'active' });
  });

  it('session send waits until the program has the message; transcript shows the conversation', async function () {
    expectSuccess(await ctl(['session', 'new', 'echo', '--alias', 'talker']));
    const sent = expectSuccess(await ctl(['session', 'send', 'talker', 'hello from the CLI']));
    expect(sent[0]).to.match(/^Delivered msg-[0-9a-f]{16} to \S+$/);
    await waitForTurn(city.api, 'talker', 'assistant', 'echo: hello from the CLI');
    const transcript = expectSuccess(await ctl(['session', 'transcript', 'talker']));
    expect(transcript).to.deep.equal(['user: hello from the CLI', 'assistant: echo: hello from the CLI']);
    const raw = expectSuccess(await ctl(['session', 'transcript', 'talker', '--raw']));
    expect(raw.map((l) => l.split(' ')[2])).to.deep.equal(['start', 'user', 'assistant', 'turn_end']);
    const submitted = JSON.parse(
      expectSuccess(await ctl(['session', 'submit', 'talker', 'later', '--intent', 'follow_up', '--json']))[0],
    ) as { intent: string; message_id: string };
    expect(submitted.intent).to.equal('follow_up');
    expectFailure(await ctl(['session', 'submit', 'talker', 'x', '--intent', 'sometime']), 'session submit', /intent/);
  });

  it('stop, kill, wake, suspend and close act on a session and say so', async function () {
    expectSuccess(await ctl(['session', 'new', 'echo', '--alias', 'acted']));
    expect(expectSuccess(await ctl(['session', 'stop', 'acted']))[0]).to.match(/was not in a turn$/);
    expect(expectSuccess(await ctl(['session', 'kill', 'acted']))[0]).to.match(/^Killed the program of acted$/);
    await waitUntil('asleep', async () => (await session(city.api, 'acted')).state === 'asleep');
    expect(expectSuccess(await ctl(['session', 'wake', 'acted']))[0]).to.match(/^Waking \S+ \(creating|active\)$/);
    await waitUntil('active', async () => (await session(city.api, 'acted')).state === 'active');
    expect(expectSuccess(await ctl(['session', 'suspend', 'acted']))[0]).to.match(/^Suspended \S+$/);
    expectFailure(await ctl(['session', 'suspend', 'acted']), 'session suspend', /^conflict: session \S+ is suspended/);
    expect(expectSuccess(await ctl(['session', 'close', 'acted']))[0]).to.match(/^Closed \S+$/);
    expect(expectSuccess(await ctl(['session', 'close', 'acted', '--delete']))[0]).to.match(/^Deleted \S+$/);
    expectFailure(await ctl(['session', 'show', 'acted']), 'session show', 'not_found: session not found: acted');
  });

  it('pending and respond: a question is listed, answered, and the answer reaches the program', async function () {
    expectSuccess(await ctl(['session', 'new', 'echo', '--alias', 'asker']));
    expectSuccess(await ctl(['session', 'send', 'asker', 'ask which branch?']));
    await waitUntil('the question', async () => (await session(city.api, 'asker')).pending);
    const pending = expectSuccess(await ctl(['session', 'pending']));
    expect(pending[0]).to.match(/^SESSION\s+REQUEST\s+KIND\s+PROMPT$/);
    expect(pending[1]).to.match(/question\s+which branch\?$/);
    const own = expectSuccess(await ctl(['session', 'pending', 'asker']));
    expect(
      own.some((l) => /^Prompt:\s+which branch\?$/.test(l)),
      own.join('\n'),
    ).to.equal(true);
    expectFailure(await ctl(['session', 'respond', 'asker', 'allow']), 'session respond', /^invalid ACTION: /);
    const answered = expectSuccess(await ctl(['session', 'respond', 'asker', 'answer', '--text', 'main']));
    expect(answered[0]).to.match(/^Answered ask-[0-9a-f]+ of \S+: answer$/);
    await waitForTurn(city.api, 'asker', 'assistant', 'answer: main');
    expectFailure(
      await ctl(['session', 'respond', 'asker', 'answer', '--text', 'x']),
      'session respond',
      /^conflict: /,
    );
  });

  it('session stream prints the turns as they happen (JSON lines when piped)', async function () {
    expectSuccess(await ctl(['session', 'new', 'echo', '--alias', 'streamed']));
    const child = execa(process.execPath, [ctlEntryPath(), '--city', 'clisessions', 'session', 'stream', 'streamed'], {
      env: city.sup.env,
      reject: false,
    });
    const seen: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => seen.push(...chunk.toString().split('\n').filter(Boolean)));
    try {
      await waitUntil('the stream to be open', () => seen.some((l) => l.includes('"activity"')));
      expectSuccess(await ctl(['session', 'send', 'streamed', 'streaming now']));
      await waitUntil('the reply on the stream', () => seen.some((l) => l.includes('echo: streaming now')));
      const frames = seen.map((l) => JSON.parse(l) as { event: string; data: { role?: string; text?: string } });
      const turns = frames.filter((f) => f.event === 'turn').map((f) => [f.data.role, f.data.text]);
      expect(turns).to.deep.include.members([
        ['user', 'streaming now'],
        ['assistant', 'echo: streaming now'],
      ]);
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });

  it('a session whose program cannot start: one line saying why, exit 1', async function () {
    const failed = await ctl(['session', 'new', 'missing']);
    expectFailure(failed, 'session new', /agent-program not found.*\(session_start_failed\)$/);
    expectFailure(await ctl(['session', 'new', 'nope']), 'session new', 'not_found: provider not found: nope');
    expectFailure(
      await ctl(['session', 'send', 'nobody', 'hi']),
      'session send',
      'not_found: session not found: nobody',
    );
  });

  it('provider list, show and readiness', async function () {
    const listed = expectSuccess(await ctl(['provider', 'list']));
    expect(listed[0]).to.match(/^NAME\s+ORIGIN\s+PROTOCOL\s+RUNTIME\s+COMMAND$/);
    expect(listed.find((l) => l.startsWith('claude '))).to.match(/builtin\s+stream-json\s+pipe\s+claude -p/);
    expect(listed.find((l) => l.startsWith('echo '))).to.match(/city\s+text\s+pipe\s+\S+echo\.sh$/);
    const shown = expectSuccess(await ctl(['provider', 'show', 'pretend-claude']));
    expect(
      shown.some((l) => /^Protocol:\s+stream-json$/.test(l)),
      shown.join('\n'),
    ).to.equal(true);
    expect(shown.find((l) => l.startsWith('Permission modes:'))).to.include('acceptEdits');
    const ready = expectSuccess(await ctl(['provider', 'readiness', 'echo', 'missing']));
    expect(ready.find((l) => l.startsWith('echo '))).to.match(/configured/);
    expect(ready.find((l) => l.startsWith('missing '))).to.match(/not_installed/);
    expectFailure(await ctl(['provider', 'show', 'nope']), 'provider show', 'not_found: provider not found: nope');
  });
});
