import type { FormulaDetailResponse, FormulaVarDefResponse } from '../../shared/dto/formulas.js';
import type { FormulaEntry } from './formula-catalog.js';
import type { CompiledFormula } from './formula-compile.js';
import type { FormulaDef } from './formula-file.js';

export function varDefs(def: FormulaDef | undefined): FormulaVarDefResponse[] {
  return (def?.vars ?? []).map((v) => ({
    name: v.name,
    type: 'string',
    ...(v.description ? { description: v.description } : {}),
    ...(v.default !== undefined ? { default: v.default } : {}),
    ...(v.required ? { required: true } : {}),
    ...(v.enum ? { enum: v.enum } : {}),
    ...(v.pattern ? { pattern: v.pattern } : {}),
  }));
}

/** A formula's detail: its steps as compiled, the edges among them, and the same graph as a preview. */
export function formulaDetail(entry: FormulaEntry, compiled: CompiledFormula): FormulaDetailResponse {
  const steps = compiled.nodes.map((node) => ({
    id: node.id,
    title: node.title,
    kind: node.kind,
    type: node.kind === 'step' ? node.type : node.kind === 'gate' ? 'gate' : 'step',
    ...(node.assignee ? { assignee: node.assignee } : {}),
    ...(node.labels.length ? { labels: node.labels } : {}),
    ...(Object.keys(node.metadata).length ? { metadata: node.metadata } : {}),
    ...(node.description ? { description: node.description } : {}),
    needs: node.needs,
  }));
  const deps = compiled.nodes.flatMap((node) => node.needs.map((to) => ({ from: node.id, to, kind: 'blocks' })));
  return {
    name: entry.name,
    description: compiled.description,
    var_defs: varDefs(entry.def),
    steps,
    deps,
    preview: {
      nodes: compiled.nodes.map((node) => ({ id: node.id, title: node.title, kind: node.kind })),
      edges: deps,
    },
    source: entry.file,
  };
}
