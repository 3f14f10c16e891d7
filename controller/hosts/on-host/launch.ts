import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { LAUNCH_MARK, type LaunchSpec } from './launch-protocol.js';
import { forgetGroup, recordGroup, signalGroups } from './process-groups.js';

/**
 * `node launch.js <spec>`, run by the controller over its ssh connection for each program on a host: starts the
 * program in a process group of its own, with the host's login environment plus exactly the variables the spec
 * names, its stdin and stdout the channel's own (the pipe, ACP and codex-exec protocols speak over it unchanged),
 * and records the group where the host's watchdog finds it. It says the program's pid, then how it ended, on
 * stderr as marked lines (see `LAUNCH_MARK`), and ends what the program left in its group behind it.
 */

function main(): void {
  const spec = JSON.parse(Buffer.from(process.argv[2] ?? '', 'base64url').toString('utf8')) as LaunchSpec;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(spec.env)) {
    if (value === null) delete env[name];
    else if (name === 'PATH' && process.env.PATH) env.PATH = `${value}:${process.env.PATH}`;
    else env[name] = value;
  }
  const [file, ...args] = spec.argv;
  const say = (line: string) => process.stderr.write(`${LAUNCH_MARK}${line}\n`);
  // The channel closing while we write is the controller gone: the watchdog deals with what runs.
  process.stderr.on('error', () => undefined);
  process.on('SIGHUP', () => undefined);
  if (!existsSync(spec.cwd)) {
    say(`failed ${JSON.stringify(`its working directory ${spec.cwd} does not exist on the host`)}`);
    process.exit(127);
  }
  const child = spawn(file!, args, { cwd: spec.cwd, env, detached: true, stdio: ['inherit', 'inherit', 'pipe'] });
  child.once('error', (err: NodeJS.ErrnoException) => {
    const why = err.code === 'ENOENT' ? `${file} not found (is it installed and on PATH?)` : err.message;
    say(`failed ${JSON.stringify(why)}`);
    process.exit(127);
  });
  child.once('spawn', () => {
    recordGroup(spec.runDir, child.pid!, spec.what);
    say(`pid ${child.pid}`);
    child.stderr.pipe(process.stderr, { end: false });
  });
  // What it started goes with it: then its stderr (which they may hold) ends, and 'close' follows.
  child.once('exit', () => signalGroups([child.pid!], 'SIGKILL'));
  child.once('close', (code, signal) => {
    forgetGroup(spec.runDir, child.pid!);
    say(`exit ${JSON.stringify({ code, signal })}`);
    process.exit(code ?? 0);
  });
}

main();
