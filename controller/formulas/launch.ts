import type { Bead } from '../../shared/dto/beads.js';
import { Problem } from '../../shared/http/problem.js';
import type { MoleculeEngine, InstantiateOptions } from '../molecules/molecule-engine.js';
import type { FormulaCatalog, FormulaEntry } from './formula-catalog.js';
import { compileFormula, type CompiledFormula } from './formula-compile.js';

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

/** Compiles a formula with these vars for a run: its graph, or a 404 / 422 naming every error. */
export function compileForRun(
  catalog: FormulaCatalog,
  name: string,
  vars: Record<string, string>,
  builtins: { attached_bead_id?: string; target?: string },
): CompiledFormula {
  const entry = formulaOrProblem(catalog, name);
  if (!entry.def) throw formulaErrors(name, entry.errors);
  const { compiled, errors } = compileFormula(entry.def, vars, 'run', builtins);
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

/** Compiles and instantiates a formula: a new run. */
export async function launchFormula(
  catalog: FormulaCatalog,
  engine: MoleculeEngine,
  name: string,
  vars: Record<string, string>,
  options: InstantiateOptions,
): Promise<{ root: Bead; members: Map<string, Bead>; compiled: CompiledFormula }> {
  const compiled = compileForRun(catalog, name, vars, {
    attached_bead_id: options.attachedBeadId,
    target: options.routedTo,
  });
  const { root, members } = await engine.instantiate(compiled, options);
  return { root, members, compiled };
}
