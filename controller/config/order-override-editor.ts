import { isDeepStrictEqual } from 'node:util';
import { patch } from '@decimalturn/toml-patch';
import { parse } from 'smol-toml';
import { Problem } from '../../shared/http/problem.js';
import { editConfigFile, type ConfigFileHost } from './config-file-edit.js';

/** The edit of `city.toml` did not come out as intended (a form of file not edited safely). */
export class OrderOverrideEditError extends Error {}

/**
 * `POST /order/{name}/enable|disable`: `enabled` in the order's `[[orders.overrides]]` entry of `city.toml`,
 * through the edit funnel like every write of the file (composed first; a refused edit leaves it untouched).
 */
export class OrderOverrideEditor {
  constructor(private readonly host: ConfigFileHost) {}

  setEnabled(name: string, enabled: boolean, rig?: string): void {
    editConfigFile(this.host, 'city.toml', (text) => {
      try {
        return setOrderEnabled(text, name, enabled, rig);
      } catch (err) {
        if (!(err instanceof OrderOverrideEditError)) throw err;
        throw new Problem('conflict-wrong-state', `conflict: city.toml could not be edited safely: ${err.message}`);
      }
    });
  }
}

// `enable`/`disable` of an order write `enabled` into the city's `[[orders.overrides]]` entry for it, keeping
// every other byte of a person's `city.toml`. An existing entry has its value changed in place (toml-patch keeps
// layout and comments when only a value changes); a new entry is appended at the end of the file as its own
// `[[orders.overrides]]` table, where toml-patch would have put an inline table at the top. Either way the result
// is parsed again and compared with what was meant, and never returned otherwise.

/** `text` with order `name`'s override (of its instance in `rig`, when given) saying `enabled`. */
export function setOrderEnabled(text: string, name: string, enabled: boolean, rig?: string): string {
  const before = parse(text) as Record<string, unknown>;
  const expected = structuredClone(before) as { orders?: { overrides?: Record<string, unknown>[] } };
  const overrides = expected.orders?.overrides;
  const index = overrides?.findIndex((o) => o.name === name && o.rig === rig) ?? -1;
  let out: string;
  if (index >= 0) {
    overrides![index]!.enabled = enabled;
    out = patch(text, expected);
  } else {
    expected.orders ??= {};
    expected.orders.overrides = [...(overrides ?? []), { name, ...(rig !== undefined ? { rig } : {}), enabled }];
    const nl = text.includes('\r\n') ? '\r\n' : '\n';
    const body = text.length === 0 || text.endsWith(nl) ? text : text + nl;
    const rigLine = rig !== undefined ? `rig = ${JSON.stringify(rig)}${nl}` : '';
    out = `${body}${nl}[[orders.overrides]]${nl}name = ${JSON.stringify(name)}${nl}${rigLine}enabled = ${enabled}${nl}`;
    if (!parses(out)) out = patch(text, expected);
  }
  let after: unknown;
  try {
    after = parse(out);
  } catch (err) {
    throw new OrderOverrideEditError(
      `editing orders.overrides gave a file that does not parse: ${(err as Error).message}`,
    );
  }
  if (!isDeepStrictEqual(plain(after), plain(expected))) {
    throw new OrderOverrideEditError('editing orders.overrides did not give the intended city.toml');
  }
  return out;
}

function parses(text: string): boolean {
  try {
    parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A parsed value compared by content alone (smol-toml's tables have no prototype). */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}
