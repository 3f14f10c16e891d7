import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { packageRoot } from '../shared/paths.js';
import { isAlive } from './helpers/processes.js';
import { tempDir } from './helpers/temp-dir.js';
import { waitUntil } from './helpers/wait.js';

// The host side of a remote session's tether (controller/hosts/on-host/), run here as the built files a host
// runs: the launcher of each program and the watchdog that ends them when the controller's lines stop or end.
// What carries them to a host (ssh) is not in play: these are the parts that must hold once there.

const MARK = '\u001bctl-launch ';
const HOST_DIST = join(packageRoot, 'dist', 'host');

interface Launched {
  child: ChildProcessWithoutNullStreams;
  /** The launcher's marked lines, as they come. */
  marks: string[];
  stdout: string[];
}

describe('the host side of a remote tether (launcher and watchdog, as a host runs them)', function () {
  let city: string;
  let runDir: string;
  const started: ChildProcessWithoutNullStreams[] = [];
  const programs: number[] = [];

  beforeEach(function () {
    city = tempDir('ctl-host-');
    runDir = join(city, 'run', 'r1');
  });

  afterEach(function () {
    for (const child of started.splice(0)) child.kill('SIGKILL');
    for (const pid of programs.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
    rmSync(city, { recursive: true, force: true });
  });

  function watchdog(deadlineMs: number): Promise<ChildProcessWithoutNullStreams> {
    const child = spawn(process.execPath, [join(HOST_DIST, 'watchdog.js'), 'watch', runDir, String(deadlineMs)]);
    started.push(child);
    return new Promise((resolve, reject) => {
      child.stdout.once('data', () => resolve(child));
      child.once('exit', (code) => reject(new Error(`the watchdog exited with ${code}`)));
    });
  }

  function launch(argv: string[], options: { cwd?: string; env?: Record<string, string | null> } = {}): Launched {
    const spec = { argv, cwd: options.cwd ?? city, env: options.env ?? {}, runDir, what: 'test program' };
    const child = spawn(process.execPath, [
      join(HOST_DIST, 'launch.js'),
      Buffer.from(JSON.stringify(spec)).toString('base64url'),
    ]);
    started.push(child);
    const launched: Launched = { child, marks: [], stdout: [] };
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.startsWith(MARK)) launched.marks.push(line.slice(MARK.length));
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => launched.stdout.push(chunk));
    return launched;
  }

  async function pidOf(launched: Launched): Promise<number> {
    const mark = await waitUntil('the launcher to say its pid', () => launched.marks.find((m) => m.startsWith('pid ')));
    const pid = Number(mark.slice(4));
    programs.push(pid);
    return pid;
  }

  function exitOf(launched: Launched): Promise<{ code: number | null; signal: string | null }> {
    return waitUntil('the launcher to say how the program ended', () => {
      const mark = launched.marks.find((m) => m.startsWith('exit '));
      return mark === undefined
        ? undefined
        : (JSON.parse(mark.slice(5)) as { code: number | null; signal: string | null });
    });
  }

  it('starts a program in its own group, recorded for the watchdog, and says its pid and its exit code', async function () {
    await watchdog(30_000);
    const launched = launch(['sh', '-c', 'echo "$CTL_NAMED ${HOME:+home-kept}"; read line; exit 3'], {
      env: { CTL_NAMED: 'named' },
    });
    const pid = await pidOf(launched);
    expect(readdirSync(join(runDir, 'groups'))).to.deep.equal([String(pid)]);
    await waitUntil('its output', () => launched.stdout.join('').includes('named home-kept'));
    launched.child.stdin.end('go\n');
    expect(await exitOf(launched)).to.deep.equal({ code: 3, signal: null });
    await waitUntil('the group record to go', () => readdirSync(join(runDir, 'groups')).length === 0);
  });

  it('unsets what the spec unsets, puts a PATH before the host’s own, and refuses a missing directory', async function () {
    await watchdog(30_000);
    const launched = launch(['sh', '-c', 'echo "path=$PATH unset=${CTL_GONE-none}"'], {
      env: { PATH: '/ctl/bin', CTL_GONE: null },
    });
    await exitOf(launched);
    expect(launched.stdout.join('')).to.equal(`path=/ctl/bin:${process.env.PATH} unset=none\n`);
    const missing = launch(['true'], { cwd: join(city, 'nowhere') });
    await waitUntil('the refusal', () => missing.marks.find((m) => m.startsWith('failed ')));
    expect(missing.marks.at(-1)).to.include('does not exist on the host');
  });

  it('when the controller’s lines end, the watchdog ends every group it holds and removes its run', async function () {
    const dog = await watchdog(30_000);
    const first = await pidOf(launch(['sleep', '300']));
    const second = await pidOf(launch(['sh', '-c', 'sleep 300 & wait']));
    dog.stdin.end();
    await waitUntil('both groups to end', () => !isAlive(first) && !isAlive(second));
    await waitUntil('the run directory to go', () => !existsSync(runDir));
  });

  it('when the lines stop without ending (a partition), the watchdog ends them at its deadline', async function () {
    const dog = await watchdog(2000);
    const pid = await pidOf(launch(['sleep', '300']));
    // Heartbeats keep it: two deadlines' worth of them, at the controller's pace, and it still runs.
    for (let beat = 0; beat < 20; beat++) {
      dog.stdin.write('beat\n');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(isAlive(pid)).to.equal(true);
    await waitUntil('the program to end once the beats stop', () => !isAlive(pid));
  });

  it('a group tethered by a line (a tmux pane) ends too; reap ends the groups of a run whose watchdog died', async function () {
    const dog = await watchdog(30_000);
    const pane = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    programs.push(pane.pid!);
    dog.stdin.write(`+${pane.pid} session program in tmux\n`);
    await waitUntil('the pane to be recorded', () => existsSync(join(runDir, 'groups', String(pane.pid))));
    const launched = await pidOf(launch(['sleep', '300']));
    dog.kill('SIGKILL');
    await waitUntil('the watchdog to be gone', () => !isAlive(dog.pid!));
    expect(isAlive(launched) && isAlive(pane.pid!)).to.equal(true);
    const reap = spawn(process.execPath, [join(HOST_DIST, 'watchdog.js'), 'reap', city]);
    let out = '';
    reap.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => reap.once('close', resolve));
    expect((JSON.parse(out) as number[]).sort()).to.deep.equal([launched, pane.pid!].sort());
    await waitUntil('both to end', () => !isAlive(launched) && !isAlive(pane.pid!));
  });
});
