import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Host, HostProcess } from '../controller/hosts/host.js';
import { localHost } from '../controller/hosts/local-host.js';
import { SshHost } from '../controller/hosts/ssh-host.js';
import { hostConfigOf } from './helpers/host-config-of.js';
import { hostsAvailable, makeHosts } from './helpers/netns-hosts.js';
import { tempDir } from './helpers/temp-dir.js';
import { waitUntil } from './helpers/wait.js';

/**
 * What every host passes (controller/hosts/host.ts): spawning a group with an explicit environment, its output
 * and exit, signals to the whole group, back-pressure, staged files, short commands, tethering and liveness.
 * Each implementation is run through `describeHost`; a remote host gets a directory of its own on that host.
 */
interface HostUnderTest {
  host: Host;
  /** A directory on the host, there for the suite's programs. */
  dir: string;
  /** A directory on this machine, where files to stage are written. */
  localDir: string;
  cleanup: () => Promise<void> | void;
}

function describeHost(name: string, make: () => Promise<HostUnderTest | string>): void {
  describe(`host conformance: ${name}`, function () {
    this.timeout(60_000);
    let host: Host;
    let dir: string;
    let localDir: string;
    let cleanup: (() => Promise<void> | void) | undefined;
    const spawned: HostProcess[] = [];

    before(async function () {
      const made = await make();
      // A host that cannot be made on this machine: the reason is the skip's.
      if (typeof made === 'string') {
        this.test!.parent!.title += ` (skipped: ${made})`;
        return this.skip();
      }
      ({ host, dir, localDir, cleanup } = made);
    });

    afterEach(function () {
      for (const p of spawned.splice(0)) p.signal('SIGKILL');
    });

    after(async function () {
      await cleanup?.();
    });

    async function spawn(argv: string[], env: NodeJS.ProcessEnv = { PATH: process.env.PATH }): Promise<HostProcess> {
      const p = await host.spawn({ argv, cwd: dir, env, what: 'conformance' });
      spawned.push(p);
      return p;
    }

    function output(p: HostProcess): () => string {
      let text = '';
      p.stdout.setEncoding('utf8');
      p.stdout.on('data', (chunk: string) => (text += chunk));
      return () => text;
    }

    it('runs a program in its directory with the environment it was given, and reports its exit code', async function () {
      const p = await spawn(['sh', '-c', 'echo "$(pwd) $CTL_GIVEN"; exit 7'], {
        PATH: process.env.PATH,
        CTL_GIVEN: 'given',
      });
      const text = output(p);
      expect(await p.exited).to.deep.equal({ code: 7, signal: null });
      expect(text()).to.equal(`${dir} given\n`);
    });

    it('carries lines both ways over its stdin and stdout', async function () {
      const p = await spawn(['sh', '-c', 'while read -r l; do echo "got $l"; done']);
      const text = output(p);
      for (const line of ['one', 'two', 'three']) p.stdin.write(`${line}\n`);
      await waitUntil('three replies', () => text() === 'got one\ngot two\ngot three\n');
      p.stdin.end();
      expect((await p.exited).code).to.equal(0);
    });

    it('signals the whole group: what the program started ends with it', async function () {
      const p = await spawn(['sh', '-c', 'sleep 300 & echo $!; wait']);
      const text = output(p);
      const child = Number(await waitUntil('the grandchild pid', () => text().trim() || undefined));
      p.signal('SIGTERM');
      expect((await p.exited).signal).to.equal('SIGTERM');
      await waitUntil('the grandchild to end', async () => !(await host.isAlive(child)));
    });

    it('holds a program that writes faster than it is read in its pipe (back-pressure), losing nothing', async function () {
      const p = await spawn(['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done']);
      p.stdout.pause();
      await waitUntil('the pipe to fill', () => p.stdout.readableLength > 0);
      let lines = 0;
      let partial = '';
      p.stdout.setEncoding('utf8');
      p.stdout.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        lines += parts.length;
      });
      p.stdout.resume();
      expect((await p.exited).code).to.equal(0);
      expect(lines).to.equal(20000);
    });

    it('refuses a program that is not there, saying so', async function () {
      let error: Error | undefined;
      try {
        const p = await spawn(['ctl-no-such-program']);
        // A host that learns of it only once the launch has run says so by its exit.
        expect((await p.exited).code).to.not.equal(0);
        return;
      } catch (err) {
        error = err as Error;
      }
      expect(error.message).to.match(/ctl-no-such-program not found/);
    });

    it('stages files with their modes, and runs short commands bounded in time', async function () {
      const from = join(localDir, 'from');
      mkdirSync(join(from, 'zsh'), { recursive: true });
      writeFileSync(join(from, 'shell-env.sh'), 'export A=1\n', { mode: 0o600 });
      writeFileSync(join(from, 'zsh', '.zshenv'), 'A=2\n', { mode: 0o644 });
      const to = host.sessionDir('s-1', join(localDir, 'to'));
      await host.stage(from, ['shell-env.sh', 'zsh/.zshenv'], to);
      const listed = await host.run(['sh', '-c', 'cat shell-env.sh zsh/.zshenv'], { cwd: to, timeoutMs: 10_000 });
      expect(listed).to.include({ code: 0, stdout: 'export A=1\nA=2', timedOut: false });
      // Nothing to stage: the directory is made all the same.
      const empty = host.sessionDir('s-2', join(localDir, 'empty'));
      await host.stage(from, [], empty);
      expect(await host.run(['test', '-d', empty], { timeoutMs: 10_000 })).to.include({ code: 0 });
      if (!host.remote) expect(statSync(join(to, 'shell-env.sh')).mode & 0o777).to.equal(0o600);
      const slow = await host.run(['sleep', '30'], { timeoutMs: 200 });
      expect(slow).to.include({ code: null, timedOut: true });
      const failed = await host.run(['sh', '-c', 'echo why >&2; exit 4'], { timeoutMs: 10_000 });
      expect(failed).to.include({ code: 4, stderr: 'why', timedOut: false });
      const fed = await host.run(['cat'], { input: 'fed', timeoutMs: 10_000 });
      expect(fed.stdout).to.equal('fed');
    });

    it('tethers, signals and tells the liveness of a group a tool of ours started', async function () {
      const started = await host.run(['sh', '-c', 'setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $!'], {
        timeoutMs: 10_000,
      });
      const pid = Number(started.stdout.trim());
      // `$!` is known before setsid has made the group: a tool of ours tethers a group that exists.
      await waitUntil('the group to be made', async () => {
        const group = await host.run(['ps', '-o', 'pgid=', '-p', String(pid)], { timeoutMs: 10_000 });
        return group.stdout.trim() === String(pid);
      });
      await host.tether(pid, 'a pane');
      expect(await host.isAlive(pid)).to.equal(true);
      await host.signalGroup(pid, 'SIGKILL');
      await waitUntil('the group to end', async () => !(await host.isAlive(pid)));
      host.release(pid);
    });
  });
}

describeHost('this machine (LocalHost)', () => {
  const dir = tempDir('ctl-host-');
  return Promise.resolve({
    host: localHost,
    dir,
    localDir: dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  });
});

describeHost('a host over OpenSSH (SshHost, a network-namespace host)', async () => {
  const why = hostsAvailable();
  if (why) return why;
  const hosts = await makeHosts(1);
  const [made] = hosts.hosts;
  const localDir = tempDir('ctl-ssh-host-');
  const host = new SshHost(hostConfigOf(made), {
    cityName: 'conformance',
    cityRoot: localDir,
    runtimeDir: join(localDir, '.ctl'),
  });
  await host.prepare();
  const dir = '/srv/ctl-work/conformance-programs';
  expect((await host.run(['mkdir', '-p', dir], { timeoutMs: 10_000 })).code).to.equal(0);
  return {
    host,
    dir,
    localDir,
    cleanup: async () => {
      await host.close();
      await hosts.cleanup();
      rmSync(localDir, { recursive: true, force: true });
    },
  };
});

describe('LocalHost', function () {
  it('stages nothing when the host directory is the local one', async function () {
    const dir = tempDir('ctl-host-');
    try {
      writeFileSync(join(dir, 'f'), 'x');
      await localHost.stage(dir, ['f'], localHost.sessionDir('s-1', dir));
      expect(readFileSync(join(dir, 'f'), 'utf8')).to.equal('x');
      expect(localHost.terminal(['tmux', 'attach'])).to.deep.equal(['tmux', 'attach']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
