import { isDeepStrictEqual } from 'node:util';
import { parse as parseForPatch, parseDocument, patch, TomlFormat } from '@decimalturn/toml-patch';
import { parse } from 'smol-toml';

// Writing one `[providers.<name>]` table of a person's `city.toml` without touching anything else in it.
//
// toml-patch edits a document from a changed object while keeping comments and layout, but on a whole file it
// places things where no person would: a new provider becomes a dotted key at the top of the file, a key added
// to a table lands after the comment that introduces the next table, and removing a table removes that comment
// with it (it counts a table's trailing comments as its own). So it is given only the provider's own lines: the
// `[providers.<name>]` section and its sub-tables (`[providers.<name>.env]`), from the header to the last
// key/value line; the comments and blank lines after that belong to what follows and are never part of the edit.
// A new provider is a header inserted after the city's last `[providers.*]` table (or at the end of the file),
// then filled by toml-patch. Providers written in other forms (`[providers] mine = { … }`, dotted keys) are
// edited by toml-patch over the whole file. Whatever the path, the result is parsed again and compared with
// what was meant — the provider's table as asked, everything else as it was — and never returned otherwise.

/** A `[providers.<name>]` table as TOML values (strings, arrays of strings, tables of them, integers). */
export type ProviderTable = Record<string, unknown>;

/** The edit of a `city.toml` did not come out as intended (a form of file we do not edit safely). */
export class TomlEditError extends Error {}

interface Loc {
  start: { line: number; column: number };
  end: { line: number; column: number };
}
interface Node {
  type: string;
  loc: Loc;
  key?: { item?: { value: string[] }; value?: string[] };
  items?: Node[];
}

/**
 * `text` with the table of provider `name` set to `table` (created when missing), or removed when `table` is
 * undefined; every other byte as it was, but for the lines of that table (and a blank line that separates it).
 */
export function setProviderTable(text: string, name: string, table: ProviderTable | undefined): string {
  const before = parse(text) as Record<string, unknown>;
  const expected = structuredClone(before);
  const providers = { ...((expected.providers as Record<string, unknown> | undefined) ?? {}) };
  if (table === undefined) delete providers[name];
  else providers[name] = table;
  expected.providers = providers;

  const out = edit(text, name, table);
  let after: Record<string, unknown>;
  try {
    after = parse(out);
  } catch (err) {
    throw new TomlEditError(`editing providers.${name} gave a file that does not parse: ${(err as Error).message}`);
  }
  if (!isDeepStrictEqual(plain(withoutEmptyProviders(after)), plain(withoutEmptyProviders(expected)))) {
    throw new TomlEditError(`editing providers.${name} did not give the intended city.toml`);
  }
  return out;
}

/** A parsed value compared by content alone (smol-toml's tables have no prototype; dates compare by text). */
function plain(value: unknown): unknown {
  if (value instanceof Date) return `${value.constructor.name}:${String(value)}`;
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

function withoutEmptyProviders(doc: Record<string, unknown>): Record<string, unknown> {
  const providers = doc.providers as Record<string, unknown> | undefined;
  if (providers !== undefined && Object.keys(providers).length === 0) {
    const rest = { ...doc };
    delete rest.providers;
    return rest;
  }
  return doc;
}

function edit(text: string, name: string, table: ProviderTable | undefined): string {
  const blocks = parseDocument(text).cst as unknown as Node[];
  const format = TomlFormat.autoDetectFormat(text);
  // Sub-tables of a provider (env, permission_modes, …) are written inline: `env = { A = "1" }`.
  format.inlineTableStart = 2;
  const nl = format.newLine;
  const lines = lineStarts(text);

  const path = (b: Node): string[] | undefined =>
    b.type === 'Table' || b.type === 'TableArray'
      ? b.key?.item?.value
      : b.type === 'KeyValue'
        ? b.key?.value
        : undefined;
  const own: number[] = [];
  let elsewhere = false;
  let lastProviders = -1;
  for (const [i, block] of blocks.entries()) {
    const p = path(block);
    if (!p || p[0] !== 'providers') continue;
    if (block.type === 'Table') {
      lastProviders = i;
      if (p.length >= 2 && p[1] === name) own.push(i);
      else if (
        p.length === 1 &&
        (block.items ?? []).some((kv) => kv.type === 'KeyValue' && kv.key?.value?.[0] === name)
      )
        elsewhere = true;
    } else {
      // `providers = { … }` or `providers.x.y = …` at the top level, or `[[providers…]]`: not a layout we splice.
      elsewhere = true;
    }
  }
  const contiguous = own.every((index, k) => k === 0 || index === own[k - 1]! + 1);

  if (!elsewhere && own.length > 0 && contiguous) {
    const start = lines[blocks[own[0]!]!.loc.start.line - 1]!;
    const end = endOfLine(text, lines, contentEndLine(blocks[own[own.length - 1]!]!));
    const region = text.slice(start, end);
    if (table === undefined) return removeRegion(text, start, end);
    const object = parseForPatch(region) as { providers: Record<string, unknown> };
    object.providers[name] = table;
    return text.slice(0, start) + asRegion(patch(region, object, format), region, nl) + text.slice(end);
  }
  if (!elsewhere && own.length === 0 && table !== undefined) {
    const header = `[providers.${tomlKey(name)}]${nl}`;
    const block = asRegion(patch(header, { providers: { [name]: table } }, format), header, nl);
    if (lastProviders >= 0) {
      const at = endOfLine(text, lines, contentEndLine(blocks[lastProviders]!));
      const following = text.slice(at);
      const gap = following === '' || /^\r?\n/.test(following) ? '' : nl;
      return text.slice(0, at) + nl + block + gap + following;
    }
    let head = text;
    if (head !== '' && !head.endsWith('\n')) head += nl;
    if (head !== '' && !/(^|\n)\r?\n$/.test(head)) head += nl;
    return head + block;
  }
  if (own.length === 0 && !elsewhere && table === undefined) return text;
  // Another layout: toml-patch over the whole document, checked by the caller like any other edit.
  const object = parseForPatch(text) as Record<string, unknown>;
  const providers = { ...((object.providers as Record<string, unknown> | undefined) ?? {}) };
  if (table === undefined) delete providers[name];
  else providers[name] = table;
  object.providers = providers;
  return patch(text, object, format);
}

/** The last line holding the table's header or one of its key/values (comments after them are not its own). */
function contentEndLine(block: Node): number {
  let line = block.loc.start.line;
  for (const item of block.items ?? []) if (item.type === 'KeyValue') line = Math.max(line, item.loc.end.line);
  return line;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/** The offset just past line `line` (1-based), its newline included. */
function endOfLine(text: string, starts: number[], line: number): number {
  return line < starts.length ? starts[line]! : text.length;
}

/** toml-patch's output for a region, ending as the region did (one newline, or none at the end of a file). */
function asRegion(out: string, region: string, nl: string): string {
  const body = out.replace(/(\r?\n)+$/, '');
  return /\n$/.test(region) ? body + nl : body;
}

/**
 * `text` without [start, end); a blank line that would double the one before it goes too, and so do blank lines
 * that would end the file.
 */
function removeRegion(text: string, start: number, end: number): string {
  const head = text.slice(0, start);
  let tail = text.slice(end);
  if (tail === '') return head.replace(/(\r?\n)(\r?\n)+$/, '$1');
  const headEndsBlank = head === '' || /(^|\n)\r?\n$/.test(head);
  if (headEndsBlank) tail = tail.replace(/^\r?\n/, '');
  return head + tail;
}

/** A key as TOML writes it: bare when it can be, else quoted. */
function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}
