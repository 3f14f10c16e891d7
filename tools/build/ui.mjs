// The dashboard (ui/): built by Vite into dist/ui/, which the supervisor serves at /ui/ (supervisor/dashboard.ts).
//
// Why Vite: it bundles the page for browsers (hashed file names the supervisor can cache for good, CSS
// extracted, code split per view) with no configuration file to keep, and its dev server is there for whoever
// works on the page. JSX goes through Vite's own transformer (Oxc) set to Preact's automatic runtime, so no
// Babel-based preset is needed. `base: '/ui/'` because the page is served there, same origin as the API.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function buildUi() {
  await build({
    configFile: false,
    root: join(root, 'ui'),
    base: '/ui/',
    logLevel: 'warn',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
    build: {
      outDir: join(root, 'dist', 'ui'),
      emptyOutDir: true,
      target: 'es2022',
      // The page asks for nothing but its own origin: no inline script the CSP would refuse.
      modulePreload: { polyfill: false },
      assetsInlineLimit: 0,
      reportCompressedSize: false,
      chunkSizeWarningLimit: 300,
    },
  });
}
