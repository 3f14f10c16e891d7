import { parse } from 'smol-toml';
import { tomlSyntaxError } from '../../shared/config/toml-syntax.js';
import { parseDuration } from '../../shared/duration.js';
import { auditKeys } from '../config-schema/key-audit.js';
import { FORMULA } from '../config-schema/reference-keys.js';

/** A variable of `[vars]`: `name = "default"` or a table `{ description, default, required, enum, pattern }`. */
export interface VarDef {
  name: string;
  description?: string;
  default?: string;
  required: boolean;
  enum?: string[];
  pattern?: string;
}

/** A step's check: a command the controller runs once the step's bead is closed; exit 0 passes it. */
export interface StepCheck {
  command: string;
  timeoutMs: number;
  maxAttempts: number;
}

/** A step's retry: a step closed with outcome `fail` is reopened, up to `maxAttempts` attempts in all. */
export interface StepRetry {
  maxAttempts: number;
  /** `hard_fail` fails the whole molecule; `soft_fail` lets the steps after it go on. */
  onExhausted: 'hard_fail' | 'soft_fail';
}

/** A step that is a wait: it holds what needs it until a time passes, a command succeeds or a person closes it. */
export interface StepGate {
  kind: 'timer' | 'condition' | 'human';
  /** Timer: how long after it is reached it opens. */
  durationMs?: number;
  /** Condition: the command (exit 0 opens the gate), how often it runs, and its time-out. */
  command?: string;
  intervalMs?: number;
  timeoutMs?: number;
}

export interface StepLoop {
  /** Iterations 1..count, or range[0]..range[1]. */
  count?: number;
  range?: [number, number];
  /**
   * A runtime loop: the body runs again after each iteration until this holds or `max` iterations ran.
   * `<step>.status == complete|failed` or `<step>.output.<key> == value` (`!=` too), `<step>` a body step's id
   * (or `step`, the body's last step) and `output.<key>` the metadata the agent set on it when it closed it.
   */
  until?: string;
  max?: number;
  /** The variable that holds the iteration's number inside the body (`{{i}}`). */
  var?: string;
  body: StepDef[];
}

export interface StepDef {
  id: string;
  title?: string;
  description?: string;
  type?: string;
  priority?: number;
  labels: string[];
  metadata: Record<string, string>;
  needs: string[];
  condition?: string;
  assignee?: string;
  children: StepDef[];
  loop?: StepLoop;
  check?: StepCheck;
  retry?: StepRetry;
  gate?: StepGate;
  /** `on_complete`: runs of `bond` poured when the step passes, one per item of `for_each`. */
  onComplete?: StepOnComplete;
  /** `waits_for`: the step also waits for the runs a step before it bonded (all of them, or the first). */
  waitsFor?: { mode: 'all' | 'any'; spawner?: string };
  /** `expand`: the expansion formula whose `[[template]]` steps replace this one. */
  expand?: string;
  /** `expand_vars`: values for the expansion's `{var}` fields, over its defaults. */
  expandVars: Record<string, string>;
}

/**
 * What a step pours when it passes: a run of `bond` per item of `for_each` — `output.<key>` (the metadata its agent
 * set closing it: a JSON array, else one item a line) or `vars.<name>` (a var of the run, the same way) — with
 * `vars` filled from `{item}`, `{item.<field>}` and `{index}`.
 */
export interface StepOnComplete {
  forEach: string;
  bond: string;
  vars: Record<string, string>;
  /** `sequential`: each run starts once the one before it ended; otherwise they all start at once. */
  sequential: boolean;
}

/** `[[compose.expand]]` (one step, `target`) or `[[compose.map]]` (every step whose id matches `select`). */
export interface ComposeRule {
  target?: string;
  select?: string;
  with: string;
  vars: Record<string, string>;
}

/** A formula file as written, checked for shape (not yet for references: see compileFormula). */
export interface FormulaDef {
  name: string;
  description: string;
  vars: VarDef[];
  steps: StepDef[];
  /** The file, relative to the city (`formulas/release.toml`). */
  file: string;
  /** `workflow` (steps a run makes) or `expansion` (`[[template]]` steps other formulas expand into theirs). */
  type: 'workflow' | 'expansion';
  /** Formulas whose vars and steps this one starts from, in order (a later one's, then this one's, win). */
  extends: string[];
  /** An expansion formula's steps, with `{target}` and `{var}` fields. */
  template: StepDef[];
  /** `[compose]`: steps replaced by expansion formulas' templates. */
  compose: { expand: ComposeRule[]; map: ComposeRule[] };
}

const DEFAULT_CHECK_TIMEOUT_MS = 60_000;
const DEFAULT_CONDITION_INTERVAL_MS = 30_000;
const STEP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** `loop.until`: a body step's status or output compared with a value (the reference's field conditions). */
export const UNTIL = /^\s*([A-Za-z0-9][A-Za-z0-9_-]*)\.(status|output\.[A-Za-z0-9_.-]+)\s*(==|!=)\s*(.+?)\s*$/;
export const FORMULA_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Reads a formula's TOML. Every error is collected (not just the first), each naming the file, the step and the
 * field: `formulas/release.toml: step "build": needs: must be an array of step ids`. The formula comes back
 * whenever the TOML parses — with errors, only to be checked further, never to run.
 */
export function parseFormula(
  text: string,
  file: string,
  name: string,
): { formula?: FormulaDef; errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  let doc: Record<string, unknown>;
  try {
    doc = parse(text);
  } catch (err) {
    return { errors: [tomlSyntaxError(err, text, file).message], warnings };
  }
  // A reference key ctl does not act on is named and the formula runs without it; an unknown key (a typo) is an
  // error: the formula does not run until it is fixed.
  for (const finding of auditKeys(doc, FORMULA, file)) {
    (finding.kind === 'unknown' ? errors : warnings).push(`${file}: ${finding.message}`);
  }
  const at = (where: string | undefined, field: string, message: string) =>
    errors.push(`${file}: ${where ? `${where}: ` : ''}${field}: ${message}`);
  const declared = doc.formula;
  if (declared !== undefined && declared !== name) {
    at(undefined, 'formula', `names ${JSON.stringify(declared)}, but the file is ${JSON.stringify(name)}`);
  }
  const requires = doc.requires;
  if (requires !== undefined) {
    if (!isTable(requires)) at(undefined, 'requires', 'must be a table');
    else {
      for (const key of Object.keys(requires)) {
        if (key !== 'formula_compiler') at(undefined, `requires.${key}`, 'unknown requirement');
      }
    }
  }
  const description = str(doc, 'description', undefined, 'description', at) ?? '';
  const vars = readVars(doc.vars, at);
  const steps = readSteps(doc.steps, 'steps', at);
  const template = readSteps(doc.template, 'template', at);
  const type = str(doc, 'type', undefined, 'type', at) ?? 'workflow';
  if (type !== 'workflow' && type !== 'expansion') at(undefined, 'type', 'must be "workflow" or "expansion"');
  let parents: string[] = [];
  if (doc.extends !== undefined) {
    const list = typeof doc.extends === 'string' ? [doc.extends] : strings(doc.extends);
    if (!list || list.some((p) => !FORMULA_NAME.test(p))) at(undefined, 'extends', 'must be formula names');
    else parents = list;
  }
  const compose = readCompose(doc.compose, at);
  if (type === 'expansion') {
    if (doc.template === undefined && !parents.length) {
      at(undefined, 'template', 'an expansion formula needs at least one [[template]]');
    }
  } else if (doc.steps === undefined && !parents.length) {
    at(undefined, 'steps', 'a formula needs at least one [[steps]] (or extends another)');
  }
  const formula: FormulaDef = {
    name,
    description,
    vars,
    steps,
    file,
    type: type === 'expansion' ? 'expansion' : 'workflow',
    extends: parents,
    template,
    compose,
  };
  // With errors it is returned too, so a validation can also name what its references get wrong; it never runs.
  return { formula, errors, warnings };
}

function readCompose(value: unknown, at: At): FormulaDef['compose'] {
  const compose: FormulaDef['compose'] = { expand: [], map: [] };
  if (value === undefined) return compose;
  if (!isTable(value)) {
    at(undefined, 'compose', 'must be a table');
    return compose;
  }
  for (const kind of ['expand', 'map'] as const) {
    const list = value[kind];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((r) => !isTable(r))) {
      at(undefined, `compose.${kind}`, `must be an array of tables ([[compose.${kind}]])`);
      continue;
    }
    const pick = kind === 'expand' ? 'target' : 'select';
    for (const [i, rule] of (list as Record<string, unknown>[]).entries()) {
      const where = `compose.${kind}[${i}]`;
      const on = str(rule, pick, where, pick, at);
      const withName = str(rule, 'with', where, 'with', at);
      if (!on) at(where, pick, kind === 'expand' ? 'is required (the step to expand)' : 'is required (a glob of ids)');
      if (!withName) at(where, 'with', 'is required (the expansion formula)');
      const vars = stringTable(rule.vars, where, 'vars', at);
      if (on && withName) compose[kind].push({ [pick]: on, with: withName, vars });
    }
  }
  return compose;
}

function stringTable(value: unknown, where: string, field: string, at: At): Record<string, string> {
  if (value === undefined) return {};
  if (!isTable(value)) {
    at(where, field, 'must be a table of strings');
    return {};
  }
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[key] = String(v);
    else at(where, `${field}.${key}`, 'must be a string');
  }
  return out;
}

type At = (where: string | undefined, field: string, message: string) => void;

function readVars(value: unknown, at: At): VarDef[] {
  if (value === undefined) return [];
  if (!isTable(value)) {
    at(undefined, 'vars', 'must be a table');
    return [];
  }
  const vars: VarDef[] = [];
  for (const [name, def] of Object.entries(value)) {
    const where = `var "${name}"`;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) at(where, 'name', 'must be letters, digits and _');
    if (typeof def === 'string') {
      vars.push({ name, default: def, required: false });
      continue;
    }
    if (!isTable(def)) {
      at(where, 'value', 'must be a default string or a table { default, required, enum, pattern, description }');
      continue;
    }
    const v: VarDef = { name, required: false };
    v.description = str(def, 'description', where, 'description', at);
    const dflt = def.default;
    if (dflt !== undefined) {
      if (typeof dflt === 'string' || typeof dflt === 'number' || typeof dflt === 'boolean') v.default = String(dflt);
      else at(where, 'default', 'must be a string');
    }
    if (def.required !== undefined) {
      if (typeof def.required !== 'boolean') at(where, 'required', 'must be true or false');
      else v.required = def.required;
    }
    if (v.required && v.default !== undefined) at(where, 'required', 'a required var cannot have a default');
    if (def.enum !== undefined) {
      if (!Array.isArray(def.enum) || def.enum.some((e) => typeof e !== 'string') || def.enum.length === 0) {
        at(where, 'enum', 'must be a non-empty array of strings');
      } else v.enum = def.enum as string[];
    }
    const pattern = str(def, 'pattern', where, 'pattern', at);
    if (pattern !== undefined) {
      try {
        new RegExp(pattern);
        v.pattern = pattern;
      } catch (err) {
        at(where, 'pattern', `is not a regular expression: ${(err as Error).message}`);
      }
    }
    if (v.default !== undefined && v.enum && !v.enum.includes(v.default)) {
      at(where, 'default', `${JSON.stringify(v.default)} is not one of its enum`);
    }
    if (v.default !== undefined && v.pattern && !wholeMatch(v.pattern, v.default)) {
      at(where, 'default', `${JSON.stringify(v.default)} does not match its pattern`);
    }
    for (const key of Object.keys(def)) {
      if (!['description', 'default', 'required', 'enum', 'pattern', 'type'].includes(key)) {
        at(where, key, 'unknown field');
      }
    }
    vars.push(v);
  }
  return vars;
}

function readSteps(value: unknown, field: string, at: At): StepDef[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((s) => !isTable(s))) {
    at(undefined, field, `must be an array of tables ([[${field}]])`);
    return [];
  }
  return (value as Record<string, unknown>[]).map((s, i) => readStep(s, `${field}[${i}]`, at, field === 'template'));
}

function readStep(t: Record<string, unknown>, position: string, at: At, template = false): StepDef {
  const id = typeof t.id === 'string' ? t.id : '';
  const where = id ? `step "${id}"` : position;
  // A template's ids are made from its target's (`{target}.build`): checked as they will be once filled.
  const plain = template ? id.replace(/\{[A-Za-z_][A-Za-z0-9_.]*\}/g, 'x') : id;
  if (!id) at(where, 'id', 'is required');
  else if (!STEP_ID.test(plain))
    at(where, 'id', 'must be letters, digits, _, - and . (starting with a letter or digit)');
  const step: StepDef = {
    id,
    labels: [],
    metadata: {},
    needs: [],
    children: [],
    expandVars: {},
  };
  step.title = str(t, 'title', where, 'title', at);
  step.description = str(t, 'description', where, 'description', at);
  step.type = str(t, 'type', where, 'type', at);
  step.condition = str(t, 'condition', where, 'condition', at);
  step.assignee = str(t, 'assignee', where, 'assignee', at);
  if (t.priority !== undefined) {
    const p = Number(t.priority);
    if (!Number.isInteger(p) || p < 0 || p > 4) at(where, 'priority', 'must be an integer from 0 to 4');
    else step.priority = p;
  }
  for (const key of ['tags', 'labels'] as const) {
    if (t[key] === undefined) continue;
    const list = strings(t[key]);
    if (!list) at(where, key, 'must be an array of strings');
    else step.labels.push(...list);
  }
  for (const key of ['needs', 'depends_on'] as const) {
    if (t[key] === undefined) continue;
    const list = strings(t[key]);
    if (!list) at(where, key, 'must be an array of step ids');
    else step.needs.push(...list.filter((n) => !step.needs.includes(n)));
  }
  if (t.metadata !== undefined) {
    if (!isTable(t.metadata)) at(where, 'metadata', 'must be a table of strings');
    else {
      for (const [key, value] of Object.entries(t.metadata)) {
        if (typeof value !== 'string') at(where, `metadata.${key}`, 'must be a string');
        else if (key.startsWith('ctl.')) at(where, `metadata.${key}`, 'keys starting with ctl. are reserved');
        else step.metadata[key] = value;
      }
    }
  }
  if (t.children !== undefined) {
    step.children = template ? readSteps(t.children, 'template', at) : readSteps(t.children, `${where}: children`, at);
  }
  if (t.loop !== undefined) step.loop = readLoop(t.loop, where, at);
  if (t.check !== undefined) step.check = readCheck(t.check, where, at);
  if (t.retry !== undefined) step.retry = readRetry(t.retry, where, at);
  if (t.gate !== undefined) step.gate = readGate(t.gate, where, at);
  step.expand = str(t, 'expand', where, 'expand', at);
  if (t.on_complete !== undefined) step.onComplete = readOnComplete(t.on_complete, where, at);
  const waits = str(t, 'waits_for', where, 'waits_for', at);
  if (waits !== undefined) {
    const of = /^children-of\(([A-Za-z0-9][A-Za-z0-9_.-]*)\)$/.exec(waits);
    if (waits === 'all-children' || waits === 'any-children')
      step.waitsFor = { mode: waits === 'all-children' ? 'all' : 'any' };
    else if (of) step.waitsFor = { mode: 'all', spawner: of[1]! };
    else at(where, 'waits_for', 'must be all-children, any-children or children-of(<step>)');
    if (step.waitsFor && !step.waitsFor.spawner && !step.needs.length) {
      at(where, 'waits_for', 'needs a step in needs (whose children it waits for) or children-of(<step>)');
    }
  }
  step.expandVars = stringTable(t.expand_vars, where, 'expand_vars', at);
  const kinds = [step.children.length > 0, step.loop !== undefined, step.gate !== undefined, !!step.expand];
  if (kinds.filter(Boolean).length > 1)
    at(where, 'children', 'a step has at most one of children, loop, gate and expand');
  if ((step.check || step.retry) && (step.children.length || step.loop || step.gate)) {
    at(where, step.check ? 'check' : 'retry', 'only a step of work (no children, loop or gate) can have one');
  }
  if (step.title === undefined && !step.gate && !step.loop && !step.expand) at(where, 'title', 'is required');
  return step;
}

function readOnComplete(value: unknown, where: string, at: At): StepOnComplete | undefined {
  if (!isTable(value)) {
    at(where, 'on_complete', 'must be a table { for_each, bond, vars }');
    return undefined;
  }
  const forEach = str(value, 'for_each', where, 'on_complete.for_each', at);
  const bond = str(value, 'bond', where, 'on_complete.bond', at);
  if (forEach === undefined) at(where, 'on_complete.for_each', 'is required (output.<key> or vars.<name>)');
  else if (!/^(output|vars)\.[A-Za-z0-9_.-]+$/.test(forEach)) {
    at(where, 'on_complete.for_each', `must be output.<key> or vars.<name> (got ${JSON.stringify(forEach)})`);
  }
  if (bond === undefined) at(where, 'on_complete.bond', 'is required (the formula run for each item)');
  else if (!FORMULA_NAME.test(bond)) at(where, 'on_complete.bond', 'must be a formula name');
  for (const mode of ['parallel', 'sequential']) {
    if (value[mode] !== undefined && typeof value[mode] !== 'boolean')
      at(where, `on_complete.${mode}`, 'must be true or false');
  }
  if (value.parallel === true && value.sequential === true) {
    at(where, 'on_complete', 'cannot set both parallel and sequential');
  }
  for (const key of Object.keys(value)) {
    if (!['for_each', 'bond', 'vars', 'parallel', 'sequential'].includes(key))
      at(where, `on_complete.${key}`, 'unknown field');
  }
  const vars = stringTable(value.vars, where, 'on_complete.vars', at);
  return forEach && bond ? { forEach, bond, vars, sequential: value.sequential === true } : undefined;
}

function readLoop(value: unknown, where: string, at: At): StepLoop | undefined {
  if (!isTable(value)) {
    at(where, 'loop', 'must be a table { count | range, var, body }');
    return undefined;
  }
  const loop: StepLoop = { body: [] };
  if (value.count !== undefined) {
    const n = Number(value.count);
    if (typeof value.count === 'string' || !Number.isInteger(n) || n < 1 || n > 1000) {
      at(where, 'loop.count', 'must be a literal integer from 1 to 1000');
    } else loop.count = n;
  }
  if (value.range !== undefined) {
    const range = parseRange(value.range);
    if (!range) at(where, 'loop.range', 'must be "A..B" or [A, B] with integers A ≤ B (at most 1000 iterations)');
    else loop.range = range;
  }
  const kinds = ['count', 'range', 'until'].filter((k) => value[k] !== undefined);
  if (kinds.length === 0) at(where, 'loop', 'needs count, range or until');
  else if (kinds.length > 1) at(where, 'loop', `takes one of count, range and until, not ${kinds.join(' and ')}`);
  if (value.until !== undefined) {
    const until = str(value, 'until', where, 'loop.until', at);
    if (until !== undefined && !UNTIL.test(until)) {
      at(
        where,
        'loop.until',
        `must be <step>.status == complete|failed or <step>.output.<key> == value (got ${JSON.stringify(until)})`,
      );
    } else loop.until = until;
    const max = Number(value.max);
    if (value.max === undefined) at(where, 'loop.max', 'is required with until (the most iterations that run)');
    else if (typeof value.max === 'string' || !Number.isInteger(max) || max < 1 || max > 1000) {
      at(where, 'loop.max', 'must be a literal integer from 1 to 1000');
    } else loop.max = max;
  } else if (value.max !== undefined) at(where, 'loop.max', 'goes with until');
  loop.var = str(value, 'var', where, 'loop.var', at);
  if (loop.var !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(loop.var)) {
    at(where, 'loop.var', 'must be letters, digits and _');
  }
  loop.body = readSteps(value.body, `${where}: loop.body`, at);
  if (loop.body.length === 0) at(where, 'loop.body', 'needs at least one step ([[steps.loop.body]])');
  return loop;
}

function parseRange(value: unknown): [number, number] | undefined {
  let pair: unknown[] | undefined;
  if (typeof value === 'string') {
    const m = /^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$/.exec(value);
    pair = m ? [Number(m[1]), Number(m[2])] : undefined;
  } else if (Array.isArray(value) && value.length === 2) pair = value.map(Number);
  if (!pair) return undefined;
  const [a, b] = pair as [number, number];
  if (!Number.isInteger(a) || !Number.isInteger(b) || a > b || b - a >= 1000) return undefined;
  return [a, b];
}

function readCheck(value: unknown, where: string, at: At): StepCheck | undefined {
  if (!isTable(value)) {
    at(where, 'check', 'must be a table { command, timeout, max_attempts }');
    return undefined;
  }
  // The reference nests the command as check.check { mode, path, timeout }; both forms are read.
  const inner = isTable(value.check) ? value.check : value;
  const mode = str(inner, 'mode', where, 'check.mode', at);
  if (mode !== undefined && mode !== 'exec') at(where, 'check.mode', `must be "exec" (got ${JSON.stringify(mode)})`);
  const command = str(inner, 'command', where, 'check.command', at) ?? str(inner, 'path', where, 'check.path', at);
  if (!command) at(where, 'check.command', 'is required (a shell command; exit 0 passes the step)');
  const timeoutMs = duration(inner, 'timeout', where, 'check.timeout', at) ?? DEFAULT_CHECK_TIMEOUT_MS;
  const maxAttempts = attempts(value.max_attempts, where, 'check.max_attempts', at) ?? 1;
  return command ? { command, timeoutMs, maxAttempts } : undefined;
}

function readRetry(value: unknown, where: string, at: At): StepRetry | undefined {
  if (!isTable(value)) {
    at(where, 'retry', 'must be a table { max_attempts, on_exhausted }');
    return undefined;
  }
  const maxAttempts = attempts(value.max_attempts, where, 'retry.max_attempts', at);
  if (maxAttempts === undefined && value.max_attempts === undefined) at(where, 'retry.max_attempts', 'is required');
  const onExhausted = str(value, 'on_exhausted', where, 'retry.on_exhausted', at) ?? 'hard_fail';
  if (onExhausted !== 'hard_fail' && onExhausted !== 'soft_fail') {
    at(where, 'retry.on_exhausted', 'must be hard_fail or soft_fail');
    return undefined;
  }
  return maxAttempts === undefined ? undefined : { maxAttempts, onExhausted };
}

function readGate(value: unknown, where: string, at: At): StepGate | undefined {
  if (!isTable(value)) {
    at(where, 'gate', 'must be a table { type = "timer" | "condition" | "human", … }');
    return undefined;
  }
  const kind = str(value, 'type', where, 'gate.type', at);
  if (kind !== 'timer' && kind !== 'condition' && kind !== 'human') {
    at(where, 'gate.type', 'must be timer, condition or human');
    return undefined;
  }
  const gate: StepGate = { kind };
  if (kind === 'timer') {
    gate.durationMs =
      duration(value, 'duration', where, 'gate.duration', at) ?? duration(value, 'timeout', where, 'gate.timeout', at);
    if (gate.durationMs === undefined) at(where, 'gate.duration', 'a timer gate needs a duration (30s, 10m, 1h)');
  }
  if (kind === 'condition') {
    gate.command = str(value, 'check', where, 'gate.check', at) ?? str(value, 'command', where, 'gate.command', at);
    if (!gate.command) at(where, 'gate.check', 'a condition gate needs a check command (exit 0 opens it)');
    gate.intervalMs = duration(value, 'interval', where, 'gate.interval', at) ?? DEFAULT_CONDITION_INTERVAL_MS;
    gate.timeoutMs = duration(value, 'check_timeout', where, 'gate.check_timeout', at) ?? 10_000;
  }
  return gate;
}

function attempts(value: unknown, where: string, field: string, at: At): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value === 'string' || !Number.isInteger(n) || n < 1 || n > 100) {
    at(where, field, 'must be an integer from 1 to 100');
    return undefined;
  }
  return n;
}

function duration(t: Record<string, unknown>, key: string, where: string, field: string, at: At): number | undefined {
  const text = str(t, key, where, field, at);
  if (text === undefined) return undefined;
  try {
    return parseDuration(text);
  } catch {
    at(where, field, `must be a duration such as 30s, 5m or 1h (got ${JSON.stringify(text)})`);
    return undefined;
  }
}

function str(
  t: Record<string, unknown>,
  key: string,
  where: string | undefined,
  field: string,
  at: At,
): string | undefined {
  const v = t[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') {
    at(where, field, 'must be a string');
    return undefined;
  }
  return v;
}

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

export function wholeMatch(pattern: string, value: string): boolean {
  return new RegExp(`^(?:${pattern})$`).test(value);
}
