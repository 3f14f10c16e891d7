import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, posix, relative } from 'node:path';
import { packageRoot } from '../../shared/paths.js';
import { VERSION } from '../../shared/version.js';
import { shellQuote } from './ssh-command.js';
import type { SshConnection } from './ssh-connection.js';

/**
 * What of ctl's build a host gets: its package.json and the bundles a host runs — the on-host tools (dist/host/,
 * from controller/hosts/on-host/) and the CLI (dist/cli/, dist/chunks/, dist/shared/), so an agent's shell there
 * has the same `ctl` as here — without source maps or the dashboard (about 5 MiB).
 */
const SHIPPED_DIRS = ['dist/cli', 'dist/chunks', 'dist/shared', 'dist/host'];
/** Shipping Node (about 120 MiB) over a slow link is the one long transfer a host ever gets. */
const SHIP_BOUND_MS = 10 * 60_000;

/** Where ctl's own programs are on a host, once shipped. */
export interface HostInstall {
  /** The Node binary ctl runs there. */
  node: string;
  /** The directory holding the on-host tools (`launch.js`, `watchdog.js`). */
  tools: string;
  /** The `ctl` launcher there (ctl's shipped CLI on its shipped Node), for a session's PATH. */
  ctl: string;
  nodeVersion: string;
  ctlVersion: string;
  /** What had to be shipped this time (nothing when the host had this version already). */
  shipped: ('node' | 'ctl')[];
}

/** Node's machine names for what `uname -m` says. */
const ARCH_OF_UNAME: Record<string, string> = { x86_64: 'x64', amd64: 'x64', aarch64: 'arm64', arm64: 'arm64' };

let shipped: { files: string[]; digest: string } | undefined;

/** The build's files a host gets, and their content address: a changed build ships again, an unchanged one never. */
function _build(): { files: string[]; digest: string } {
  if (shipped) return shipped;
  const files = ['package.json', ...SHIPPED_DIRS.flatMap((dir) => _filesUnder(dir))].sort();
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(join(packageRoot, file)));
  shipped = { files, digest: hash.digest('hex').slice(0, 16) };
  return shipped;
}

function _filesUnder(dir: string): string[] {
  return readdirSync(join(packageRoot, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.map'))
    .map((entry) => relative(packageRoot, join(entry.parentPath, entry.name)));
}

/**
 * Makes sure the host has this controller's Node and on-host tools under `root` (the host's resolved
 * `work_root`), shipping what it lacks by `tar | ssh` into a fresh directory that is renamed into place only once
 * complete: content-addressed (`node/<version>-<platform>-<arch>/`, `ctl/<digest>/`), so two controllers, or two
 * versions, never share a half-written copy, and a version is shipped once per host. Nothing is installed outside
 * `root`, and the person is never asked to install ctl there. `arch`: the host's `uname -m`.
 */
export async function installOnHost(conn: SshConnection, root: string, arch: string): Promise<HostInstall> {
  if (ARCH_OF_UNAME[arch] !== process.arch) {
    throw new Error(
      `the host is ${arch || 'of an unknown architecture'} and ctl ships its own ${process.platform}-${process.arch} Node: ` +
        'a host of another architecture is not supported',
    );
  }
  const nodeDir = posix.join(root, 'node', `${process.version}-${process.platform}-${process.arch}`);
  const build = _build();
  const ctlDir = posix.join(root, 'ctl', build.digest);
  const found = await conn.run(
    `test -x ${shellQuote(join(nodeDir, 'node'))} && echo node; test -f ${shellQuote(posix.join(ctlDir, 'ready'))} && echo ctl; true`,
    { timeoutMs: 15_000 },
  );
  if (found.code !== 0) throw new Error(`cannot look for ctl on the host: ${found.stderr.trim() || 'no answer'}`);
  const present = new Set(found.stdout.split('\n'));
  const shipped: HostInstall['shipped'] = [];
  if (!present.has('node')) {
    await _ship(conn, dirname(process.execPath), [basename(process.execPath)], nodeDir, 'node');
    shipped.push('node');
  }
  if (!present.has('ctl')) {
    await _ship(conn, packageRoot, build.files, ctlDir, 'ready', _launcher(posix.join(nodeDir, 'node')));
    shipped.push('ctl');
  }
  return {
    node: posix.join(nodeDir, basename(process.execPath)),
    tools: posix.join(ctlDir, 'dist', 'host'),
    ctl: posix.join(ctlDir, 'bin', 'ctl'),
    nodeVersion: process.version,
    ctlVersion: VERSION,
    shipped,
  };
}

/** The lines that write the host's `ctl` launcher (in the unpacked directory `$t`), as the local one is. */
function _launcher(node: string): string[] {
  const script = `#!/bin/sh\n# ctl for this city's sessions on this host, shipped by its controller.\nexec ${shellQuote(node)} "$(dirname "$0")/../dist/cli/main.js" "$@"\n`;
  return ['mkdir -p "$t/bin"', `printf '%s' ${shellQuote(script)} > "$t/bin/ctl"`, 'chmod 755 "$t/bin/ctl"'];
}

/**
 * Copies `files` of `fromDir` into `toDir` on the host: unpacked beside it, `marker` (a file shipped, or `ready`,
 * written last) made, then renamed into place; a copy that lost the race to another controller is dropped.
 */
async function _ship(
  conn: SshConnection,
  fromDir: string,
  files: string[],
  toDir: string,
  marker: string,
  more: string[] = [],
) {
  const tar = spawn('tar', ['-C', fromDir, '-cf', '-', '--', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tarError = '';
  tar.stderr.setEncoding('utf8').on('data', (chunk: string) => (tarError += chunk));
  const to = shellQuote(toDir);
  const parent = shellQuote(posix.dirname(toDir));
  const result = await conn.run(
    [
      'set -e',
      `mkdir -p ${parent}`,
      // A name of this shell's own (its pid and the time), made by mkdir, which fails rather than share one.
      `t=${parent}/.incoming-$$-$(date +%s%N)`,
      'mkdir -m 700 "$t"',
      'tar -xf - -C "$t"',
      ...more,
      marker === 'ready' ? 'touch "$t/ready"' : `test -e "$t/${marker}"`,
      `if [ -e ${to} ]; then rm -rf "$t"; else mv -T "$t" ${to} 2>/dev/null || rm -rf "$t"; fi`,
    ].join('\n'),
    { input: tar.stdout, timeoutMs: SHIP_BOUND_MS },
  );
  if (result.code !== 0) {
    const why = (tarError || result.stderr).trim() || (result.timedOut ? 'it took too long' : 'no answer');
    throw new Error(`cannot ship ctl's ${marker === 'ready' ? 'build' : 'Node'} to ${toDir} on the host: ${why}`);
  }
}
