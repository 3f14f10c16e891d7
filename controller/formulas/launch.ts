import type { Bead } from '../../shared/dto/beads.js';
import { Problem } from '../../shared/http/problem.js';
import type { FormulaCatalog, FormulaEntry } from './formula-catalog.js';
import { compileFormula, type CompiledFormula } from './formula-compile.js';
import type { RunValues } from './run-vars.js';

const NO_RUN_VALUES: RunValues = { builtins: {}, rigVars: {} };

/** A formula by name, or the 404 problem. */
export function formulaOrProblem(catalog: FormulaCatalog, name: string): FormulaEntry {
  const entry = catalog.get(name);
  if (!entry) throw new Problem('formula-not-found', `not_found: formula not found: ${name}`);
  return entry;
}

/** The 422 problem listing every error of a formula (or of its vars). */
export function formulaErrors(name: string, errors: string[]): Problem {
  return new Problem('validation-failed', `invalid: formula ${name}: ${errors.join('; ')}`, {
    errors: errors.map((message) => ({ location: 'body.formula', message, value: name })),
  });
}

/**
 * Compiles a formula with these vars for a run: its graph, or a 404 / 422 naming every error. `run` is what the
 * run itself knows (`run-vars.ts`): its builtin vars, and its rig's `formula_vars` for the vars the formula
 * declares (the launch's own vars win over both).
 */
export function compileForRun(
  catalog: FormulaCatalog,
  name: string,
  vars: Record<string, string>,
  run: RunValues = NO_RUN_VALUES,
): CompiledFormula {
  const entry = formulaOrProblem(catalog, name);
  if (!entry.def) throw formulaErrors(name, entry.errors);
  if (entry.def.type === 'expansion') {
    throw formulaErrors(name, [
      `${entry.file}: type: an expansion formula does not run by itself: other formulas expand it into their steps (expand, [[compose.expand]])`,
    ]);
  }
  const declared = new Set(entry.def.vars.map((v) => v.name));
  const given = { ...Object.fromEntries(Object.entries(run.rigVars).filter(([k]) => declared.has(k))), ...vars };
  const { compiled, errors } = compileFormula(entry.def, given, 'run', run.builtins);
  if (!compiled) {
    throw new Problem('validation-failed', `invalid: formula ${name}: ${errors.join('; ')}`, {
      errors: errors.map((message) => ({
        location: message.includes(': vars.') ? 'body.vars' : 'body.formula',
        message,
      })),
    });
  }
  return compiled;
}

/**
 * What makes a run of a compiled formula: the molecule engine (molecules/molecule-engine.ts), given by the caller,
 * so that formulas/ stays beneath the molecules that run them.
 */
export interface RunStarter<Options> {
  instantiate(compiled: CompiledFormula, options: Options): Promise<{ root: Bead; members: Map<string, Bead> }>;
}

/** Compiles and instantiates a formula: a new run. */
export async function launchFormula<Options>(
  catalog: FormulaCatalog,
  engine: RunStarter<Options>,
  name: string,
  vars: Record<string, string>,
  options: Options,
  run: RunValues = NO_RUN_VALUES,
): Promise<{ root: Bead; members: Map<string, Bead>; compiled: CompiledFormula }> {
  const compiled = compileForRun(catalog, name, vars, run);
  const { root, members } = await engine.instantiate(compiled, options);
  return { root, members, compiled };
}
