import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { packageRoot } from '../../shared/paths.js';
import { VERSION } from '../../shared/version.js';
import { shellQuote } from './ssh-command.js';
import type { SshConnection } from './ssh-connection.js';

/** What ctl ships to a host: its Node and the on-host tools, built in dist/host/ (controller/hosts/on-host/). */
const HOST_TOOLS = ['launch.js', 'watchdog.js'];
/** Shipping Node (about 120 MiB) over a slow link is the one long transfer a host ever gets. */
const SHIP_BOUND_MS = 10 * 60_000;

/** Where ctl's own programs are on a host, once shipped. */
export interface HostInstall {
  /** The Node binary ctl runs there. */
  node: string;
  /** The directory holding the on-host tools (`launch.js`, `watchdog.js`). */
  tools: string;
  nodeVersion: string;
  ctlVersion: string;
  /** What had to be shipped this time (nothing when the host had this version already). */
  shipped: ('node' | 'ctl')[];
}

/** Node's machine names for what `uname -m` says. */
const ARCH_OF_UNAME: Record<string, string> = { x86_64: 'x64', amd64: 'x64', aarch64: 'arm64', arm64: 'arm64' };

let toolsDigest: string | undefined;

/** The on-host tools' content address: a changed build ships again, an unchanged one never does. */
function _toolsDigest(): string {
  if (toolsDigest) return toolsDigest;
  const hash = createHash('sha256').update(VERSION);
  for (const tool of HOST_TOOLS) hash.update(tool).update(readFileSync(join(packageRoot, 'dist', 'host', tool)));
  toolsDigest = hash.digest('hex').slice(0, 16);
  return toolsDigest;
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
  const nodeDir = join(root, 'node', `${process.version}-${process.platform}-${process.arch}`);
  const toolsDir = join(root, 'ctl', _toolsDigest());
  const found = await conn.run(
    `test -x ${shellQuote(join(nodeDir, 'node'))} && echo node; test -f ${shellQuote(join(toolsDir, 'ready'))} && echo ctl; true`,
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
    await _ship(conn, join(packageRoot, 'dist', 'host'), HOST_TOOLS, toolsDir, 'ready');
    shipped.push('ctl');
  }
  return {
    node: join(nodeDir, basename(process.execPath)),
    tools: toolsDir,
    nodeVersion: process.version,
    ctlVersion: VERSION,
    shipped,
  };
}

/**
 * Copies `files` of `fromDir` into `toDir` on the host: unpacked beside it, `marker` (a file shipped, or `ready`,
 * written last) made, then renamed into place; a copy that lost the race to another controller is dropped.
 */
async function _ship(conn: SshConnection, fromDir: string, files: string[], toDir: string, marker: string) {
  const tar = spawn('tar', ['-C', fromDir, '-cf', '-', '--', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tarError = '';
  tar.stderr.setEncoding('utf8').on('data', (chunk: string) => (tarError += chunk));
  const to = shellQuote(toDir);
  const parent = shellQuote(dirname(toDir));
  const result = await conn.run(
    [
      'set -e',
      `mkdir -p ${parent}`,
      `t=$(mktemp -d ${parent}/.incoming-XXXXXX)`,
      'tar -xf - -C "$t"',
      marker === 'ready' ? 'touch "$t/ready"' : `test -e "$t/${marker}"`,
      `if [ -e ${to} ]; then rm -rf "$t"; else mv -T "$t" ${to} 2>/dev/null || rm -rf "$t"; fi`,
    ].join('\n'),
    { input: tar.stdout, timeoutMs: SHIP_BOUND_MS },
  );
  if (result.code !== 0) {
    const why = (tarError || result.stderr).trim() || (result.timedOut ? 'it took too long' : 'no answer');
    throw new Error(`cannot ship ctl's ${marker === 'ready' ? 'tools' : 'Node'} to ${toDir} on the host: ${why}`);
  }
}
