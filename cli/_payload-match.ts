import { canonicalJson } from '../shared/canonical-json.js';
import { CliError } from './_errors.js';

/** `--payload-match key=value` filters: the same key repeated is OR, different keys AND. */
export type PayloadMatchers = Map<string, string[]>;

export function parsePayloadMatchers(args: string[]): PayloadMatchers {
  const matchers: PayloadMatchers = new Map();
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq <= 0) throw new CliError(`invalid --payload-match ${JSON.stringify(arg)}: expected key=value`);
    const key = arg.slice(0, eq);
    matchers.set(key, [...(matchers.get(key) ?? []), arg.slice(eq + 1)]);
  }
  return matchers;
}

/** True when every key matches one of its values (no matchers: always). */
export function payloadMatches(payload: unknown, matchers: PayloadMatchers): boolean {
  if (matchers.size === 0) return true;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return false;
  for (const [key, values] of matchers) {
    const found = lookup(payload as Record<string, unknown>, key);
    if (found === undefined || !values.includes(asText(found.value))) return false;
  }
  return true;
}

/**
 * The value at a key: the whole key if the object has it literally (dots included); otherwise, for a dotted
 * key, the first segment's object and the rest of the key looked up in it the same way, so that
 * `bead.metadata.ctl.root` finds the literal key `ctl.root` inside `bead.metadata`.
 */
function lookup(object: Record<string, unknown>, key: string): { value: unknown } | undefined {
  if (Object.hasOwn(object, key)) return { value: object[key] };
  let dot = key.indexOf('.');
  while (dot > 0) {
    const head = key.slice(0, dot);
    const inner = object[head];
    if (Object.hasOwn(object, head) && typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
      const found = lookup(inner as Record<string, unknown>, key.slice(dot + 1));
      if (found) return found;
    }
    dot = key.indexOf('.', dot + 1);
  }
  return undefined;
}

/** A payload value as the text it is compared by: strings as they are, numbers shortest, JSON otherwise. */
function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  return canonicalJson(value);
}
