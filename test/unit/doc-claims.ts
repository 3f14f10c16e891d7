import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

// What a document can state mechanically, and the checks of it against the checkout: the files it names (code maps,
// backticked paths), the symbols it names (alone, or with their file), and its relative links. A grep, not a
// compile: a name counts as declared in a file when the file declares it (function, class, const, a member…).

/** A claim, with the line of the document it is on (1-based), for the failure's message. */
export interface Claim {
  line: number;
  text: string;
}

export interface SymbolClaim extends Claim {
  /** `Foo` of `Foo.bar()`, or the name alone. */
  name: string;
  /** `bar` of `Foo.bar()`. */
  member?: string;
  /** The path token the document names the symbol with (`handToSession` in `sling.ts`). */
  file?: string;
}

export interface DocClaims {
  paths: Claim[];
  symbols: SymbolClaim[];
  links: Claim[];
  /** Folders the document names that exist: bare file names in it are looked for in them. */
  folders: string[];
}

/** The checkout's top-level folders whose files a document may name by their path from the root. */
const REPO_FOLDERS = ['bench', 'cli', 'controller', 'docs', 'examples', 'shared', 'supervisor', 'test', 'tools', 'ui'];
const CODE_EXTENSION = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Not a path in the checkout: a placeholder, a glob, an elision, an alternative, a URL, an absolute path. */
const NOT_A_PATH = /[\s<>{}*…|$?=:,'"()[\]]|^\/|^~|^-/;
/** Not in a clone: what the build and the benches write (`generated/` is `npm run gen`'s, and git ignores it). */
const SKIPPED_FOLDERS = new Set(['node_modules', '.git', 'dist', '.bench-out', 'generated']);

/** Every file and folder of a clone (relative, `/`-separated; folders end with `/`): the build's output left out. */
export function checkoutEntries(root: string): Set<string> {
  const entries = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (SKIPPED_FOLDERS.has(entry.name)) continue;
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        entries.add(`${path}/`);
        walk(path);
      } else entries.add(path);
    }
  };
  walk('');
  return entries;
}

/** The prose of a document: fenced blocks (examples, diagrams) removed, lines kept so that line numbers hold. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ''));
}

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

function isPathToken(token: string): boolean {
  if (NOT_A_PATH.test(token) || token.startsWith('dist/') || token.includes('node_modules')) return false;
  // Beside the checkout (`../shared/spec/…`, the product's material): not the checkout's to check.
  if (/^\.\.\/(shared|reference)\//.test(token)) return false;
  const first = token.replace(/^(\.\.?\/)+/, '').split('/')[0];
  return CODE_EXTENSION.test(token) || (token.includes('/') && REPO_FOLDERS.includes(first ?? ''));
}

const IDENT = '[A-Za-z_$][A-Za-z0-9_$]*';
const MEMBER = /^([A-Z][A-Za-z0-9_$]*)\.([a-z_$][A-Za-z0-9_$]*)(\(\))?$/;
const CALL = new RegExp(`^(${IDENT})\\(\\)$`);
/** camelCase or PascalCase with a hump (a single word is as likely English as code), or a SCREAMING_CONSTANT. */
const NAME = /^(?:[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)$/;

function symbolOf(token: string): Pick<SymbolClaim, 'name' | 'member'> | undefined {
  if (/\.(md|json|jsonl|toml|txt|ya?ml|lock|log|sock)$/.test(token)) return undefined; // a file: `GEMINI.md`
  const member = MEMBER.exec(token);
  if (member) return { name: member[1], member: member[2] };
  const call = CALL.exec(token);
  if (call) return { name: call[1] };
  return NAME.test(token) ? { name: token } : undefined;
}

/**
 * Where the document ties a symbol to a file: "`S` in `P`", "`S` (`P`)", "`P`'s `S`", "`P`: `S`, `T`" (a code
 * map's entry, or "(`P`: `S`"). Whitespace between is any (a sentence wraps).
 */
function fileOfSymbols(text: string): Map<number, string> {
  const files = new Map<number, string>();
  const tick = '`([^`\\n]+)`';
  for (const m of text.matchAll(new RegExp(`${tick}\\s+in\\s+${tick}`, 'g'))) {
    if (isPathToken(m[2])) files.set(m.index, m[2]);
  }
  for (const m of text.matchAll(new RegExp(`${tick}\\s+\\(${tick}[),;:]`, 'g'))) {
    if (isPathToken(m[2])) files.set(m.index, m[2]);
  }
  for (const m of text.matchAll(new RegExp(`${tick}'s\\s+${tick}`, 'g'))) {
    if (isPathToken(m[1])) files.set(m.index + m[0].length - m[2].length - 2, m[1]);
  }
  for (const m of text.matchAll(new RegExp(`${tick}:\\s+((?:\`[^\`\\n]+\`(?:,\\s+|\\s+and\\s+)?)+)`, 'g'))) {
    if (!isPathToken(m[1])) continue;
    const start = m.index + m[0].length - m[2].length;
    for (const s of m[2].matchAll(/`[^`\n]+`/g)) files.set(start + s.index, m[1]);
  }
  return files;
}

/** The claims a document makes that can be checked mechanically. */
export function claimsOf(text: string, entries: Set<string>): DocClaims {
  const body = prose(text);
  const paths: Claim[] = [];
  const symbols: SymbolClaim[] = [];
  const links: Claim[] = [];
  const tiedFiles = fileOfSymbols(body);
  for (const m of body.matchAll(/`([^`\n]+)`/g)) {
    const token = m[1];
    const line = lineAt(body, m.index);
    if (isPathToken(token)) paths.push({ line, text: token });
    else {
      const symbol = symbolOf(token);
      if (symbol) symbols.push({ line, text: token, ...symbol, file: tiedFiles.get(m.index) });
    }
  }
  const outsideCode = body.replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
  for (const m of outsideCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)|^\[[^\]]+\]:\s+(\S+)/gm)) {
    const target = m[1] ?? m[2];
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ line: lineAt(outsideCode, m.index), text: target });
  }
  return { paths, symbols, links, folders: foldersOf(paths, entries) };
}

/**
 * The folders a document's names are relative to: every folder it names that exists, from the root or from a folder
 * already found (`controller/`, then `api/` in it), and the folders above them (`controller/` of
 * `controller/formulas/`, where the document says `molecules/run-views.ts`), and the folders of the files it names
 * from the root (`supervisor/event-hub.ts`, `event-view.ts`).
 */
function foldersOf(paths: Claim[], entries: Set<string>): string[] {
  const folders = new Set<string>();
  for (const { text } of paths) {
    const path = normalizedPath(text);
    if (path && !path.endsWith('/') && entries.has(path) && path.includes('/')) folders.add(`${dirname(path)}/`);
  }
  const named = paths.map((p) => p.text).filter((p) => p.endsWith('/'));
  for (let grew = true; grew;) {
    grew = false;
    for (const folder of named) {
      for (const base of ['', ...folders]) {
        const candidate = normalizedPath(base + folder);
        if (candidate && entries.has(candidate) && !folders.has(candidate)) {
          folders.add(candidate);
          grew = true;
        }
      }
    }
  }
  for (const folder of [...folders]) {
    for (let up = dirname(folder); up !== '.'; up = dirname(up)) folders.add(`${up}/`);
  }
  return [...folders];
}

function normalizedPath(path: string): string | undefined {
  const result = normalize(path).replace(/\\/g, '/');
  return result.startsWith('../') ? undefined : result;
}

/**
 * The files (or folders) of the checkout a path token names: from the root or the document's own folder, or, below
 * one of the folders the document names, a path that ends with it (`api/ioc.ts` in a document about `controller/`).
 */
export function resolvePath(token: string, docPath: string, folders: string[], entries: Set<string>): string[] {
  const found = new Set<string>();
  for (const base of ['', `${dirname(docPath)}/`]) {
    const candidate = normalizedPath(base + token);
    if (candidate && (entries.has(candidate) || entries.has(`${candidate}/`))) found.add(candidate);
  }
  if (found.size) return [...found];
  if (token.startsWith('../')) {
    for (const base of folders) {
      const candidate = normalizedPath(base + token);
      if (candidate && (entries.has(candidate) || entries.has(`${candidate}/`))) found.add(candidate);
    }
    return [...found];
  }
  for (const entry of entries) {
    if ((entry === token || entry.endsWith(`/${token}`)) && folders.some((folder) => entry.startsWith(folder))) {
      found.add(entry);
    }
  }
  return [...found];
}

/** A GitHub heading anchor: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = anchorOf(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

/** Why a relative link does not resolve, or undefined when it does (its file, and its heading when it names one). */
export function brokenLink(target: string, docPath: string, root: string): string | undefined {
  const [file, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = file ? join(root, dirname(docPath), decodeURIComponent(file)) : join(root, docPath);
  if (!existsSync(path)) return `${relative(root, path)} does not exist`;
  if (anchor === undefined || !path.endsWith('.md') || statSync(path).isDirectory()) return undefined;
  return anchorsOf(readFileSync(path, 'utf8')).has(anchor) ? undefined : `${relative(root, path)} has no #${anchor}`;
}

/** Every identifier that occurs in the checkout's source (and config) files: a name a document may use. */
export function sourceWords(sources: Map<string, string>): Set<string> {
  const words = new Set<string>();
  for (const text of sources.values()) for (const m of text.matchAll(/[A-Za-z_$][A-Za-z0-9_$]*/g)) words.add(m[0]);
  return words;
}

const DECLARATIONS = [
  /\b(?:function\*?|class|interface|type|enum|const|let|var|namespace)\s+([A-Za-z_$][\w$]*)/g,
  /^[ \t]*(?:(?:export|public|private|protected|static|async|readonly|get|set|override|abstract|declare|default)\s+)*\*?#?([A-Za-z_$][\w$]*)\s*[?!]?\s*[(<:=]/gm,
  /[{,]\s*['"]?([A-Za-z_$][\w$]*)['"]?\s*[:(]/g,
  /[{,]\s*([A-Za-z_$][\w$]*)\s*(?=[,}])/g,
];

/**
 * The names a file declares: functions, classes, types, variables, enums, members (methods, properties, keys of
 * object literals), what it exports by name.
 */
export function declaredNames(text: string): Set<string> {
  const names = new Set<string>();
  const code = text.replace(/^import\b[^;]*;/gm, ''); // an import's `{ a, b }` is not an object literal's
  for (const pattern of DECLARATIONS) for (const m of code.matchAll(pattern)) names.add(m[1]);
  for (const name of namesIn(text, /\bexport\s*(?:type\s*)?\{([^}]*)\}/g)) names.add(name);
  return names;
}

/** The names a file imports by name: names it uses ("`S` in `P`" holds of them too). */
export function importedNames(text: string): Set<string> {
  return new Set(namesIn(text, /\bimport\s*(?:type\s*)?\{([^}]*)\}/g));
}

function* namesIn(text: string, lists: RegExp): Iterable<string> {
  for (const m of text.matchAll(lists)) for (const name of m[1].matchAll(/[A-Za-z_$][\w$]*/g)) yield name[0];
}

/** Counts a document quotes of files, tests or lines ("61 files", "(84 lines)"), outside code spans. */
export function countsQuoted(text: string): Claim[] {
  const body = prose(text).replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
  return [...body.matchAll(/\b\d[\d,]*\s+(?:test\s+)?(?:files|tests|lines)\b/g)].map((m) => ({
    line: lineAt(body, m.index),
    text: m[0],
  }));
}
