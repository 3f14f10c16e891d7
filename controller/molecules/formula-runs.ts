import type { FormulaRecentRunResponse, FormulaSummaryResponse } from '../../shared/dto/formulas.js';
import type { FormulaEntry } from '../formulas/formula-catalog.js';
import { varDefs } from '../formulas/formula-views.js';
import * as K from './molecule-keys.js';
import type { RunViews } from './run-views.js';

// A formula's runs, as the formulas API lists them: what the runs of molecules/ say of the formulas they ran.

const RECENT_RUNS = 5;

export function recentRuns(
  runs: RunViews,
  name: string,
  limit = RECENT_RUNS,
): { count: number; recent: FormulaRecentRunResponse[] } {
  const roots = runs.roots({ formula: name });
  return {
    count: roots.length,
    recent: roots.slice(0, limit).map((root) => ({
      workflow_id: root.id,
      status: runs.status(root),
      target: root.metadata?.[K.TARGET] ?? '',
      started_at: root.created_at,
      updated_at: root.updated_at ?? root.created_at,
    })),
  };
}

export function formulaSummary(entry: FormulaEntry, runs: RunViews): FormulaSummaryResponse {
  const { count, recent } = recentRuns(runs, entry.name);
  return {
    name: entry.name,
    description: entry.def?.description ?? '',
    var_defs: varDefs(entry.def),
    run_count: count,
    recent_runs: recent,
    source: entry.file,
    ...(entry.errors.length ? { errors: entry.errors } : {}),
  };
}
