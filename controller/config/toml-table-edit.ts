import { isDeepStrictEqual } from 'node:util';
import { parse } from 'smol-toml';

// Editing one table of an array of tables (`[[agent]]`, `[[rigs]]`) in a person's TOML file, surgically: only the
// lines of that table change (a key's line replaced, added after the table's last key, or removed; a whole block
// appended or removed),
// so comments, layout and everything else stay byte for byte. We edit lines rather than re-serialise because no
// TOML library keeps a person's file as it was (toml-patch misplaces what it adds to arrays of tables); every
// edit is parsed again and compared with what was meant, and refused if it differs.

/** A value of a table we write (an object is an inline table of strings: `env = { A = "1" }`). */
export type TableValue = string | number | boolean | string[] | { [key: string]: string };

/** The edit did not come out as intended (a form of file we do not edit safely). */
export class TomlTableEditError extends Error {}

const ANY_HEADER = /^\s*\[/;
const escaped = (key: string) => key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\./g, '\\s*\\.\\s*');
const header = (key: string) => new RegExp(`^\\s*\\[\\[\\s*${escaped(key)}\\s*\\]\\]\\s*(#.*)?$`);
const subtable = (key: string) => new RegExp(`^\\s*\\[\\s*${escaped(key)}\\s*\\.[^\\]]*\\]\\s*(#.*)?$`);
const plainHeader = (key: string) => new RegExp(`^\\s*\\[\\s*${escaped(key)}\\s*\\]\\s*(#.*)?$`);

/** A bare TOML key, or a quoted one. */
function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** The value at a dotted path (`patches.agent`) of a parsed document. */
function getPath(doc: Record<string, unknown>, key: string): unknown {
  return key.split('.').reduce<unknown>((t, k) => (t as Record<string, unknown> | undefined)?.[k], doc);
}

/** Sets (or, with undefined, deletes) the value at a dotted path, making the tables on the way. */
function setPath(doc: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let t = doc;
  for (const part of parts.slice(0, -1)) t = (t[part] ??= {}) as Record<string, unknown>;
  const last = parts[parts.length - 1]!;
  if (value === undefined) delete t[last];
  else t[last] = value;
}

/** A TOML literal for a value. */
export function tomlValue(value: TableValue): string {
  if (Array.isArray(value)) return `[${value.map((v) => JSON.stringify(v)).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => `${tomlKey(k)} = ${JSON.stringify(v)}`);
    return entries.length ? `{ ${entries.join(', ')} }` : '{}';
  }
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** `text` with a new `[[key]]` table holding `fields` at its end. */
export function appendTable(text: string, key: string, fields: Record<string, TableValue>): string {
  const lines = [`[[${key}]]`, ...Object.entries(fields).map(([k, v]) => `${tomlKey(k)} = ${tomlValue(v)}`)];
  const sep = text === '' || text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  const out = `${text}${sep}${lines.join('\n')}\n`;
  const before = parse(text) as Record<string, unknown>;
  const expected = structuredClone(before);
  setPath(expected, key, [...((getPath(before, key) as unknown[] | undefined) ?? []), fields]);
  check(out, expected, `adding the [[${key}]] table`);
  return out;
}

/** `text` with the `index`-th `[[key]]` table's keys set (undefined removes a key). */
export function setTableKeys(
  text: string,
  key: string,
  index: number,
  keys: Record<string, TableValue | undefined>,
): string {
  const lines = text.split('\n');
  const block = blocks(lines, key)[index];
  if (!block) throw new TomlTableEditError(`city.toml has no [[${key}]] table number ${index + 1}`);
  const out = setKeys(lines, block.start + 1, block.mainEnd, keys).join('\n');
  const before = parse(text) as Record<string, unknown>;
  const expected = structuredClone(before);
  const table = (getPath(expected, key) as Record<string, unknown>[])[index];
  // The line scan found the table; the parse must too, unless a header-like line sits inside a multi-line string.
  if (!table) throw new TomlTableEditError(`city.toml has no [[${key}]] table number ${index + 1}`);
  applyKeys(table, keys);
  check(out, expected, `editing the [[${key}]] table`);
  return out;
}

/** `text` with the `index`-th `[[key]]` table removed (and a blank line that separated it). */
export function removeTable(text: string, key: string, index: number): string {
  const lines = text.split('\n');
  const block = blocks(lines, key)[index];
  if (!block) throw new TomlTableEditError(`city.toml has no [[${key}]] table number ${index + 1}`);
  let start = block.start;
  // Comments directly above the header describe it: they go with it.
  while (start > 0 && /^\s*#/.test(lines[start - 1]!)) start--;
  let end = block.end;
  if (end < lines.length && lines[end]!.trim() === '' && (start === 0 || lines[start - 1]!.trim() === '')) end++;
  const out = [...lines.slice(0, start), ...lines.slice(end)].join('\n');
  const before = parse(text) as Record<string, unknown>;
  const expected = structuredClone(before);
  const rest = (getPath(expected, key) as unknown[]).filter((_, i) => i !== index);
  setPath(expected, key, rest.length ? rest : undefined);
  const [top = ''] = key.split('.');
  if (key.includes('.') && Object.keys(getPath(expected, top) as object).length === 0) {
    setPath(expected, top, undefined);
  }
  check(out, expected, `removing the [[${key}]] table`);
  return out;
}

/** `text` with a `[key]` table (`imports.review`) holding `fields` at its end; refused when it exists. */
export function appendPlainTable(text: string, key: string, fields: Record<string, TableValue>): string {
  const lines = [`[${key}]`, ...Object.entries(fields).map(([k, v]) => `${tomlKey(k)} = ${tomlValue(v)}`)];
  const sep = text === '' || text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  const out = `${text}${sep}${lines.join('\n')}\n`;
  const expected = structuredClone(parse(text) as Record<string, unknown>);
  if (getPath(expected, key) !== undefined) throw new TomlTableEditError(`[${key}] is already there`);
  setPath(expected, key, fields);
  check(out, expected, `adding the [${key}] table`);
  return out;
}

/** `text` without its `[key]` table (`imports.review`): the header, its keys and the comments above it. */
export function removePlainTable(text: string, key: string): string {
  const lines = text.split('\n');
  const start0 = lines.findIndex((l) => plainHeader(key).test(l));
  if (start0 < 0) throw new TomlTableEditError(`there is no [${key}] table to remove (is it an inline table?)`);
  let end = start0 + 1;
  while (end < lines.length && !ANY_HEADER.test(lines[end]!)) end++;
  while (end > start0 + 1 && (lines[end - 1]!.trim() === '' || /^\s*#/.test(lines[end - 1]!))) end--;
  let start = start0;
  while (start > 0 && /^\s*#/.test(lines[start - 1]!)) start--;
  if (end < lines.length && lines[end]!.trim() === '' && (start === 0 || lines[start - 1]!.trim() === '')) end++;
  const out = [...lines.slice(0, start), ...lines.slice(end)].join('\n');
  const expected = structuredClone(parse(text) as Record<string, unknown>);
  setPath(expected, key, undefined);
  const parent = key.split('.').slice(0, -1).join('.');
  if (parent && Object.keys((getPath(expected, parent) as object | undefined) ?? {}).length === 0) {
    setPath(expected, parent, undefined);
  }
  check(out, expected, `removing the [${key}] table`);
  return out;
}

/** A file of one table at the top level (an `agent.toml`) with its keys set. */
export function setFileKeys(text: string, keys: Record<string, TableValue | undefined>): string {
  const lines = text.split('\n');
  let mainEnd = lines.findIndex((l) => ANY_HEADER.test(l));
  if (mainEnd < 0) mainEnd = lines.length;
  const out = setKeys(lines, 0, mainEnd, keys).join('\n');
  const expected = structuredClone(parse(text) as Record<string, unknown>);
  applyKeys(expected, keys);
  check(out, expected, 'editing the file');
  return out;
}

function applyKeys(table: Record<string, unknown>, keys: Record<string, TableValue | undefined>): void {
  for (const [key, value] of Object.entries(keys)) {
    if (value === undefined) delete table[key];
    else table[key] = value;
  }
}

/** Sets keys among lines [from, to): replacing a key's line, removing it, or adding after the last key line. */
function setKeys(lines: string[], from: number, to: number, keys: Record<string, TableValue | undefined>): string[] {
  const out = [...lines];
  let end = to;
  for (const [key, value] of Object.entries(keys)) {
    const pattern = new RegExp(`^\\s*${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*=`);
    const at = out.slice(from, end).findIndex((l) => pattern.test(l));
    if (at >= 0) {
      if (/"""|'''/.test(out[from + at]!)) {
        throw new TomlTableEditError(`${key} is a multi-line string; edit it by hand`);
      }
      if (value === undefined) {
        out.splice(from + at, 1);
        end--;
      } else {
        out[from + at] = `${tomlKey(key)} = ${tomlValue(value)}`;
      }
      continue;
    }
    if (value === undefined) continue;
    // After the last key line of the table (its trailing comments and blank lines belong to what follows).
    let insert = end;
    while (insert > from && (out[insert - 1]!.trim() === '' || /^\s*#/.test(out[insert - 1]!))) insert--;
    out.splice(insert, 0, `${tomlKey(key)} = ${tomlValue(value)}`);
    end++;
  }
  return out;
}

/** The `[[key]]` blocks: header line, end of its own keys (before sub-tables), end of the block. */
function blocks(lines: string[], key: string): { start: number; mainEnd: number; end: number }[] {
  const found: { start: number; mainEnd: number; end: number }[] = [];
  const blockHeader = header(key);
  const blockSubtable = subtable(key);
  for (let i = 0; i < lines.length; i++) {
    if (!blockHeader.test(lines[i]!)) continue;
    let mainEnd = -1;
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (!ANY_HEADER.test(lines[j]!)) continue;
      if (blockSubtable.test(lines[j]!)) {
        if (mainEnd < 0) mainEnd = j;
        continue;
      }
      break;
    }
    let end = j;
    while (end > i + 1 && (lines[end - 1]!.trim() === '' || /^\s*#/.test(lines[end - 1]!))) end--;
    found.push({ start: i, mainEnd: mainEnd < 0 ? end : mainEnd, end });
  }
  return found;
}

function check(out: string, expected: Record<string, unknown>, what: string): void {
  let after: unknown;
  try {
    after = parse(out);
  } catch (err) {
    throw new TomlTableEditError(`${what} gave a file that does not parse: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isDeepStrictEqual(plain(after), plain(expected))) {
    throw new TomlTableEditError(`${what} did not give the intended file`);
  }
}

/** A parsed value compared by content alone (smol-toml's tables have no prototype; integers may be bigints). */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))) as unknown;
}
