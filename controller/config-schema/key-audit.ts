/**
 * What a configuration file says that ctl does not do. Each table ctl reads has a spec naming the keys it acts on
 * and the keys of the reference system it knows but does not support (with why); the audit walks a parsed file
 * against it. A key it does not act on is never dropped without a word: a reference key is a warning ("not
 * supported: …"), any other key an error with the nearest known key suggested (a typo, most likely).
 */

import { editDistance } from '../../shared/text/edit-distance.js';

/** How a key is read: a value ctl acts on (`true`), a table it audits too, or a table of named tables (`each`). */
export type KeySpec = true | TableSpec | { each: TableSpec };

export interface TableSpec {
  /** The keys ctl acts on. */
  keys: Record<string, KeySpec>;
  /** Keys of the reference ctl knows but does not act on, each with why (what ctl does instead). */
  unsupported?: Record<string, string>;
  /** An unknown key here is a warning, not an error (a pack's top level: a newer pack may have more tables). */
  lenient?: boolean;
  /** Free-form: the keys are names, not settings (`env`); nothing in it is audited. */
  open?: boolean;
}

export interface KeyFinding {
  /** The file, as the city names it (`city.toml`, `pack:review/pack.toml`). */
  file: string;
  /** Where in it, dotted (`session.provider`, `agent[2].nudge`). */
  key: string;
  /** `unsupported`: a reference key ctl does not act on (a warning); `unknown`: a key nobody defines (an error). */
  kind: 'unsupported' | 'unknown';
  message: string;
}

/**
 * The findings of one parsed file against its spec; `file` names it in them.
 */
export function auditKeys(doc: Record<string, unknown>, spec: TableSpec, file: string): KeyFinding[] {
  const findings: KeyFinding[] = [];
  walk(doc, spec, { file, path: '', header: '', findings });
  return findings;
}

interface Walk {
  file: string;
  /** The dotted path of the table being walked ('' at the top). */
  path: string;
  /** How the table is shown in messages: `[session]`, `[[agent]]`, '' at the top. */
  header: string;
  /** Which element of an array of tables, for the reader (`agent mayor`). */
  which?: string;
  findings: KeyFinding[];
}

function walk(table: Record<string, unknown>, spec: TableSpec, at: Walk): void {
  if (spec.open) return;
  for (const [key, value] of Object.entries(table)) {
    const path = at.path ? `${at.path}.${key}` : key;
    const known = spec.keys[key];
    if (known !== undefined) {
      if (known === true) continue;
      const header = (array: boolean) => (array ? `[[${path.replace(/\[\d+\]/g, '')}]]` : `[${path}]`);
      if ('each' in known) {
        if (!isTable(value)) continue;
        for (const [name, inner] of Object.entries(value)) {
          if (isTable(inner)) walk(inner, known.each, { ...at, path: `${path}.${name}`, header: `[${path}.${name}]` });
        }
      } else if (Array.isArray(value)) {
        for (const [i, inner] of value.entries()) {
          if (!isTable(inner)) continue;
          const which = typeof inner.name === 'string' ? `${key} ${inner.name}` : `${key} #${i + 1}`;
          walk(inner, known, { ...at, path: `${path}[${i}]`, header: header(true), which });
        }
      } else if (isTable(value)) {
        walk(value, known, { ...at, path, header: header(false) });
      }
      continue;
    }
    const why = spec.unsupported?.[key];
    const where = at.which ? ` (${at.which})` : '';
    if (why !== undefined) {
      at.findings.push({
        file: at.file,
        key: path,
        kind: 'unsupported',
        message: `not supported: \`${shown(at.header, key, value)}\`${where} — ${why}`,
      });
      continue;
    }
    const candidates = [...Object.keys(spec.keys), ...Object.keys(spec.unsupported ?? {})];
    const near = nearest(key, candidates);
    const table = at.header || at.file;
    const kind = isTable(value) || (Array.isArray(value) && value.every(isTable)) ? 'table' : 'key';
    at.findings.push({
      file: at.file,
      key: path,
      kind: spec.lenient ? 'unsupported' : 'unknown',
      message:
        `unknown ${kind} \`${key}\` in ${table}${where}` +
        (near ? ` — did you mean \`${near}\`?` : ` (known here: ${candidates.sort().join(', ')})`) +
        (spec.lenient ? ': ignored' : ''),
    });
  }
}

/** `[session] provider = "k8s"`, `[session.k8s]`, `[[named_session]]`: the key as a person wrote it. */
function shown(header: string, key: string, value: unknown): string {
  const prefix = header ? `${header} ` : '';
  const base = header.replace(/^\[+|\]+$/g, '');
  const full = base ? `${base}.${key}` : key;
  if (Array.isArray(value) && value.length > 0 && value.every(isTable)) return `[[${full}]]`;
  if (isTable(value)) return `[${full}]`;
  return `${prefix}${key} = ${tomlValue(value)}`;
}

/** A short TOML rendering of a value, for a message. */
function tomlValue(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (Array.isArray(value)) text = `[${value.map(tomlValue).join(', ')}]`;
  else if (value instanceof Date) text = value.toISOString();
  else text = String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/**
 * The candidate nearest to `key` by edit distance, when it is near enough to be a typo of it (at most a third of
 * its length, and 1 for short keys); undefined otherwise.
 */
export function nearest(key: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance || (d === bestDistance && best !== undefined && candidate < best)) {
      best = candidate;
      bestDistance = d;
    }
  }
  const allowed = Math.max(1, Math.floor(key.length / 3));
  return bestDistance <= allowed ? best : undefined;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}
