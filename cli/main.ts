#!/usr/bin/env node
// The `ctl` executable (package.json `bin`, `node dist/cli/main.js`). ctl runs on Node 22 or newer; a `ctl`
// started by an older Node (`npm link` puts this file on PATH with `#!/usr/bin/env node`, which on our machines
// is Node 20) runs itself again on the Node 24 that `npm ci` installed into node_modules/.bin. This file is kept
// to Node built-ins and syntax any Node runs, and loads nothing else until it knows which Node it is on.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const MIN_MAJOR = 22;

function bundledNode(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  // dist/cli/main.js → the project is two levels up; cli/main.ts (run from source) → one.
  for (const root of [resolve(here, '..', '..'), resolve(here, '..')]) {
    const node = join(root, 'node_modules', '.bin', 'node');
    if (existsSync(node)) return node;
  }
  return undefined;
}

async function runOn(node: string): Promise<void> {
  // Loaded only to re-exec: node:child_process brings net and streams, ~20 ms a fast `ctl` need not pay.
  const { spawn } = await import('node:child_process');
  const child = spawn(node, [...process.execArgv, process.argv[1] ?? '', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, CTL_REEXEC: process.version },
  });
  // A terminal's Ctrl-C reaches the whole process group, the child included: stay alive to report its exit.
  // Signals sent to this process alone (kill, systemd, a supervisor) are passed on.
  const relay = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', () => undefined);
  for (const signal of ['SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(signal, relay);
  child.on('error', (err) => {
    process.stderr.write(`ctl: cannot start ${node}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

const major = Number(process.versions.node.split('.')[0]);
if (major >= MIN_MAJOR) {
  // V8's compiled code for every module loaded from here on is kept on disk (NODE_COMPILE_CACHE, else
  // <tmpdir>/node-compile-cache) and reused by the next process: a fresh controller or `ctl` does not compile
  // ctl, Koa and tsoa again.
  module.enableCompileCache();
  await import('./ctl.js');
} else {
  const node = process.env.CTL_REEXEC ? undefined : bundledNode();
  if (node) await runOn(node);
  else {
    process.stderr.write(
      `ctl: needs Node ${MIN_MAJOR} or newer, and this is ${process.version}; ` +
        'run `npm ci` in the ctl checkout (it installs Node 24 into node_modules/.bin) or install Node 24\n',
    );
    process.exitCode = 1;
  }
}
