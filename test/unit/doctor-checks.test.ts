import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { logSizeCheck, nodeCheck, portFree, runChecks, writableCheck, type Check } from '../../shared/doctor.js';
import { orphanCheck, packChecksOfLock, portCheck } from '../../controller/doctor/city-checks.js';
import { packChecks, scriptFinding, type PackCheck } from '../../controller/doctor/pack-checks.js';
import type { CommandResult } from '../../controller/commands.js';
import type { ComposedPack } from '../../controller/packs/composed-pack.js';
import { starttimeOf } from '../../controller/process-tether.js';

describe('doctor checks', function () {
  let dir: string;
  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), 'ctl-doctor-'));
  });
  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('--fix runs a check’s repair, then the check again, and says what the repair did', async function () {
    let broken = true;
    const check: Check = {
      id: 'x',
      run: () =>
        broken
          ? { status: 'fail', message: 'broken', fix: 'mend it', repair: () => ((broken = false), 'mended') }
          : { status: 'ok', message: 'fine' },
    };
    expect(await runChecks([check], false)).to.deep.equal([
      { id: 'x', status: 'fail', message: 'broken', fix: 'mend it', fixable: true },
    ]);
    expect(await runChecks([check], true)).to.deep.equal([
      { id: 'x', status: 'ok', message: 'fine', fixable: false, fixed: 'mended' },
    ]);
  });

  it('a check that throws fails, naming why', async function () {
    const [found] = await runChecks(
      [
        {
          id: 'y',
          run: () => {
            throw new Error('boom\nmore');
          },
        },
      ],
      false,
    );
    expect(found).to.deep.include({ status: 'fail', message: 'the check could not run: boom' });
  });

  it('Node older than 22 fails with how to get a newer one', async function () {
    const [old] = await runChecks([nodeCheck('node.version', '20.11.0')], false);
    expect(old).to.deep.include({ status: 'fail', message: 'Node 20.11.0 is older than 22' });
    expect(old.fix).to.match(/Node 24/);
    const [now] = await runChecks([nodeCheck('node.version', '24.1.0')], false);
    expect(now.status).to.equal('ok');
  });

  it('a directory missing or not writable fails', async function () {
    const [missing] = await runChecks([writableCheck('d', join(dir, 'nope'), 'the city')], false);
    expect(missing.message).to.match(/does not exist$/);
    const [ok] = await runChecks([writableCheck('d', dir, 'the city')], false);
    expect(ok.status).to.equal('ok');
  });

  it('an event log past its limit is a warning', async function () {
    const path = join(dir, 'events.jsonl');
    writeFileSync(path, 'x'.repeat(2000));
    const [big] = await runChecks([logSizeCheck('e', path, 1000, 'it rotates at 500 B', 'rotate')], false);
    expect(big).to.deep.include({ status: 'warn', fix: 'rotate' });
    expect(big.message).to.match(/is 2.0 KiB \(it rotates at 500 B\)$/);
    const [small] = await runChecks([logSizeCheck('e', path, 4000, 'n', 'rotate')], false);
    expect(small.status).to.equal('ok');
  });

  it('a port another program holds fails; a free one passes', async function () {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      expect(await portFree(port)).to.equal(false);
      const [held] = await runChecks([portCheck('p', port, 'web')], false);
      expect(held).to.deep.include({
        status: 'fail',
        message: `port ${port} of service web is in use by another program`,
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await portFree(port)).to.equal(true);
  });

  it('orphans: a live group no controller holds fails and is ended by the fix; records of the dead are stale', async function () {
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      writeFileSync(
        join(dir, `${pid}.json`),
        JSON.stringify({ pid, starttime: starttimeOf(pid), what: 'service web' }),
      );
      writeFileSync(join(dir, '4194311.json'), JSON.stringify({ pid: 4194311, starttime: '1', what: 'gone' }));
      writeFileSync(join(dir, 'garbled.json'), '{');
      const [found] = await runChecks([orphanCheck(dir)], false);
      expect(found).to.deep.include({ status: 'fail', fixable: true });
      expect(found.message).to.include(`${pid} (service web)`);
      const [fixed] = await runChecks([orphanCheck(dir)], true);
      expect(fixed.fixed).to.equal(
        `ended 1 orphan process group(s) (${pid}); removed 2 stale record(s) from .ctl/groups`,
      );
      expect(fixed.status).to.equal('ok');
      await exited;
      expect(existsSync(join(dir, `${pid}.json`))).to.equal(false);
    } finally {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already ended by the fix
      }
    }
  });

  it('a pid reused by another process is not an orphan: only the stale record goes', async function () {
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({ pid: process.pid, starttime: 'other', what: 'x' }),
    );
    const [found] = await runChecks([orphanCheck(dir)], false);
    expect(found).to.deep.include({ status: 'warn', message: '1 record(s) in .ctl/groups of processes that are gone' });
  });

  it('packs.lock entries nothing imports are a warning, dropped by the fix; a pack not fetched fails', async function () {
    writeFileSync(
      join(dir, 'packs.lock'),
      '[packs.review]\nsource = "https://example.com/r.git"\ncommit = "abc"\nfetched_at = "2026-01-01T00:00:00Z"\n' +
        '[packs.old]\nsource = "https://example.com/o.git"\ncommit = "def"\nfetched_at = "2026-01-01T00:00:00Z"\n',
    );
    const packs: ComposedPack[] = [
      {
        binding: 'review',
        namespace: 'review',
        source: 'https://example.com/r.git',
        file: 'city.toml',
        gitBacked: true,
        direct: true,
        commit: 'abc',
      },
      {
        binding: 'lint',
        namespace: 'lint',
        source: 'https://example.com/l.git',
        file: 'city.toml',
        gitBacked: true,
        direct: true,
        error: 'not fetched yet',
      },
    ];
    const checks = await runChecks(packChecksOfLock(dir, packs), true);
    expect(checks.find((c) => c.id === 'packs.lint')).to.deep.include({ status: 'fail' });
    expect(checks.find((c) => c.id === 'packs.lint')!.fix).to.match(/^ctl pack add https:\/\/example\.com\/l\.git/);
    expect(checks.find((c) => c.id === 'packs.lock')).to.deep.include({
      status: 'ok',
      fixed: 'dropped old from packs.lock',
    });
    const lock = readFileSync(join(dir, 'packs.lock'), 'utf8');
    expect(lock).to.include('[packs.review]').and.not.include('[packs.old]');
  });

  it('finds a pack’s [[doctor]] entries and doctor/<name>/ directories; a script outside the pack is refused', function () {
    mkdirSync(join(dir, 'doctor', 'bins'), { recursive: true });
    writeFileSync(join(dir, 'doctor', 'bins', 'run.sh'), 'exit 0');
    mkdirSync(join(dir, 'doctor', 'custom'), { recursive: true });
    writeFileSync(join(dir, 'doctor', 'custom', 'doctor.toml'), 'run = "check.sh"\ndescription = "custom"\n');
    writeFileSync(join(dir, 'doctor', 'custom', 'check.sh'), 'exit 0');
    mkdirSync(join(dir, 'doctor', 'empty'));
    mkdirSync(join(dir, 'doctor', '_private'));
    writeFileSync(join(dir, 'doctor', '_private', 'run.sh'), 'exit 0');
    const found = packChecks('tools', dir, [
      { name: 'declared', script: 'scripts/d.sh', timeoutMs: 5000 },
      { name: 'escape', script: '../x.sh', timeoutMs: 5000 },
    ]);
    expect(found.map((c) => c.id)).to.deep.equal([
      'pack.tools.declared',
      'pack.tools.escape',
      'pack.tools.bins',
      'pack.tools.custom',
    ]);
    expect(found[1]).to.deep.equal({ id: 'pack.tools.escape', broken: 'script ../x.sh lies outside the pack' });
    expect((found[3] as PackCheck).script).to.equal(join(dir, 'doctor', 'custom', 'check.sh'));
    expect((found[3] as PackCheck).description).to.equal('custom');
  });

  it('a check script’s exit status: 0 ok, 1 warn, 2 fail; its first line the message, the rest details', function () {
    const check: PackCheck = {
      id: 'pack.t.c',
      binding: 't',
      name: 'c',
      script: join(dir, 'c.sh'),
      packDir: dir,
      timeoutMs: 1000,
    };
    const result = (exitCode: number | null, stdout: string, extra: Partial<CommandResult> = {}): CommandResult => ({
      exitCode,
      signal: null,
      output: stdout,
      stdout,
      durationMs: 1,
      timedOut: false,
      ...extra,
    });
    expect(scriptFinding(check, result(0, 'fine\n'))).to.deep.equal({ status: 'ok', message: 'fine' });
    expect(scriptFinding(check, result(1, 'hmm\n  a\n\nb\n'))).to.deep.include({
      status: 'warn',
      message: 'hmm',
      details: ['a', 'b'],
    });
    expect(scriptFinding(check, result(2, 'bad'))).to.deep.include({ status: 'fail', message: 'bad' });
    expect(scriptFinding(check, result(126, '', { output: 'sh: c.sh: Permission denied' }))).to.deep.include({
      status: 'fail',
      message: 'sh: c.sh: Permission denied',
    });
    expect(scriptFinding(check, result(null, '', { timedOut: true }))).to.deep.include({
      status: 'fail',
      message: 'c: did not finish within 1s',
    });
  });
});
