import type { ComposeRule, FormulaDef, StepDef, VarDef } from './formula-file.js';

/**
 * Another formula by name, already resolved (its own `extends` and expansions applied), or why it cannot be
 * had: not found, a cycle, or its own errors.
 */
export type FormulaLookup = (name: string) => { def?: FormulaDef; problem?: string };

/** Expansions inside expansions stop here, as the reference's do: a template that expands itself ends. */
export const MAX_EXPANSION_DEPTH = 5;

/**
 * A formula as it runs: laid over the formulas it `extends`, then with its steps replaced by the templates of
 * expansion formulas (`[[compose.expand]]`, `[[compose.map]]`, a step's `expand`). Every problem is named with
 * the file and the key; the formula comes back either way, for the compiler to find the rest.
 */
export function resolveFormula(def: FormulaDef, lookup: FormulaLookup): { def: FormulaDef; errors: string[] } {
  const errors: string[] = [];
  const at = (field: string, message: string) => errors.push(`${def.file}: ${field}: ${message}`);
  let merged = def;
  if (def.extends.length) {
    const parents: FormulaDef[] = [];
    for (const name of def.extends) {
      const found = lookup(name);
      if (found.def) parents.push(found.def);
      else at('extends', `${name}: ${found.problem ?? 'no such formula'}`);
    }
    merged = extend(def, parents);
  }
  const expansion = (name: string, field: string): FormulaDef | undefined => {
    const found = lookup(name);
    if (!found.def) return void at(field, `${name}: ${found.problem ?? 'no such formula'}`);
    if (found.def.type !== 'expansion' || !found.def.template.length) {
      return void at(field, `${name} is not an expansion formula (type = "expansion" with [[template]] steps)`);
    }
    return found.def;
  };
  let steps = merged.steps;
  for (const [i, rule] of merged.compose.expand.entries()) {
    const field = `compose.expand[${i}]`;
    const target = findStep(steps, rule.target!);
    if (!target) {
      at(`${field}.target`, `no step "${rule.target}"`);
      continue;
    }
    const exp = expansion(rule.with, `${field}.with`);
    if (exp) steps = replaceWithExpansion(steps, target, exp, rule);
  }
  for (const [i, rule] of merged.compose.map.entries()) {
    const exp = expansion(rule.with, `compose.map[${i}].with`);
    if (!exp) continue;
    const select = glob(rule.select!);
    for (const target of allSteps(steps).filter((s) => select.test(s.id))) {
      steps = replaceWithExpansion(steps, target, exp, rule);
    }
  }
  steps = inlineExpansions(steps, 0, expansion, at);
  return { def: { ...merged, steps }, errors };
}

/**
 * The reference's rules: vars of the parents are inherited (the first parent to declare one wins, the child's
 * own win over all); the parents' steps come first, in order, and a child step with a parent step's id
 * replaces it where it stands, the others coming after; the child's description wins when it has one.
 */
export function extend(child: FormulaDef, parents: FormulaDef[]): FormulaDef {
  const vars = new Map<string, VarDef>();
  for (const parent of parents) for (const v of parent.vars) if (!vars.has(v.name)) vars.set(v.name, v);
  for (const v of child.vars) vars.set(v.name, v);
  const overlay = (base: StepDef[], own: StepDef[]) => {
    const out = [...base];
    for (const step of own) {
      const i = out.findIndex((s) => s.id === step.id);
      if (i >= 0) out[i] = step;
      else out.push(step);
    }
    return out;
  };
  return {
    ...child,
    description: child.description || parents.find((p) => p.description)?.description || '',
    vars: [...vars.values()],
    steps: overlay(
      parents.flatMap((p) => p.steps),
      child.steps,
    ),
    template: overlay(
      parents.flatMap((p) => p.template),
      child.template,
    ),
    compose: {
      expand: [...parents.flatMap((p) => p.compose.expand), ...child.compose.expand],
      map: [...parents.flatMap((p) => p.compose.map), ...child.compose.map],
    },
    extends: [],
  };
}

function inlineExpansions(
  steps: StepDef[],
  depth: number,
  expansion: (name: string, field: string) => FormulaDef | undefined,
  at: (field: string, message: string) => void,
): StepDef[] {
  const out: StepDef[] = [];
  for (const step of steps) {
    if (!step.expand) {
      out.push(
        step.children.length ? { ...step, children: inlineExpansions(step.children, depth, expansion, at) } : step,
      );
      continue;
    }
    const field = `step "${step.id}": expand`;
    if (depth >= MAX_EXPANSION_DEPTH) {
      at(field, `expansions nest more than ${MAX_EXPANSION_DEPTH} deep (does ${step.expand} expand itself?)`);
      continue;
    }
    const exp = expansion(step.expand, field);
    if (!exp) continue;
    const expanded = expandTarget(step, exp, step.expandVars);
    out.push(...inlineExpansions(expanded, depth + 1, expansion, at));
  }
  return out;
}

/** The target step replaced by the expansion's template; what needed it now needs the template's last step. */
function replaceWithExpansion(steps: StepDef[], target: StepDef, exp: FormulaDef, rule: ComposeRule): StepDef[] {
  const expanded = expandTarget(target, exp, rule.vars);
  const last = expanded[expanded.length - 1]!.id;
  const rewrite = (list: StepDef[]): StepDef[] =>
    list.flatMap((s) => {
      if (s.id === target.id) return expanded;
      const needs = s.needs.map((n) => (n === target.id ? last : n));
      return [{ ...s, needs, children: rewrite(s.children) }];
    });
  return rewrite(steps);
}

/**
 * The expansion's template for one target: `{target}`, `{target.id}`, `{target.title}`, `{target.description}`
 * filled from it, and the expansion's vars (its defaults, under `vars`) filled where written `{name}` or
 * `{{name}}`; the template's first steps (needing nothing of the template) take on what the target needed.
 */
function expandTarget(target: StepDef, exp: FormulaDef, overrides: Record<string, string>): StepDef[] {
  const vars: Record<string, string> = {};
  for (const v of exp.vars) if (v.default !== undefined) vars[v.name] = v.default;
  Object.assign(vars, overrides);
  const fill = (text: string): string =>
    text
      .replaceAll('{target}', target.id)
      .replaceAll('{target.id}', target.id)
      .replaceAll('{target.title}', target.title ?? target.id)
      .replaceAll('{target.description}', target.description ?? '')
      .replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})/g, (whole, a, b) => {
        const name = (a ?? b) as string;
        return name in vars ? vars[name]! : whole;
      });
  const opt = (text: string | undefined) => (text === undefined ? undefined : fill(text));
  const copy = (step: StepDef): StepDef => ({
    ...step,
    id: fill(step.id),
    title: opt(step.title),
    description: opt(step.description),
    condition: opt(step.condition),
    assignee: opt(step.assignee),
    labels: step.labels.map(fill),
    metadata: Object.fromEntries(Object.entries(step.metadata).map(([k, v]) => [k, fill(v)])),
    needs: step.needs.map(fill),
    children: step.children.map(copy),
    expand: opt(step.expand),
    expandVars: Object.fromEntries(Object.entries(step.expandVars).map(([k, v]) => [k, fill(v)])),
    ...(step.loop ? { loop: { ...step.loop, body: step.loop.body.map(copy) } } : {}),
    ...(step.gate?.command ? { gate: { ...step.gate, command: fill(step.gate.command) } } : {}),
    ...(step.check ? { check: { ...step.check, command: fill(step.check.command) } } : {}),
  });
  const expanded = exp.template.map(copy);
  const ids = new Set(expanded.map((s) => s.id));
  for (const step of expanded) {
    if (!step.needs.some((n) => ids.has(n))) step.needs = [...target.needs, ...step.needs];
  }
  return expanded;
}

function findStep(steps: StepDef[], id: string): StepDef | undefined {
  return allSteps(steps).find((s) => s.id === id);
}

function allSteps(steps: StepDef[]): StepDef[] {
  return steps.flatMap((s) => [s, ...allSteps(s.children)]);
}

/** A `[[compose.map]]` select: `*` any run of characters, `?` one. */
function glob(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}
