import { CliError } from './_errors.js';
import type { Flag, Flags } from './_types.js';
import { editDistance } from '../shared/text/edit-distance.js';

// The one scanner of a command's words. citty describes commands and renders their usage; reading the words is
// ours, because citty accepts what it does not know (a mistyped flag would change nothing and succeed) and keeps
// one value of a repeated flag.

/** A command's words, read against its flags. */
export interface ParsedWords {
  /** Each flag's value (the last one given; `false` for `--no-<name>`), each positional's word, `_`: positionals. */
  args: Record<string, string | boolean | string[] | undefined> & { _: string[] };
  /** Every value of every flag given, in order. */
  values: Map<string, string[]>;
  /** The words after the declared positionals (a variadic command's). */
  rest: string[];
}

/** `start-command` → `startCommand`, the other spelling citty's users type. */
function camelCase(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A flag's aliases as typed: `-x`, `--other`. */
export function aliasesOf(flag: Flag): string[] {
  const alias = 'alias' in flag ? flag.alias : undefined;
  const aliases = alias === undefined ? [] : Array.isArray(alias) ? alias : [alias];
  return aliases.map((a) => (a.length === 1 ? `-${a}` : `--${a}`));
}

/** How a flag is typed: `--name`, `--camelName`, and its aliases. */
function spellingsOf(name: string, flag: Flag): string[] {
  return [`--${name}`, `--${camelCase(name)}`, ...aliasesOf(flag)];
}

/** The positional arguments a command declares, in order. */
export function positionalsOf(flags: Flags): [string, Flag][] {
  return Object.entries(flags).filter(([, flag]) => flag.type === 'positional');
}

/** A word that is a flag (`-` alone, and negative numbers, are not). */
export function isFlagWord(word: string): boolean {
  return word.startsWith('-') && word !== '-' && !/^-\d/.test(word);
}

/**
 * Reads `words` against `flags`. Every flag must be declared (a typo is an error, with a suggestion); a flag that
 * takes a value must be given one (`--x` last, or followed by another `--flag`, is an error, not `""`); `--no-x`
 * only for booleans and negatable flags; enum values must be among the options; required positionals and flags
 * must be there, and no more positionals than declared unless `variadic`.
 */
export function parseWords(words: string[], flags: Flags, options: { variadic?: boolean } = {}): ParsedWords {
  const known = new Map<string, [string, Flag]>();
  for (const [name, flag] of Object.entries(flags)) {
    if (flag.type === 'positional') continue;
    for (const spelling of spellingsOf(name, flag)) known.set(spelling, [name, flag]);
  }
  const values = new Map<string, string[]>();
  const args: ParsedWords['args'] = { _: [] };
  const positionals: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === '--') {
      positionals.push(...words.slice(i + 1));
      break;
    }
    if (!isFlagWord(word)) {
      positionals.push(word);
      continue;
    }
    const eq = word.indexOf('=');
    const spelled = eq > 0 ? word.slice(0, eq) : word;
    const inline = eq > 0 ? word.slice(eq + 1) : undefined;
    let found = known.get(spelled);
    let negated = false;
    if (!found && spelled.startsWith('--no-')) {
      const positive = known.get(`--${spelled.slice(5)}`);
      if (positive && (positive[1].type === 'boolean' || positive[1].negatable)) {
        found = positive;
        negated = true;
      }
    }
    if (!found) {
      const typed = [...known.entries()].filter(([s, [name]]) => s === `--${name}`).map(([s]) => s);
      throw new CliError(`unknown flag ${spelled}${didYouMean(spelled, typed)}`);
    }
    const [name, flag] = found;
    if (negated || flag.type === 'boolean') {
      let value = !negated;
      if (inline !== undefined) {
        if (negated || (inline !== 'true' && inline !== 'false')) throw new CliError(`${spelled} takes no value`);
        value = inline === 'true';
      }
      args[name] = value;
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = words[i + 1];
      if (next === undefined || next.startsWith('--')) throw new CliError(`${spelled} needs a value`);
      value = next;
      i++;
    }
    if (flag.type === 'enum' && flag.options?.length && !flag.options.includes(value)) {
      throw new CliError(`invalid --${name} ${JSON.stringify(value)}: expected one of ${flag.options.join(', ')}`);
    }
    values.set(name, [...(values.get(name) ?? []), value]);
    args[name] = value;
  }
  for (const [name, flag] of Object.entries(flags)) {
    if (flag.type !== 'positional' && args[name] === undefined && flag.default !== undefined) args[name] = flag.default;
    if (flag.type !== 'positional' && flag.required && args[name] === undefined) {
      throw new CliError(`missing --${name}`);
    }
  }
  const declared = positionalsOf(flags);
  declared.forEach(([name, flag], i) => {
    const word = positionals[i] ?? flag.default;
    if (word === undefined && flag.required !== false) {
      throw new CliError(`missing ${(flag.valueHint ?? name).toUpperCase()}`);
    }
    args[name] = word;
  });
  if (positionals.length > declared.length && !options.variadic) {
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[declared.length])}`);
  }
  args._ = positionals;
  return { args, values, rest: positionals.slice(declared.length) };
}

/** `; did you mean "x"?` when one candidate is close to what was typed, else nothing. */
export function didYouMean(typed: string, candidates: string[]): string {
  const best = closest(typed, candidates);
  return best === undefined ? '' : `; did you mean ${best.startsWith('-') ? best : JSON.stringify(best)}?`;
}

/** The candidate nearest to `typed` (edit distance with transpositions), if it is near enough to be a typo. */
export function closest(typed: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(typed.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  // One edit in a short word, two in a longer one, or a prefix of three letters or more.
  const bare = typed.replace(/^-+/, '');
  const allowed = bare.length <= 3 ? 1 : 2;
  if (best !== undefined && bestDistance <= allowed) return best;
  const prefixed = candidates.filter((c) => bare.length >= 3 && c.replace(/^-+/, '').startsWith(bare));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
