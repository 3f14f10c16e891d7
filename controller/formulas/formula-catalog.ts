import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { CityRigConfig } from '../../shared/config/city-config.js';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { FORMULA_NAME, parseFormula, type FormulaDef, type StepDef } from './formula-file.js';
import { compileFormula } from './formula-compile.js';

/** One formula as the city sees it: the file that wins for its name, and what reading it gave. */
export interface FormulaEntry {
  name: string;
  /** Absolute path. */
  path: string;
  /** Relative to the city. */
  file: string;
  /** `city`, or `rig:<name>`. */
  layer: string;
  def?: FormulaDef;
  /** Parse and compile errors (every one, each naming file, step and field); empty when it runs. */
  errors: string[];
}

interface Cached {
  mtimeMs: number;
  size: number;
  entry: FormulaEntry;
}

/**
 * The city's formulas: `formulas/<name>.toml` (or the older `<name>.formula.toml`) in layers — imported
 * packs' `formulas/`, the city's `formulas/`, then each rig's `formulas/` — where a later layer wins a name, and within a layer `.toml` wins
 * over `.formula.toml`. Files are read when they change (by size and time), so an edit on disk or a `PUT` shows
 * at the next request; a file that does not validate is listed with its errors and cannot run.
 */
export class FormulaCatalog {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly root: string,
    private readonly rigs: () => CityRigConfig[],
    /** Imported packs' `formulas/` directories: the lowest layers. */
    private readonly packs: () => { binding: string; dir: string }[] = () => [],
  ) {}

  /** The city's own formulas directory, where `PUT` writes. */
  get dir(): string {
    return join(this.root, 'formulas');
  }

  list(): FormulaEntry[] {
    const byName = new Map<string, FormulaEntry>();
    for (const layer of this.layers()) {
      const files = filesIn(layer.dir);
      const chosen = new Map<string, string>();
      for (const file of files) {
        const name = nameOf(file);
        if (!name) continue;
        // `.toml` wins over `.formula.toml` within a layer.
        const prior = chosen.get(name);
        if (!prior || (prior.endsWith('.formula.toml') && !file.endsWith('.formula.toml'))) chosen.set(name, file);
      }
      for (const [name, file] of chosen) byName.set(name, this.read(name, join(layer.dir, file), layer.name));
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * A formula by name — or, for one an imported pack brings, by `binding.name` as well, which reaches the pack's
   * own even when a higher layer has one of that name.
   */
  get(name: string): FormulaEntry | undefined {
    const found = this.list().find((f) => f.name === name);
    if (found) return found;
    for (const pack of this.packs()) {
      if (!name.startsWith(`${pack.binding}.`)) continue;
      const base = name.slice(pack.binding.length + 1);
      const files = filesIn(pack.dir).filter((f) => nameOf(f) === base);
      const file = files.find((f) => !f.endsWith('.formula.toml')) ?? files[0];
      if (file) return this.read(base, join(pack.dir, file), `pack:${pack.binding}`);
    }
    return undefined;
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

  private layers(): { name: string; dir: string }[] {
    const rigs = this.rigs()
      .filter((r) => r.path)
      .map((r) => ({
        name: `rig:${r.name}`,
        dir: join(isAbsolute(r.path!) ? r.path! : join(this.root, r.path!), 'formulas'),
      }));
    const packs = this.packs().map((p) => ({ name: `pack:${p.binding}`, dir: p.dir }));
    return [...packs, { name: 'city', dir: this.dir }, ...rigs];
  }

  private read(name: string, path: string, layer: string): FormulaEntry {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      return {
        name,
        path,
        file: relative(this.root, path),
        layer,
        errors: [`${relative(this.root, path)}: cannot be read`],
      };
    }
    const cached = this.cache.get(path);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.entry;
    const file = relative(this.root, path);
    const entry: FormulaEntry = { name, path, file, layer, ...checkFormula(readFileSync(path, 'utf8'), file, name) };
    this.cache.set(path, { mtimeMs: stat.mtimeMs, size: stat.size, entry });
    return entry;
  }
}

/** Parses a formula's text and compiles it for every set of vars: its definition, or every error. */
export function checkFormula(text: string, file: string, name: string): { def?: FormulaDef; errors: string[] } {
  const parsed = parseFormula(text, file, name);
  if (!parsed.formula) return { errors: parsed.errors };
  const compiled = compileFormula(parsed.formula, {}, 'validate');
  const errors = [...new Set([...parsed.errors, ...compiled.errors])];
  return errors.length ? { errors } : { def: parsed.formula, errors: [] };
}

/** The formula name a file in `formulas/` defines, if it is one. */
function nameOf(file: string): string | undefined {
  const m = /^(.+?)(?:\.formula)?\.toml$/.exec(file);
  return m && FORMULA_NAME.test(m[1]) ? m[1] : undefined;
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
