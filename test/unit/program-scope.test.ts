import { expect } from 'chai';
import { endProgram, programEnded, spawnProgram } from '../../shared/program-scope.js';
import { runCommand } from '../../supervisor/notice-delivery.js';
import { processesWithEnvironment } from '../helpers/processes.js';
import { waitUntil } from '../helpers/wait.js';

// What a program started outside its process group — `setsid`, a daemon's double fork — is found and ended with
// it, and never holds the answer (shared/program-scope.ts). The process-level side: pack commands (both modes),
// services (test/pack-commands.test.ts, test/services-api.test.ts).
describe('program scopes', function () {
  this.timeout(30_000);
  const tag = () => `scope-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const gone = (mark: string) =>
    waitUntil(`${mark} to be gone`, () => processesWithEnvironment('CTL_TEST_ESCAPEE', mark).length === 0);

  it('ending a program ends a double-forked daemon of it, which left its group and session', async function () {
    const mark = tag();
    const child = spawnProgram(
      '/bin/sh',
      ['-c', `(CTL_TEST_ESCAPEE=${mark} setsid sh -c 'sleep 300 & wait' &) ; exec sleep 300`],
      {
        stdio: 'ignore',
      },
    );
    await waitUntil('the daemon to run', () => processesWithEnvironment('CTL_TEST_ESCAPEE', mark).length === 2);
    endProgram(child);
    await programEnded(child);
    await gone(mark);
  });

  it('its end is answered shortly after its exit, whatever holds its pipes', async function () {
    const mark = tag();
    const child = spawnProgram('/bin/sh', ['-c', `CTL_TEST_ESCAPEE=${mark} setsid sleep 300 & echo started`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const ended = await programEnded(child);
    expect(ended.code).to.equal(0);
    expect(out).to.equal('started\n');
    endProgram(child);
    await gone(mark);
  });

  it('a notify command past its time-out fails then, and what it left outside its group goes too', async function () {
    const mark = tag();
    const asked = Date.now();
    const delivery = runCommand(
      {
        argv: ['/bin/sh', '-c', `CTL_TEST_ESCAPEE=${mark} setsid sleep 300 & exec sleep 300`],
        timeoutMs: 1000,
      },
      { kind: 'run_failed', title: 't' } as Parameters<typeof runCommand>[1],
      new AbortController().signal,
    );
    let failure: Error | undefined;
    await delivery.catch((err: Error) => (failure = err));
    console.log(`      answered a 1 s notify time-out after ${Date.now() - asked} ms`);
    expect(failure?.message).to.match(/still running after 1s/);
    await gone(mark);
  });
});
