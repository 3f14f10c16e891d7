// `npm run build`'s second half (after `npm run gen`): bundles ctl's own code into dist/ with esbuild.
//
// - dist/cli/main.js: the `ctl` executable, alone (Node built-ins only: it must run on an old Node to move
//   itself onto a new one, cli/main.ts).
// - dist/cli/ctl.js: the CLI. The supervisor and the controller are `ctl supervisor run` / `ctl controller run`,
//   so they are chunks of it (dist/chunks/), split at the dynamic imports that start them: a process loads its
//   entry and a few chunks, not the ~400 modules of the source tree, each resolved and read on its own.
// - dist/ui/: the dashboard, built by Vite (./ui.mjs).
// - Dependencies are bundled too, but for those in EXTERNAL (below), which load as their authors expect.
//
// Why esbuild: it is already installed (tsx runs on it, so no new dependency and the same TypeScript semantics
// as the tests), reads tsconfig's experimentalDecorators (tsoa's controllers), and does ESM code splitting.
// Type checking is `npm run typecheck` (tsc), which `npm test` runs.
import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { buildUi } from './ui.mjs';

const nodeRequire = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'dist');
const started = performance.now();
rmSync(dist, { recursive: true, force: true });

/**
 * Dependencies left in node_modules: native addons (loaded by path from their package), and packages that load
 * files of their own by path at run time (pino's transports and pino-pretty; irc-framework's CommonJS tree with
 * core-js polyfills); and react-devtools-core, which Ink loads only when DEV=true and it is installed (it is not). The
 * rest are bundled: resolving a package's imports (package.json reads, exports maps,
 * hundreds of small files — execa alone is ~100) cost `ctl help` more than running it.
 * iconv-lite too, the other way round: raw-body requires it, but loads its encodings (~500 KB of code a
 * bundle would carry, and V8 keep as source in every process) only to decode a charset, which we never ask of
 * it (shared/http/json-body.ts); left outside, the few small files of its entry are all that load.
 */
const EXTERNAL = [
  'better-sqlite3',
  'fs-ext',
  'pino',
  'pino-pretty',
  'irc-framework',
  'iconv-lite',
  'react-devtools-core',
];

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  sourcemap: 'linked',
  logLevel: 'warning',
  tsconfig: join(root, 'tsconfig.json'),
  // V8 keeps every loaded script's source text in the heap, and one non-Latin-1 character anywhere (an em dash
  // in a dependency's comment) stores a whole chunk as UTF-16, twice its size: that was ~7.5 MB of an idle
  // controller's heap. Without comments and indentation the output is ASCII (esbuild escapes the rest) and
  // about half as long, so less to keep and to parse. Names are kept (identifiers are not minified): a stack
  // trace in a log still names its functions, and the linked source maps give the lines.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'linked',
};

/** CommonJS dependencies bundled into ESM call require() for Node's built-ins, and so do our own imports of them. */
const REQUIRE_BANNER =
  "import { createRequire as __ctlCreateRequire } from 'node:module'; const require = __ctlCreateRequire(import.meta.url);";

/**
 * Node's built-in modules, imported by our ESM code, are taken through `require` instead. Importing a built-in as
 * ESM makes Node build its ESM facade, which reads every export — the lazy getters too: `node:http`'s WebSocket
 * loads Node's internal undici (~25 ms on a quiet 2-core machine, 60–80 ms under load, in every controller's
 * start), `node:crypto`'s webcrypto, `node:process`'s stdio streams. `require` returns the module object as it is,
 * and esbuild's interop reads a property only when our code uses it.
 */
/**
 * An ESM module re-exporting a built-in's exports, each read from the required module only if something imports
 * it (esbuild drops the unused ones). Not a CommonJS `module.exports = require(…)`: esbuild's interop would copy
 * every property's descriptor, which materializes V8's lazy ones (`util.diff` loads a module of its own).
 */
function builtinShim(specifier) {
  const names = Object.keys(nodeRequire(specifier)).filter(
    (name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== 'default',
  );
  return [
    `const builtin = require(${JSON.stringify(specifier)});`,
    'export default builtin;',
    // A property read is not side-effect free to esbuild (a getter might run); a pure call is.
    ...names.map((name) => `export const ${name} = /* @__PURE__ */ (() => builtin.${name})();`),
  ].join('\n');
}

/**
 * React's packages (`ctl top`'s Ink) pick their development or production build at run time from NODE_ENV; ctl
 * runs the production one, and bundles only it (the development reconciler alone is ~600 KB). Only these
 * packages' entry files see NODE_ENV as "production": a global `define` would change every dependency.
 */
const reactProduction = {
  name: 'react-production',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/](react|react-reconciler|scheduler)[\\/][^\\/]+\.js$/ }, async (args) => {
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(args.path, 'utf8');
      return { contents: text.replaceAll('process.env.NODE_ENV', '"production"'), loader: 'js' };
    });
  },
};

const builtinsThroughRequire = {
  name: 'builtins-through-require',
  setup(b) {
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    b.onResolve({ filter: /^(node:)?[a-z0-9_]+(\/[a-z0-9_]+)?$/ }, (args) =>
      args.kind === 'import-statement' && builtins.has(args.path)
        ? // One shim per importing module, so that each keeps only the names its importer uses.
          { path: `${args.path}?from=${relative(root, args.importer)}`, namespace: 'builtin-through-require' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'builtin-through-require' }, (args) => ({
      contents: builtinShim(args.path.split('?')[0]),
      loader: 'js',
    }));
  },
};

/**
 * Koa tests every response body with `instanceof Response` and `instanceof ReadableStream` (a fetch Response or
 * a web stream as a body). Reading those globals loads Node's internal undici (~25 ms on a quiet 2-core machine,
 * far more under load, and ~3 MB) and its web streams, on the first JSON answer of every process, though our
 * bodies are never either. Each test is rewritten to look at the value's own tag first (what a real Response or
 * ReadableStream, or a subclass, always carries), so the global is only read for a value that could be one.
 * The count of rewrites is checked, so a Koa release that changes these lines fails the build, not the speed.
 */
const KOA_WEB_BODY_TESTS = { 'response.js': 2, 'application.js': 2 };
const lazyWebGlobalsInKoa = {
  name: 'lazy-web-globals-in-koa',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]koa[\\/]lib[\\/](response|application)\.js$/ }, async (args) => {
      const file = args.path.split(/[\\/]/).pop();
      let count = 0;
      const source = (await readFile(args.path, 'utf8')).replace(
        /\b([A-Za-z_$][\w$]*) instanceof (Response|ReadableStream)\b/g,
        (_, value, name) => {
          count++;
          return `__ctlIsWebBody(${value}, '${name}')`;
        },
      );
      if (count !== KOA_WEB_BODY_TESTS[file]) {
        throw new Error(`koa/lib/${file}: ${count} web body tests rewritten, expected ${KOA_WEB_BODY_TESTS[file]}`);
      }
      const helper =
        'const __ctlIsWebBody = (value, name) => ' +
        'Object.prototype.toString.call(value) === `[object ${name}]` && value instanceof globalThis[name];\n';
      return { contents: helper + source, loader: 'js' };
    });
  },
};

/**
 * Fewer copies of what every process loads. mime-db, the ~150 KB media-type table, comes in two versions (koa's
 * mime-types takes 1.54, the older mime-types of accepts and type-is 1.52): both resolve to the newer one, a
 * superset. tsoa's validation takes 7 of validator's 100 functions, but requires its index, which loads them
 * all: it gets a module of those 7 (TSOA_VALIDATOR, checked against what tsoa calls when the bundle is built).
 */
const TSOA_VALIDATOR = ['isInt', 'toInt', 'isFloat', 'toFloat', 'equals', 'isISO8601', 'matches'];
const fewerCopies = {
  name: 'fewer-copies',
  setup(b) {
    const mimeDb = dirname(nodeRequire.resolve('mime-db/package.json'));
    b.onResolve({ filter: /^mime-db$/ }, () => ({ path: join(mimeDb, 'index.js') }));
    b.onResolve({ filter: /^validator$/ }, (args) =>
      /[\\/]@tsoa[\\/]runtime[\\/]/.test(args.importer)
        ? { path: 'tsoa-validator', namespace: 'fewer-copies' }
        : undefined,
    );
    b.onLoad({ filter: /^tsoa-validator$/, namespace: 'fewer-copies' }, async () => {
      const tsoaRuntime = dirname(nodeRequire.resolve('@tsoa/runtime/package.json'));
      const helpers = await readFile(join(tsoaRuntime, 'dist', 'routeGeneration', 'templateHelpers.js'), 'utf8');
      const called = new Set([...helpers.matchAll(/validator_1\.default\.(\w+)/g)].map((m) => m[1]));
      const missing = [...called].filter((name) => !TSOA_VALIDATOR.includes(name));
      if (missing.length > 0)
        throw new Error(`@tsoa/runtime calls validator.${missing.join(', ')}: add to TSOA_VALIDATOR`);
      // tsoa reads `validator.default.<name>` (its CommonJS interop): a default export of the functions.
      return {
        contents: [
          ...TSOA_VALIDATOR.map((name) => `import ${name} from 'validator/lib/${name}.js';`),
          `export default { ${TSOA_VALIDATOR.join(', ')} };`,
        ].join('\n'),
        resolveDir: tsoaRuntime,
        loader: 'js',
      };
    });
  },
};

/**
 * Dependencies' sources as ASCII, escaping each other character as \uXXXX (in strings, regular expressions and
 * comments alike, where it means the same). esbuild escapes strings but not regular expressions, and one
 * non-Latin-1 character (validator's alphabets) makes V8 keep a whole chunk's source as UTF-16, twice its size,
 * in every process that loads it. A character after a backslash cannot be escaped so: the build fails then.
 */
const asciiSources = {
  name: 'ascii-sources',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!/[\u0080-\uffff]/.test(source)) return undefined;
      const escaped = source.replace(/(\\*)([\u0080-\uffff])/g, (_, slashes, char) => {
        if (slashes.length % 2 === 1) throw new Error(`${args.path}: a non-ASCII character after a backslash`);
        return `${slashes}\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
      });
      return { contents: escaped, loader: 'js' };
    });
  },
};

await Promise.all([
  // The dashboard, in parallel with the rest (./ui.mjs).
  buildUi(),
  // The launcher: nothing but itself (its import of ./ctl.js is left for Node to resolve at run time).
  build({
    ...common,
    entryPoints: { 'cli/main': 'cli/main.ts' },
    outdir: dist,
    external: ['./ctl.js'],
    target: 'node18',
    plugins: [builtinsThroughRequire],
    banner: { js: REQUIRE_BANNER },
  }),
  // What runs on a remote host beside the shipped ctl (controller/hosts/on-host/): each file alone, Node
  // built-ins only, so a program's launch there loads one small file rather than the CLI.
  build({
    ...common,
    entryPoints: {
      'host/launch': 'controller/hosts/on-host/launch.ts',
      'host/watchdog': 'controller/hosts/on-host/watchdog.ts',
    },
    outdir: dist,
  }),
  build({
    ...common,
    // The event log alone too: writer processes outside ctl (test/fixtures/append-events.mjs,
    // bench/event-writer.mjs) append through the very EventLog the controllers use.
    entryPoints: { 'cli/ctl': 'cli/ctl.ts', 'shared/events/event-log': 'shared/events/event-log.ts' },
    outdir: dist,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    external: EXTERNAL,
    // reactProduction before asciiSources: the first plugin to load a file wins.
    plugins: [builtinsThroughRequire, lazyWebGlobalsInKoa, fewerCopies, reactProduction, asciiSources],
    banner: { js: REQUIRE_BANNER },
  }),
]);
process.stderr.write(`bundle: dist/ in ${Math.round(performance.now() - started)} ms\n`);
