import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import {
  brokenLink,
  checkoutEntries,
  claimsOf,
  countsQuoted,
  declaredNames,
  importedNames,
  resolvePath,
  sourceWords,
  type DocClaims,
  type SymbolClaim,
} from './doc-claims.js';

// The architecture documents (and the README's links) against the checkout: every file they name exists, every
// symbol they name exists (in the file they name it with, when they do), every relative link resolves. What a
// document cannot be checked on mechanically (what the code does) is for its readers; what it can, is here. A
// document quotes no count of files or tests: a count no test computes is wrong by the next commit.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = 'docs/architecture';
const SKIPPED = ['package-lock.json', 'test/unit/architecture-docs.test.ts', 'test/unit/doc-claims.ts'];
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs|json|toml|ya?ml|css|html|sh)$/;

const entries = checkoutEntries(ROOT);
const sources = new Map(
  [...entries]
    // Not this check's own files: the names made up for its own test below would be found in them.
    .filter((path) => SOURCE.test(path) && !path.startsWith('docs/') && !SKIPPED.includes(path))
    .map((path) => [path, readFileSync(join(ROOT, path), 'utf8')]),
);
const words = sourceWords(sources);
const declared = new Map([...sources].map(([path, text]) => [path, declaredNames(text)]));
const imported = new Map([...sources].map(([path, text]) => [path, importedNames(text)]));
const declares = (path: string, name: string) => declared.get(path)?.has(name) ?? false;
/** Whether a file holds a name: declares it, imports it, or (an environment variable's) mentions it. */
const holds = (path: string, name: string) =>
  declares(path, name) ||
  (imported.get(path)?.has(name) ?? false) ||
  (/^[A-Z][A-Z0-9]*_[A-Z0-9_]+$/.test(name) && new RegExp(`\\b${name}\\b`).test(sources.get(path)!));
const docs = readdirSync(join(ROOT, DOCS))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `${DOCS}/${name}`);

const claims = new Map<string, DocClaims>(
  [...docs, 'README.md'].map((doc) => [doc, claimsOf(readFileSync(join(ROOT, doc), 'utf8'), entries)]),
);
const claimsOfDoc = (doc: string) => claims.get(doc)!;

/** A path exists in a clone, or (a file in a `generated/` folder) is one the build's generator says it writes. */
const exists = (path: string, doc: string) =>
  resolvePath(path, doc, claimsOfDoc(doc).folders, entries).length > 0 ||
  (/(^|\/)generated\//.test(path) && sources.get('tools/openapi/generate.ts')!.includes(path));

/** Every failure on a line of its own: chai cuts a long array short. */
const listed = (lines: string[]) => `\n${lines.join('\n')}\n`;

/** The files that declare a name (a class, an interface, a type…). */
const declaringFiles = (name: string) => [...declared].filter(([, names]) => names.has(name)).map(([path]) => path);

/** Why a symbol claim does not hold, or undefined. */
function symbolProblem(claim: SymbolClaim, doc: string, folders: string[]): string | undefined {
  if (claim.file !== undefined) {
    const files = resolvePath(claim.file, doc, folders, entries).filter((path) => sources.has(path));
    if (!files.length) return `its file \`${claim.file}\` is not in the checkout`;
    const holders = files.filter((path) => holds(path, claim.name));
    if (!holders.length) return `\`${claim.file}\` declares no \`${claim.name}\``;
    if (claim.member && !holders.some((path) => declares(path, claim.member!))) {
      return `\`${claim.file}\` declares no member \`${claim.member}\``;
    }
    return undefined;
  }
  if (claim.member) {
    const holders = declaringFiles(claim.name);
    if (!holders.length) return claim.name in globalThis ? undefined : `nothing declares \`${claim.name}\``;
    return holders.some((path) => declares(path, claim.member!))
      ? undefined
      : `\`${claim.name}\` (${holders.join(', ')}) declares no member \`${claim.member}\``;
  }
  return words.has(claim.name) ? undefined : `\`${claim.name}\` occurs nowhere in the code`;
}

describe('architecture docs against the code (docs/architecture/*.md)', () => {
  it('reads every document and finds what they claim', () => {
    expect(docs.length).to.be.above(10);
    const all = [...claims.values()];
    expect(all.flatMap((c) => c.paths).length).to.be.above(300);
    expect(all.flatMap((c) => c.symbols).filter((s) => s.file).length).to.be.above(50);
    expect(all.flatMap((c) => c.links).length).to.be.above(30);
  });

  for (const doc of docs) {
    describe(doc, () => {
      it('names only files and folders that exist', () => {
        const { paths } = claimsOfDoc(doc);
        const missing = paths.filter((p) => !exists(p.text, doc));
        const named = missing.map((p) => `${doc}:${p.line}: \`${p.text}\``);
        expect(named, listed(named)).to.deep.equal([]);
      });

      it('names only symbols that exist, in the file it names them with', () => {
        const { symbols, folders } = claimsOfDoc(doc);
        const wrong = symbols.flatMap((s) => {
          const problem = symbolProblem(s, doc, folders);
          return problem ? [`${doc}:${s.line}: \`${s.text}\`: ${problem}`] : [];
        });
        expect(wrong, listed(wrong)).to.deep.equal([]);
      });

      it('quotes no count of files, tests or lines (no test keeps it true)', () => {
        const quoted = countsQuoted(readFileSync(join(ROOT, doc), 'utf8')).map((c) => `${doc}:${c.line}: ${c.text}`);
        expect(quoted, listed(quoted)).to.deep.equal([]);
      });

      it('links only to files and headings that exist', () => {
        const broken = claimsOfDoc(doc).links.flatMap((l) => {
          const why = brokenLink(l.text, doc, ROOT);
          return why ? [`${doc}:${l.line}: (${l.text}): ${why}`] : [];
        });
        expect(broken, listed(broken)).to.deep.equal([]);
      });
    });
  }

  it('README.md names only files that exist, and its relative links resolve', () => {
    const { paths } = claimsOfDoc('README.md');
    const missing = paths.filter((p) => !exists(p.text, 'README.md'));
    expect(missing.map((p) => `README.md:${p.line}: \`${p.text}\``)).to.deep.equal([]);
    const broken = claimsOfDoc('README.md').links.flatMap((l) => {
      const why = brokenLink(l.text, 'README.md', ROOT);
      return why ? [`README.md:${l.line}: (${l.text}): ${why}`] : [];
    });
    expect(broken, listed(broken)).to.deep.equal([]);
  });

  it('tests.md: no test asserts a wall-clock bound (speed is a bench figure)', () => {
    const timed = [...sources].flatMap(([path, text]) =>
      /^test\/.*\.test\.ts$/.test(path)
        ? [...text.matchAll(/expect\(\s*(?:Date|performance)\.now\(\)\s*-/g)].map(
            (m) => `${path}:${text.slice(0, m.index).split('\n').length}`,
          )
        : [],
    );
    expect(timed, listed(timed)).to.deep.equal([]);
  });

  it('catches a document that names what is gone (the check itself, on a document made up for it)', () => {
    const doc = `${DOCS}/made-up.md`;
    const text = [
      '# Made up (`controller/`)',
      '- `main.ts`: `run()`; `controller/gone-away.ts` and `api/gone-routes.ts`: nothing.',
      '- `noSuchFunction` in `controller/main.ts`; `commands.ts`: `CommandRunner`, `NoSuchRunner`.',
      '- `ConfigInUse.reloadFromDisk`, `ConfigInUse.noSuchMember()`, `noSuchHelperAnywhere`, `waitUntil`.',
      '[a](controller.md#code-map), [b](gone.md), [c](controller.md#no-such-heading), [d](https://example.com/x).',
      'A count: 12 files, and 3 tests.',
    ].join('\n');
    const made = claimsOf(text, entries);
    expect(
      made.paths.filter((p) => !resolvePath(p.text, doc, made.folders, entries).length).map((p) => p.text),
    ).to.deep.equal(['controller/gone-away.ts', 'api/gone-routes.ts']);
    expect(
      made.symbols.flatMap((s) => {
        const problem = symbolProblem(s, doc, made.folders);
        return problem ? [`${s.text}: ${problem}`] : [];
      }),
    ).to.deep.equal([
      'noSuchFunction: `controller/main.ts` declares no `noSuchFunction`',
      'NoSuchRunner: `commands.ts` declares no `NoSuchRunner`',
      'ConfigInUse.noSuchMember(): `ConfigInUse` (controller/config/config-in-use.ts) declares no member `noSuchMember`',
      'noSuchHelperAnywhere: `noSuchHelperAnywhere` occurs nowhere in the code',
    ]);
    expect(made.links.map((l) => [l.text, brokenLink(l.text, doc, ROOT)])).to.deep.equal([
      ['controller.md#code-map', undefined],
      ['gone.md', 'docs/architecture/gone.md does not exist'],
      ['controller.md#no-such-heading', 'docs/architecture/controller.md has no #no-such-heading'],
    ]);
    expect(countsQuoted(text).map((c) => c.text)).to.deep.equal(['12 files', '3 tests']);
  });
});
