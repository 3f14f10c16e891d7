import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { CityRigConfig } from '../../shared/config/city-config.js';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { OutsideTree, outsideTree, readWithin } from '../../shared/fs/within.js';
import { FORMULA_NAME, parseFormula, type FormulaDef, type StepDef } from './formula-file.js';
import { compileFormula } from './formula-compile.js';
import { resolveFormula, type FormulaLookup } from './formula-resolve.js';

/** One formula as the city sees it: the file that wins for its name, and what reading it gave. */
export interface FormulaEntry {
  name: string;
  /** Absolute path. */
  path: string;
  /** Relative to the city. */
  file: string;
  /** `city`, `rig:<name>` or `pack:<binding>`. */
  layer: string;
  /** The tree the file belongs to (the city, the rig, the pack): it is read only when it really lies inside. */
  tree: { root: string; what: string };
  /** The formula as it runs: laid over what it extends, expansions applied. Absent while it has errors. */
  def?: FormulaDef;
  /** Parse and compile errors (every one, each naming file, step and field); empty when it runs. */
  errors: string[];
  /** What it says that ctl does not act on (a reference key): it runs without it. */
  warnings?: string[];
}

interface Cached {
  mtimeMs: number;
  size: number;
  entry: FormulaEntry;
  /** The file as written (before `extends` and expansions), kept when it parsed even with errors. */
  parsed?: FormulaDef;
}

/**
 * A resolved formula, good while its file and every formula it looked up by name are the ones read then (the
 * same cached objects, found under the same names).
 */
interface Resolved {
  entry: FormulaEntry;
  file: Cached;
  /** Each name looked up, by which file, and the file it got. */
  found: [string, Cached, Cached | undefined][];
}

/** The file a formula looking up `name` gets: the highest layer's, or, for its own name, the one below it. */
function pick(stack: Map<string, Cached[]>, name: string, asker: Cached): Cached | undefined {
  const levels = stack.get(name) ?? [];
  const own = levels.indexOf(asker);
  return own >= 0 ? levels[own - 1] : levels[levels.length - 1];
}

/**
 * The city's formulas: `formulas/<name>.toml` (or the older `<name>.formula.toml`) in layers — imported
 * packs' `formulas/`, the city's `formulas/`, then each rig's `formulas/` — where a later layer wins a name, and within a layer `.toml` wins
 * over `.formula.toml`. Files are read when they change (by size and time), so an edit on disk or a `PUT` shows
 * at the next request; a file that does not validate is listed with its errors and cannot run.
 */
export class FormulaCatalog {
  private readonly cache = new Map<string, Cached>();
  private readonly resolved = new Map<string, Resolved>();

  constructor(
    private readonly root: string,
    private readonly rigs: () => CityRigConfig[],
    /** Imported packs' `formulas/` directories (and each pack's own directory): the lowest layers. */
    private readonly packs: () => { binding: string; dir: string; root?: string }[] = () => [],
  ) {}

  /** Files skipped at the last listing because a symbolic link leads out of their tree, each with why. */
  private outside = new Map<string, string>();

  /** The city's own formulas directory, where `PUT` writes. */
  get dir(): string {
    return join(this.root, 'formulas');
  }

  list(): FormulaEntry[] {
    const stack = this.stack();
    const byName = new Map<string, FormulaEntry>();
    for (const [name, levels] of stack) byName.set(name, this.resolve(levels[levels.length - 1]!, stack, []));
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every formula file of every layer, read (or taken from the cache), by name, lowest layer first. */
  private stack(): Map<string, Cached[]> {
    const stack = new Map<string, Cached[]>();
    const outside = new Map<string, string>();
    for (const layer of this.layers()) {
      for (const [name, path] of this.chosenIn(layer, outside)) {
        const list = stack.get(name) ?? [];
        list.push(this.read(name, path, layer));
        stack.set(name, list);
      }
    }
    this.outside = outside;
    return stack;
  }

  /**
   * One file's formula as it runs: `extends` and expansions resolved against the formulas of the city (a
   * formula that extends its own name reaches the one of a lower layer), then compiled for every set of vars.
   * Kept until one of the files it was made from changes.
   */
  private resolve(file: Cached, stack: Map<string, Cached[]>, chain: string[]): FormulaEntry {
    const known = this.resolved.get(file.entry.path);
    const fresh = (r: Resolved) =>
      r.file === file &&
      r.found.every(
        ([name, asker, was]) => pick(stack, name, asker) === was && (!was || this.cache.get(was.entry.path) === was),
      );
    if (known && fresh(known)) return known.entry;
    const found: Resolved['found'] = [];
    const lookup: FormulaLookup = (name) => {
      const parent = pick(stack, name, file);
      found.push([name, file, parent]);
      if (!parent) return { problem: 'no formula of that name in this city' };
      if (chain.includes(parent.entry.path) || parent === file) {
        return { problem: `a cycle (${[...chain.map(nameOfPath), file.entry.name, name].join(' → ')})` };
      }
      const entry = this.resolve(parent, stack, [...chain, file.entry.path]);
      // What the parent was made from makes this one too.
      found.push(...(this.resolved.get(parent.entry.path)?.found ?? []));
      return entry.def ? { def: entry.def } : { problem: `it does not validate (${entry.errors[0]})` };
    };
    const entry = resolvedEntry(file, lookup);
    this.resolved.set(file.entry.path, { entry, file, found });
    return entry;
  }

  /**
   * Formula files skipped because a symbolic link leads out of the pack, rig or city they belong to: never read
   * (not listed, not served), each named with why — for `GET /config/validate`'s warnings.
   */
  skipped(): { file: string; message: string }[] {
    this.list();
    return [...this.outside].map(([file, message]) => ({ file, message: `${file}: ${message}` }));
  }

  /**
   * A formula by name — or, for one an imported pack brings, by `binding.name` as well, which reaches the pack's
   * own even when a higher layer has one of that name.
   */
  get(name: string): FormulaEntry | undefined {
    const found = this.list().find((f) => f.name === name);
    if (found) return found;
    for (const layer of this.packLayers()) {
      if (!name.startsWith(`${layer.binding}.`)) continue;
      const path = this.chosenIn(layer, new Map()).get(name.slice(layer.binding.length + 1));
      if (path) return this.resolve(this.read(name.slice(layer.binding.length + 1), path, layer), this.stack(), []);
    }
    return undefined;
  }

  /**
   * Checks text as the city's own `formulas/<name>.toml` would be, before it is written: parsed, resolved
   * against the city's other formulas (what it extends and expands), compiled for every set of vars.
   */
  check(text: string, name: string): { def?: FormulaDef; errors: string[]; warnings: string[] } {
    const stack = this.stack();
    const file = `formulas/${name}.toml`;
    const parsed = parseFormula(text, file, name);
    const path = join(this.dir, `${name}.toml`);
    const cached: Cached = {
      mtimeMs: -1,
      size: -1,
      entry: { name, path, file, layer: 'city', tree: { root: this.root, what: 'the city' }, errors: parsed.errors },
      ...(parsed.formula ? { parsed: parsed.formula } : {}),
    };
    // It stands where it would be written: above the packs' formulas of its name, below the rigs'.
    const levels = (stack.get(name) ?? []).filter((c) => c.entry.layer.startsWith('pack:'));
    stack.set(name, [...levels, cached]);
    const entry = this.resolve(cached, stack, []);
    this.resolved.delete(path);
    return { ...(entry.def ? { def: entry.def } : {}), errors: entry.errors, warnings: parsed.warnings };
  }

  /** The formula's text as it is on disk, read only inside its tree (a 404-worthy undefined when it is not). */
  source(entry: FormulaEntry): string | undefined {
    try {
      return readWithin(entry.path, entry.tree.root, entry.tree.what);
    } catch (err) {
      if (err instanceof OutsideTree) return undefined;
      throw err;
    }
  }

  /** Writes `formulas/<name>.toml` (an older `<name>.formula.toml` beside it is removed: one file per name). */
  write(name: string, text: string): FormulaEntry {
    const path = join(this.dir, `${name}.toml`);
    mkdirSync(this.dir, { recursive: true });
    writeFileAtomic(path, text);
    rmSync(join(this.dir, `${name}.formula.toml`), { force: true });
    this.cache.delete(path);
    return this.get(name)!;
  }

  /** Removes the file that defines `name` (in whichever layer it lives); false when there is none. */
  remove(name: string): boolean {
    const entry = this.get(name);
    if (!entry) return false;
    rmSync(entry.path, { force: true });
    if (entry.layer === 'city') rmSync(join(this.dir, `${name}.formula.toml`), { force: true });
    this.cache.delete(entry.path);
    return true;
  }

  private layers(): Layer[] {
    const rigs = this.rigs()
      .filter((r) => r.path)
      .map((r) => {
        const root = isAbsolute(r.path!) ? r.path! : join(this.root, r.path!);
        return { name: `rig:${r.name}`, dir: join(root, 'formulas'), tree: { root, what: `rig ${r.name}` } };
      });
    return [
      ...this.packLayers(),
      { name: 'city', dir: this.dir, tree: { root: this.root, what: 'the city' } },
      ...rigs,
    ];
  }

  private packLayers(): (Layer & { binding: string })[] {
    return this.packs().map((p) => ({
      name: `pack:${p.binding}`,
      binding: p.binding,
      dir: p.dir,
      tree: { root: p.root ?? p.dir, what: `pack ${p.binding}` },
    }));
  }

  /**
   * The file each formula name of a layer is read from (`.toml` wins over `.formula.toml`); one whose real path
   * is outside the layer's tree is left out and noted in `outside`.
   */
  private chosenIn(layer: Layer, outside: Map<string, string>): Map<string, string> {
    const chosen = new Map<string, string>();
    for (const file of filesIn(layer.dir)) {
      const name = nameOf(file);
      if (!name) continue;
      const path = join(layer.dir, file);
      const why = outsideTree(path, layer.tree.root, layer.tree.what);
      if (why) {
        outside.set(this.label(path, layer), why);
        continue;
      }
      const prior = chosen.get(name);
      if (!prior || (prior.endsWith('.formula.toml') && !file.endsWith('.formula.toml'))) chosen.set(name, path);
    }
    return chosen;
  }

  /**
   * How a file is named to a person: relative to the city, but a pack's formula as `pack:<binding>/formulas/…`
   * (as its agents are named), never a path through the machine's pack cache.
   */
  private label(path: string, layer: Layer): string {
    if (!layer.name.startsWith('pack:')) return relative(this.root, path);
    return `${layer.name}/formulas/${relative(layer.dir, path)}`;
  }

  private read(name: string, path: string, layer: Layer): Cached {
    const file = this.label(path, layer);
    const base = { name, path, file, layer: layer.name, tree: layer.tree };
    let stat;
    try {
      stat = statSync(path);
    } catch {
      return { mtimeMs: -1, size: -1, entry: { ...base, errors: [`${file}: cannot be read`] } };
    }
    const cached = this.cache.get(path);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached;
    let text: string;
    try {
      text = readWithin(path, layer.tree.root, layer.tree.what);
    } catch (err) {
      const message = err instanceof OutsideTree ? err.message : 'cannot be read';
      return { mtimeMs: -1, size: -1, entry: { ...base, errors: [`${file}: ${message}`] } };
    }
    const parsed = parseFormula(text, file, name);
    const fresh: Cached = {
      mtimeMs: stat.mtimeMs,
      size: stat.size,
      entry: { ...base, errors: parsed.errors, warnings: parsed.warnings },
      ...(parsed.formula ? { parsed: parsed.formula } : {}),
    };
    this.cache.set(path, fresh);
    return fresh;
  }
}

interface Layer {
  name: string;
  dir: string;
  tree: { root: string; what: string };
}

/**
 * Parses a formula's text, resolves what it extends and expands through `lookup`, and compiles it for every set
 * of vars: its definition as it runs, or every error.
 */
export function checkFormula(
  text: string,
  file: string,
  name: string,
  lookup: FormulaLookup = () => ({ problem: 'no formula of that name in this city' }),
): { def?: FormulaDef; errors: string[]; warnings: string[] } {
  const parsed = parseFormula(text, file, name);
  const entry = resolvedEntry(
    {
      mtimeMs: -1,
      size: -1,
      entry: { name, path: file, file, layer: 'city', tree: { root: '', what: '' }, errors: parsed.errors },
      ...(parsed.formula ? { parsed: parsed.formula } : {}),
    },
    lookup,
  );
  return { ...(entry.def ? { def: entry.def } : {}), errors: entry.errors, warnings: parsed.warnings };
}

/** A read file made into the formula that runs, or every error of it. */
function resolvedEntry(file: Cached, lookup: FormulaLookup): FormulaEntry {
  const base = file.entry;
  if (!file.parsed) return base;
  const { def, errors: resolveErrors } = resolveFormula(file.parsed, lookup);
  // An expansion formula is not run: its template is filled in where others expand it.
  // What it extends or expands is missing: its steps are not all there, and compiling them would only add noise.
  const compileErrors =
    def.type === 'expansion' || resolveErrors.length ? [] : compileFormula(def, {}, 'validate').errors;
  const errors = [...new Set([...file.entry.errors, ...resolveErrors, ...compileErrors])];
  return errors.length ? { ...base, errors } : { ...base, def, errors: [] };
}

function nameOfPath(path: string): string {
  return nameOf(path.split('/').pop() ?? path) ?? path;
}

/** The formula name a file in `formulas/` defines, if it is one. */
function nameOf(file: string): string | undefined {
  const m = /^(.+?)(?:\.formula)?\.toml$/.exec(file);
  return m && FORMULA_NAME.test(m[1]!) ? m[1] : undefined;
}

function filesIn(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/**
 * Steps whose `assignee` names no agent of the city: a run would route each to nobody and wait for ever. An
 * assignee made from vars (`{{who}}`) is known only at run time and is not judged here.
 */
export function unknownAssignees(def: FormulaDef, agents: string[]): string[] {
  const known = new Set(agents);
  const errors: string[] = [];
  const walk = (steps: StepDef[]) => {
    for (const step of steps) {
      const who = step.assignee;
      if (who !== undefined && !who.includes('{{') && !known.has(who)) {
        const list = agents.length ? `its agents: ${agents.join(', ')}` : 'it has no agents';
        errors.push(`${def.file}: step "${step.id}": assignee: no agent "${who}" in this city (${list})`);
      }
      walk(step.children);
      if (step.loop) walk(step.loop.body);
    }
  };
  walk(def.steps);
  return errors;
}
