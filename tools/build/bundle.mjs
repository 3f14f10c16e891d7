// `npm run build`'s second half (after `npm run gen`): bundles ctl's own code into dist/ with esbuild.
//
// - dist/cli/main.js: the `ctl` executable, alone (Node built-ins only: it must run on an old Node to move
//   itself onto a new one, cli/main.ts).
// - dist/cli/ctl.js: the CLI. The supervisor and the controller are `ctl supervisor run` / `ctl controller run`,
//   so they are chunks of it (dist/chunks/), split at the dynamic imports that start them: a process loads its
//   entry and a few chunks, not the ~400 modules of the source tree, each resolved and read on its own.
// - Dependencies (node_modules) stay outside, imported as they are: native addons, pino's workers and tsoa's
//   CommonJS runtime load as their authors expect, and installs need no rebuild of ctl.
//
// Why esbuild: it is already installed (tsx runs on it, so no new dependency and the same TypeScript semantics
// as the tests), reads tsconfig's experimentalDecorators (tsoa's controllers), and does ESM code splitting.
// Type checking is `npm run typecheck` (tsc), which `npm test` runs.
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'dist');
const started = performance.now();
rmSync(dist, { recursive: true, force: true });

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  sourcemap: 'linked',
  logLevel: 'warning',
  tsconfig: join(root, 'tsconfig.json'),
};

await Promise.all([
  // The launcher: nothing but itself (its import of ./ctl.js is left for Node to resolve at run time).
  build({
    ...common,
    entryPoints: { 'cli/main': 'cli/main.ts' },
    outdir: dist,
    external: ['./ctl.js'],
    target: 'node18',
  }),
  build({
    ...common,
    entryPoints: { 'cli/ctl': 'cli/ctl.ts' },
    outdir: dist,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    packages: 'external',
  }),
]);
process.stderr.write(`bundle: dist/ in ${Math.round(performance.now() - started)} ms\n`);
