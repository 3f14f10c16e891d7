import {
  wholeMatch,
  type FormulaDef,
  type StepCheck,
  type StepDef,
  type StepGate,
  type StepOnComplete,
  type StepRetry,
} from './formula-file.js';

/**
 * One node of a compiled formula: a bead a run creates. `step` is work for an agent; `group` (a step with children
 * or a loop), `check` (a step's check or retry) and `finalize` are closed by the controller; `gate` is a wait.
 */
export interface GraphNode {
  id: string;
  title: string;
  description?: string;
  kind: 'step' | 'group' | 'check' | 'gate' | 'finalize' | 'bond' | 'children';
  /** The bead type. */
  type: string;
  assignee?: string;
  labels: string[];
  metadata: Record<string, string>;
  priority?: number;
  /** Nodes it waits for. */
  needs: string[];
  check?: StepCheck;
  retry?: StepRetry;
  gate?: StepGate;
  /** A check node: the step it checks; a bond node: the step whose completion pours its runs. */
  checks?: string;
  /** The group (a step with children or a loop) it was written inside: its scope in the run's graph. */
  scope?: string;
  /** A bond node (a step's `on_complete`): what it pours, its vars' own `{{var}}` filled. */
  bond?: StepOnComplete;
  /** A children node (a step's `waits_for`): the bond node whose runs it waits for, all or the first. */
  waitsOn?: { bond: string; mode: 'all' | 'any' };
  /**
   * A group that is a runtime loop (`loop.until`): its first iteration's nodes are compiled (ids under
   * `prefix`); `body` is them again, ids relative to the prefix, for the engine to make the next ones from.
   */
  loop?: { until: string; max: number; prefix: string; body: GraphNode[] };
}

export interface CompiledFormula {
  name: string;
  /** The formula's description with its vars filled in (the run's title). */
  description: string;
  /** The values every var took. */
  vars: Record<string, string>;
  /** In an order where each node comes after the nodes it needs; the finalize node last. */
  nodes: GraphNode[];
}

/**
 * `run` fills the vars in (a missing required var, an unknown one, or a value outside its enum or pattern is an
 * error) and drops the steps whose condition is false; `validate` checks the formula for every set of vars: it
 * keeps every step and leaves vars without a value as written.
 */
export type CompileMode = 'run' | 'validate';

/**
 * Vars every formula can use without declaring them, filled by the run (`run-vars.ts`): the bead it was started
 * for (`attached_bead_id`, the reference's `issue`), the convoy tracking it, its target agent, that agent's rig
 * and pack binding, the branch its work starts from and lands on, and the day it started. A formula that
 * declares one gets the run's value over its default; a value given at the launch wins over both.
 */
export const BUILTIN_VARS = [
  'attached_bead_id',
  'issue',
  'convoy_id',
  'target',
  'rig_name',
  'binding_name',
  'binding_prefix',
  'base_branch',
  'target_branch',
  'date',
] as const;
export type BuiltinVar = (typeof BUILTIN_VARS)[number];

const FALSY = new Set(['', 'false', '0', 'no', 'off']);

/**
 * The most nodes one formula may compile to. Loops are capped one by one, but nested loops multiply (1000 × 1000
 * is a million nodes, minutes of one thread): the whole is counted from the definition before anything is
 * expanded, so no formula a client sends can keep the controller busy for long.
 */
export const MAX_COMPILED_NODES = 10_000;

/**
 * The most characters all of one formula's texts (titles, descriptions, conditions, labels, metadata, vars of the
 * runs it pours) may fill to, together (16 Mi): a var a launch gives is filled into every step a loop makes, so a
 * megabyte var in ten thousand steps would be ten gigabytes. Filling stops as it would go over.
 */
export const MAX_FILLED_CHARS = 16 * 1024 * 1024;

/** Thrown from inside a fill's replacement as it would go over MAX_FILLED_CHARS: stops it there. */
class FilledTooMuch extends Error {}

/** Compiles a formula into its graph of nodes, or every error found, each naming the file, step and field. */
export function compileFormula(
  def: FormulaDef,
  given: Record<string, string>,
  mode: CompileMode,
  builtins: Partial<Record<BuiltinVar, string>> = {},
): { compiled?: CompiledFormula; errors: string[] } {
  const errors: string[] = [];
  const at = (where: string, field: string, message: string) =>
    errors.push(`${def.file}: ${where ? `${where}: ` : ''}${field}: ${message}`);
  const declared = resolveVars(def, given, mode, at, builtins);
  // What the run itself knows, usable in any text without declaring it; as written when the run has none.
  const vars = {
    ...Object.fromEntries(BUILTIN_VARS.map((name) => [name, builtins[name] ?? `{{${name}}}`])),
    ...declared,
  };
  checkUniqueIds(def.steps, at);
  const size = compiledSize(def.steps);
  if (size.nodes > MAX_COMPILED_NODES) {
    at(size.where, 'loop', tooLarge(size));
    return { errors };
  }

  const nodes = new Map<string, GraphNode & { rawNeeds: { key: string; where: string }[] }>();
  // What waits on a step key: the nodes a dependent of it needs; for a dropped step, the keys it needed.
  const alias = new Map<string, { nodes?: string[]; dropped?: { key: string; where: string }[]; extra?: string[] }>();

  let filled = 0;
  let overFilled = false;
  const fill = (text: string | undefined, scope: Record<string, string>, where: string, field: string) => {
    if (text === undefined || overFilled) return text;
    let added = 0;
    try {
      const out = text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name: string) => {
        if (!(name in scope)) {
          at(where, field, `unknown var "${name}" (declare it in [vars])`);
          return whole;
        }
        const value = scope[name] ?? whole;
        added += value.length;
        if (filled + text.length + added > MAX_FILLED_CHARS) throw new FilledTooMuch();
        return value;
      });
      filled += out.length;
      return out;
    } catch (err) {
      if (!(err instanceof FilledTooMuch)) throw err;
      overFilled = true;
      at(
        where,
        field,
        `the formula's texts fill to more than ${MAX_FILLED_CHARS} characters with its vars (the limit)`,
      );
      return text;
    }
  };

  interface Scope {
    vars: Record<string, string>;
    /** Rewrites a `needs` entry: inside a loop body, a body step's id becomes its iteration's key. */
    key: (id: string) => string;
    /** The group step these steps are written inside. */
    group?: string;
  }

  const expand = (steps: StepDef[], scope: Scope, extraFor: (step: StepDef) => string[]): string[] => {
    const keys: string[] = [];
    for (const step of steps) {
      const key = scope.key(step.id);
      keys.push(key);
      const where = `step "${key}"`;
      const rawNeeds = step.needs.map((n) => ({ key: scope.key(n), where }));
      const extra = extraFor(step);
      const condition = fill(step.condition, scope.vars, where, 'condition');
      if (mode === 'run' && condition !== undefined && !holds(condition)) {
        alias.set(key, { dropped: rawNeeds, extra });
        continue;
      }
      const base = {
        title: fill(step.title, scope.vars, where, 'title') ?? step.id,
        description: fill(step.description, scope.vars, where, 'description'),
        assignee: fill(step.assignee, scope.vars, where, 'assignee'),
        labels: step.labels.map((l) => fill(l, scope.vars, where, 'labels')!),
        metadata: Object.fromEntries(
          Object.entries(step.metadata).map(([k, v]) => [k, fill(v, scope.vars, where, `metadata.${k}`)!]),
        ),
        ...(step.priority !== undefined ? { priority: step.priority } : {}),
        ...(scope.group !== undefined ? { scope: scope.group } : {}),
      };
      if (step.gate) {
        nodes.set(key, { ...base, id: key, kind: 'gate', type: 'gate', needs: extra, rawNeeds, gate: step.gate });
        alias.set(key, { nodes: [key] });
      } else if (step.children.length) {
        const inner = new Set(step.children.map((c) => c.id));
        const children = expand(step.children, { ...scope, group: key }, (child) =>
          child.needs.some((n) => inner.has(n)) ? [] : [...extra, ...rawNeeds.map((r) => `@${r.key}`)],
        );
        nodes.set(key, {
          ...base,
          id: key,
          kind: 'group',
          type: step.type ?? 'task',
          needs: children.map((c) => `@${c}`),
          rawNeeds: [],
        });
        alias.set(key, { nodes: [key] });
      } else if (step.loop) {
        const loop = step.loop;
        const [from, to] = loop.range ?? [1, loop.count ?? 1];
        let previous: string[] = [...extra, ...rawNeeds.map((r) => `@${r.key}`)];
        const all: string[] = [];
        const bodyIds = new Set(loop.body.map((b) => b.id));
        for (let i = from; i <= to; i++) {
          const prefix = `${key}.iter${i}.`;
          const iterationVars = { ...scope.vars, ...(loop.var ? { [loop.var]: String(i) } : {}) };
          const carried = previous;
          const keysOfIteration = expand(
            loop.body,
            { vars: iterationVars, key: (id) => (bodyIds.has(id) ? prefix + id : scope.key(id)), group: key },
            (body) => (body.needs.some((n) => bodyIds.has(n)) ? [] : carried),
          );
          const needed = new Set(
            loop.body.flatMap((b) => b.needs.filter((n) => bodyIds.has(n)).map((n) => prefix + n)),
          );
          previous = keysOfIteration.filter((k) => !needed.has(k)).map((k) => `@${k}`);
          all.push(...keysOfIteration);
        }
        nodes.set(key, {
          ...base,
          title: base.title,
          id: key,
          kind: 'group',
          type: step.type ?? 'task',
          needs: all.map((k) => `@${k}`),
          rawNeeds: [],
          ...(loop.until ? { loop: { until: loop.until, max: loop.max!, prefix: `${key}.iter1.`, body: [] } } : {}),
        });
        alias.set(key, { nodes: [key] });
      } else {
        nodes.set(key, { ...base, id: key, kind: 'step', type: step.type ?? 'task', needs: extra, rawNeeds });
        if (step.check || step.retry) {
          const checkKey = `${key}.check`;
          nodes.set(checkKey, {
            id: checkKey,
            title: `Check: ${base.title}`,
            kind: 'check',
            type: 'task',
            labels: [],
            metadata: {},
            needs: [key],
            rawNeeds: [],
            checks: key,
            ...(base.scope !== undefined ? { scope: base.scope } : {}),
            ...(step.check ? { check: step.check } : {}),
            ...(step.retry ? { retry: step.retry } : {}),
          });
          alias.set(key, { nodes: [checkKey] });
        } else alias.set(key, { nodes: [key] });
        if (step.onComplete) {
          const bondKey = `${key}.bond`;
          const on = step.onComplete;
          nodes.set(bondKey, {
            id: bondKey,
            title: `Pour ${on.bond} for each of ${on.forEach}`,
            kind: 'bond',
            type: 'task',
            labels: [],
            metadata: {},
            needs: alias.get(key)!.nodes!,
            rawNeeds: [],
            checks: key,
            bond: {
              ...on,
              vars: Object.fromEntries(
                Object.entries(on.vars).map(([k, v]) => [k, fill(v, scope.vars, where, `on_complete.vars.${k}`)!]),
              ),
            },
          });
          alias.set(key, { nodes: [bondKey] });
        }
        if (step.waitsFor) {
          waiters.push({
            key,
            spawner: scope.key(step.waitsFor.spawner ?? step.needs[0]!),
            mode: step.waitsFor.mode,
            where,
          });
        }
      }
    }
    return keys;
  };

  const waiters: { key: string; spawner: string; mode: 'all' | 'any'; where: string }[] = [];
  expand(def.steps, { vars, key: (id) => id }, () => []);
  // A step that waits for the runs a step before it bonded waits on a children node after that step's bond node.
  for (const w of waiters) {
    const bondKey = `${w.spawner}.bond`;
    if (!nodes.has(bondKey)) {
      // A spawner its condition dropped pours nothing: there is nothing to wait for.
      if (alias.get(w.spawner)?.dropped) continue;
      at(w.where, 'waits_for', `step "${w.spawner}" bonds no runs (it has no on_complete)`);
      continue;
    }
    const childrenKey = `${w.spawner}.children-${w.mode}`;
    if (!nodes.has(childrenKey)) {
      nodes.set(childrenKey, {
        id: childrenKey,
        title: `Wait for ${w.mode === 'all' ? 'every run' : 'the first run'} ${w.spawner} poured`,
        kind: 'children',
        type: 'task',
        labels: [],
        metadata: {},
        needs: [bondKey],
        rawNeeds: [],
        waitsOn: { bond: bondKey, mode: w.mode },
      });
    }
    nodes.get(w.key)!.needs.push(childrenKey);
  }

  // `@key` entries and raw needs become node ids through the aliases (a dropped step passes on what it needed).
  const resolve = (key: string, where: string, seen: Set<string>): string[] => {
    const a = alias.get(key);
    if (!a) {
      at(where, 'needs', `no step "${key}"`);
      return [];
    }
    if (a.nodes) return a.nodes;
    if (seen.has(key)) return [];
    seen.add(key);
    return [
      ...(a.extra ?? []).flatMap((e) => (e.startsWith('@') ? resolve(e.slice(1), where, seen) : [e])),
      ...(a.dropped ?? []).flatMap((r) => resolve(r.key, r.where, seen)),
    ];
  };
  for (const node of nodes.values()) {
    const needs = [
      ...node.needs.flatMap((n) => (n.startsWith('@') ? resolve(n.slice(1), `step "${node.id}"`, new Set()) : [n])),
      ...node.rawNeeds.flatMap((r) => resolve(r.key, r.where, new Set())),
    ];
    node.needs = [...new Set(needs)].filter(
      (n) => n !== node.id || (at(`step "${node.id}"`, 'needs', 'a step cannot need itself'), false),
    );
  }

  const ordered = topological([...nodes.values()], (cycle) =>
    at(`step "${cycle[0]}"`, 'needs', `cycle: ${[...cycle, cycle[0]].join(' → ')}`),
  );
  const finalizeId = `${def.name}.workflow-finalize`;
  const needed = new Set(ordered.flatMap((n) => n.needs));
  const finalize: GraphNode = {
    id: finalizeId,
    title: `Finalize ${def.name}`,
    kind: 'finalize',
    type: 'task',
    labels: [],
    metadata: {},
    needs: ordered.filter((n) => !needed.has(n.id)).map((n) => n.id),
  };
  if (ordered.length === 0 && errors.length === 0) at('', 'steps', 'no step is left to run (every condition is false)');
  if (errors.length) return { errors };
  const out: GraphNode[] = ordered.map(({ rawNeeds: _raw, ...n }) => n);
  for (const node of out) if (node.loop) node.loop.body = loopBody(out, node.loop.prefix);
  return {
    compiled: {
      name: def.name,
      description: fill(def.description, vars, '', 'description') ?? '',
      vars: declared,
      nodes: [...out, finalize],
    },
    errors,
  };
}

/** A runtime loop's first iteration, ids relative to its prefix: what each later iteration is made from. */
function loopBody(nodes: GraphNode[], prefix: string): GraphNode[] {
  const rel = (id: string) => id.slice(prefix.length);
  return nodes
    .filter((n) => n.id.startsWith(prefix))
    .map((n) => ({
      ...n,
      id: rel(n.id),
      // Needs outside the iteration were met before the first one: later ones wait for the one before instead.
      needs: n.needs.filter((d) => d.startsWith(prefix)).map(rel),
      ...(n.checks ? { checks: rel(n.checks) } : {}),
      ...(n.loop ? { loop: { ...n.loop, prefix: rel(n.loop.prefix), body: n.loop.body } } : {}),
    }));
}

interface CompiledSize {
  /** Nodes the steps compile to (condition-dropped steps counted: `validate` keeps them all). */
  nodes: number;
  /** The iteration counts of the most multiplying chain of nested loops, outermost first, and where it starts. */
  chain: number[];
  where: string;
}

/** How many nodes these steps compile to, counted without expanding anything. */
export function compiledSize(steps: StepDef[]): CompiledSize {
  let nodes = 0;
  let chain: number[] = [];
  let where = '';
  for (const step of steps) {
    let inner: CompiledSize = { nodes: 0, chain: [], where: '' };
    let own: number[] = [];
    if (step.gate) nodes += 1;
    else if (step.children.length) {
      inner = compiledSize(step.children);
      nodes += 1 + inner.nodes;
      own = inner.chain;
    } else if (step.loop) {
      const [from, to] = step.loop.range ?? [1, step.loop.count ?? 1];
      const iterations = Math.max(0, to - from + 1);
      inner = compiledSize(step.loop.body);
      nodes += 1 + iterations * inner.nodes;
      own = [iterations, ...inner.chain];
    } else nodes += (step.check || step.retry ? 2 : 1) + (step.onComplete ? 2 : 0);
    if (product(own) > product(chain)) {
      chain = own;
      where = step.loop ? `step "${step.id}"` : inner.where;
    }
  }
  return { nodes, chain, where };
}

const product = (factors: number[]) => factors.reduce((a, b) => a * b, factors.length ? 1 : 0);

function tooLarge(size: CompiledSize): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const loops =
    size.chain.length > 1
      ? `${size.chain.map(n).join(' × ')} = ${n(product(size.chain))} iterations of nested loops; `
      : '';
  return (
    `${loops}the formula expands to ${n(size.nodes)} steps, which exceeds the limit of ` +
    `${n(MAX_COMPILED_NODES)} steps per formula`
  );
}

/** The value every var takes: given, else its default; checked against its enum and pattern. */
function resolveVars(
  def: FormulaDef,
  given: Record<string, string>,
  mode: CompileMode,
  at: (where: string, field: string, message: string) => void,
  builtins: Partial<Record<BuiltinVar, string>>,
): Record<string, string> {
  const vars: Record<string, string> = {};
  const builtin = (name: string): name is BuiltinVar => (BUILTIN_VARS as readonly string[]).includes(name);
  for (const name of Object.keys(given)) {
    if (!def.vars.some((v) => v.name === name) && !builtin(name)) {
      at('', `vars.${name}`, 'unknown var (not declared in [vars])');
    }
  }
  // A builtin given at the launch replaces the run's own value.
  for (const name of Object.keys(given))
    if (builtin(name) && !def.vars.some((v) => v.name === name)) vars[name] = given[name]!;
  for (const v of def.vars) {
    const value = given[v.name] ?? (builtin(v.name) ? builtins[v.name] : undefined) ?? v.default;
    if (value === undefined) {
      if (v.required && mode === 'run') at('', `vars.${v.name}`, 'is required');
      // An optional var without a value stays as written.
      vars[v.name] = `{{${v.name}}}`;
      continue;
    }
    if (v.enum && !v.enum.includes(value)) {
      at('', `vars.${v.name}`, `${JSON.stringify(value)} is not one of ${v.enum.join(', ')}`);
    }
    if (v.pattern && !wholeMatch(v.pattern, value)) {
      at('', `vars.${v.name}`, `${JSON.stringify(value)} does not match ${v.pattern}`);
    }
    vars[v.name] = value;
  }
  return vars;
}

function checkUniqueIds(steps: StepDef[], at: (where: string, field: string, message: string) => void): void {
  const seen = new Set<string>();
  const walk = (list: StepDef[]) => {
    for (const step of list) {
      if (step.id && seen.has(step.id)) at(`step "${step.id}"`, 'id', 'is used by another step');
      seen.add(step.id);
      walk(step.children);
      // A loop body's ids live in each iteration's own namespace, but are still unique in the formula.
      if (step.loop) walk(step.loop.body);
    }
  };
  walk(steps);
}

/** `{{v}} == x`, `{{v}} != x`, `!value`, or a bare value (false when empty, false, 0, no or off). */
export function holds(condition: string): boolean {
  const unquote = (s: string) => s.trim().replace(/^(["'])(.*)\1$/, '$2');
  const eq = /^(.*?)(==|!=)(.*)$/.exec(condition);
  if (eq) {
    const same = unquote(eq[1]!) === unquote(eq[3]!);
    return eq[2] === '==' ? same : !same;
  }
  const text = condition.trim();
  if (text.startsWith('!')) return FALSY.has(unquote(text.slice(1)).toLowerCase());
  return !FALSY.has(unquote(text).toLowerCase());
}

/** Kahn's order, stable in declaration order; a cycle is reported once with its path. */
function topological<T extends { id: string; needs: string[] }>(nodes: T[], cycle: (path: string[]) => void): T[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const pending = new Map(nodes.map((n) => [n.id, n.needs.filter((d) => byId.has(d)).length]));
  const dependents = new Map<string, string[]>();
  for (const n of nodes) {
    for (const d of n.needs) {
      const list = dependents.get(d);
      if (list) list.push(n.id);
      else dependents.set(d, [n.id]);
    }
  }
  const out: T[] = [];
  const queue = nodes.filter((n) => pending.get(n.id) === 0).map((n) => n.id);
  for (let head = 0; head < queue.length; head++) {
    const id = queue[head]!;
    out.push(byId.get(id)!);
    for (const next of dependents.get(id) ?? []) {
      const left = pending.get(next)! - 1;
      pending.set(next, left);
      if (left === 0) queue.push(next);
    }
  }
  if (out.length < nodes.length) {
    const placed = new Set(out);
    const left = new Set(nodes.filter((n) => !placed.has(n)).map((n) => n.id));
    // Walk needs among what is left until a node repeats: that is a cycle.
    let id = [...left][0]!;
    const path: string[] = [];
    while (!path.includes(id)) {
      path.push(id);
      id = byId.get(id)!.needs.find((d) => left.has(d))!;
    }
    cycle(path.slice(path.indexOf(id)));
  }
  return out;
}
