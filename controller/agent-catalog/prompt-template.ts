/**
 * The part of Go's text/template that the reference's prompt templates use (`*.template.md` and the
 * `template-fragments/` they draw on): `{{ .Field }}`, `{{ define "name" }}…{{ end }}`, `{{ template "name" . }}`,
 * `{{ if … }}…{{ else }}…{{ end }}`, functions called by name with arguments (`{{ basename .AgentName }}`),
 * comments, and the `{{-`/`-}}` trims. A missing field is empty (the reference's `missingkey=zero`). What it does
 * not read — pipes, `range`, `with`, variables — is a TemplateError, so a prompt is never half-understood.
 */

export class TemplateError extends Error {}

/**
 * A template that exceeds a bound of rendering (MAX_RENDERED_CHARS, MAX_RENDER_STEPS, MAX_DEPTH): it is never
 * sent, nor sent as its text. `template` is the `define` whose rendering went over (the outermost on the way),
 * undefined for the body itself.
 */
export class TemplateLimitError extends TemplateError {
  constructor(
    message: string,
    readonly template: string | undefined,
  ) {
    super(message);
  }
}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'value'; words: string[] }
  | { kind: 'template'; name: string }
  | { kind: 'if'; cond: string[]; then: Node[]; else: Node[] };

export type TemplateFunctions = Record<string, (...args: string[]) => string>;

/** Calls of `template` nest at most this deep: a fragment that includes itself is an error, not a hang. */
export const MAX_DEPTH = 32;

/**
 * The most a template renders to, in characters (1 Mi): prompts the reference ships are tens of KiB, and a
 * prompt goes on a command line or into a first turn. Rendering stops as it would go over: a template that
 * doubles itself level after level is refused before it is ever built.
 */
export const MAX_RENDERED_CHARS = 1024 * 1024;

/**
 * The most pieces (texts, values, conditions, calls of `template`) one render evaluates: a template whose
 * output stays small but whose work does not (calls that render nothing, twice over, level after level) stops
 * within milliseconds. The reference's gastown prompts take under 100 (and render to under 20 K characters).
 */
export const MAX_RENDER_STEPS = 100_000;

const ACTION = /\{\{(-\s)?\s*([\s\S]*?)\s*(\s-)?\}\}/g;

interface Token {
  text: string;
  action?: string;
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let last = 0;
  let trimNext = false;
  for (const m of source.matchAll(ACTION)) {
    let text = source.slice(last, m.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (m[1]) text = text.replace(/\s+$/, '');
    if (text) tokens.push({ text });
    tokens.push({ text: '', action: m[2]! });
    trimNext = m[3] !== undefined;
    last = m.index + m[0].length;
  }
  let tail = source.slice(last);
  if (trimNext) tail = tail.replace(/^\s+/, '');
  if (tail) tokens.push({ text: tail });
  return tokens;
}

/** The words of an action: bare words, `.Field`s, and "quoted" strings (kept with their quotes). */
function words(action: string): string[] {
  const out: string[] = [];
  for (const m of action.matchAll(/"(?:[^"\\]|\\.)*"|`[^`]*`|[^\s]+/g)) out.push(m[0]);
  return out;
}

function unquote(word: string): string {
  if (word.startsWith('`')) return word.slice(1, -1);
  try {
    return JSON.parse(word) as string;
  } catch {
    throw new TemplateError(`bad string ${word}`);
  }
}

/** Parses a template; `define`d blocks go to `defines` (a later one of a name wins, as in Go). */
export function parseTemplate(source: string, defines: Map<string, Node[]>): Node[] {
  const tokens = tokenize(source);
  let i = 0;
  const block = (inside: string | undefined): { nodes: Node[]; end: 'end' | 'else' | 'eof'; elseIf?: string[] } => {
    const nodes: Node[] = [];
    while (i < tokens.length) {
      const t = tokens[i++]!;
      if (t.action === undefined) {
        nodes.push({ kind: 'text', text: t.text });
        continue;
      }
      const action = t.action;
      if (action.startsWith('/*')) continue;
      const w = words(action);
      const head = w[0] ?? '';
      if (head === 'end') {
        if (!inside) throw new TemplateError('{{ end }} without an opening action');
        return { nodes, end: 'end' };
      }
      if (head === 'else') {
        if (inside !== 'if') throw new TemplateError('{{ else }} outside {{ if }}');
        if (w[1] === 'if') return { nodes, end: 'else', elseIf: w.slice(2) };
        return { nodes, end: 'else' };
      }
      if (head === 'define') {
        if (w.length !== 2) throw new TemplateError(`bad define: {{ ${action} }}`);
        const name = unquote(w[1]!);
        const body = block('define');
        if (body.end !== 'end') throw new TemplateError(`define "${name}" has no {{ end }}`);
        defines.set(name, body.nodes);
        continue;
      }
      if (head === 'template') {
        if (w.length < 2 || w.length > 3 || (w[2] !== undefined && w[2] !== '.'))
          throw new TemplateError(`bad template call: {{ ${action} }} (only {{ template "name" . }} is read)`);
        nodes.push({ kind: 'template', name: unquote(w[1]!) });
        continue;
      }
      if (head === 'if') {
        nodes.push(ifNode(w.slice(1)));
        continue;
      }
      if (
        ['range', 'with', 'block', 'break', 'continue'].includes(head) ||
        action.includes('|') ||
        head.startsWith('$')
      )
        throw new TemplateError(`{{ ${action} }} is not read in prompt templates`);
      if (!head) throw new TemplateError('empty action {{ }}');
      nodes.push({ kind: 'value', words: w });
    }
    if (inside) throw new TemplateError(`{{ ${inside} }} has no {{ end }}`);
    return { nodes, end: 'eof' };
  };
  const ifNode = (cond: string[]): Node => {
    if (cond.length === 0) throw new TemplateError('{{ if }} without a condition');
    const then = block('if');
    if (then.end === 'end') return { kind: 'if', cond, then: then.nodes, else: [] };
    if (then.elseIf) return { kind: 'if', cond, then: then.nodes, else: [ifNode(then.elseIf)] };
    const otherwise = block('if');
    if (otherwise.end !== 'end') throw new TemplateError('{{ else }} has no {{ end }}');
    return { kind: 'if', cond, then: then.nodes, else: otherwise.nodes };
  };
  const out = block(undefined);
  return out.nodes;
}

interface Scope {
  data: Record<string, string>;
  functions: TemplateFunctions;
  defines: Map<string, Node[]>;
  /** What has been rendered so far: every piece is checked against MAX_RENDERED_CHARS before it is added. */
  out: string;
  steps: number;
  /** The `define`s being rendered, outermost first. */
  stack: string[];
}

function evaluate(w: string[], scope: Scope): string {
  const arg = (word: string): string => {
    if (word === '.') throw new TemplateError('`.` is read only as the argument of {{ template }}');
    if (word.startsWith('.')) return scope.data[word.slice(1)] ?? '';
    if (word.startsWith('"') || word.startsWith('`')) return unquote(word);
    if (/^-?\d+$/.test(word) || word === 'true' || word === 'false') return word;
    return call(word, []);
  };
  const call = (name: string, args: string[]): string => {
    const fn = Object.hasOwn(scope.functions, name) ? scope.functions[name] : undefined;
    if (!fn) throw new TemplateError(`function "${name}" not defined`);
    return fn(...args);
  };
  const [head, ...rest] = w;
  if (rest.length === 0) return arg(head!);
  if (head!.startsWith('.') || head!.startsWith('"')) throw new TemplateError(`${head} is not a function`);
  return call(head!, rest.map(arg));
}

function over(scope: Scope, what: string): TemplateLimitError {
  const template = scope.stack[0];
  return new TemplateLimitError(
    `${template === undefined ? 'the template' : `template "${template}"`} ${what}`,
    template,
  );
}

function emit(scope: Scope, text: string): void {
  if (scope.out.length + text.length > MAX_RENDERED_CHARS) {
    throw over(scope, `renders more than ${MAX_RENDERED_CHARS} characters (the limit)`);
  }
  scope.out += text;
}

function render(nodes: Node[], scope: Scope, depth: number): void {
  for (const node of nodes) {
    if (++scope.steps > MAX_RENDER_STEPS) {
      throw over(scope, `takes more than ${MAX_RENDER_STEPS} steps to render (the limit)`);
    }
    if (node.kind === 'text') emit(scope, node.text);
    else if (node.kind === 'value') emit(scope, evaluate(node.words, scope));
    else if (node.kind === 'if') {
      const v = evaluate(node.cond, scope);
      render(v !== '' && v !== 'false' && v !== '0' ? node.then : node.else, scope, depth);
    } else {
      renderNamed(node.name, scope, depth + 1);
    }
  }
}

function renderNamed(name: string, scope: Scope, depth: number): void {
  if (depth > MAX_DEPTH) throw over(scope, `nests templates more than ${MAX_DEPTH} deep (the limit), at "${name}"`);
  const body = scope.defines.get(name);
  if (!body) throw new TemplateError(`no template "${name}"`);
  scope.stack.push(name);
  render(body, scope, depth);
  scope.stack.pop();
}

/** The names a template's text `define`s (for checking fragment names without rendering). */
export function definedNames(source: string): string[] {
  const defines = new Map<string, Node[]>();
  parseTemplate(source, defines);
  return [...defines.keys()];
}

/**
 * Renders `body` with the fragments of `library` (template texts whose `define`s it may call, later ones winning a
 * name, the body's own last), then appends each of `append` (fragment names), each after a blank line. Throws a
 * TemplateError saying what is wrong (a TemplateLimitError for a bound it would exceed).
 */
export function renderPromptTemplate(
  body: string,
  options: { library: string[]; append: string[]; data: Record<string, string>; functions: TemplateFunctions },
): string {
  const defines = new Map<string, Node[]>();
  for (const text of options.library) parseTemplate(text, defines);
  const main = parseTemplate(body, defines);
  const scope: Scope = { data: options.data, functions: options.functions, defines, out: '', steps: 0, stack: [] };
  render(main, scope, 0);
  for (const name of options.append) {
    emit(scope, '\n\n');
    renderNamed(name, scope, 1);
  }
  return scope.out;
}

/** A template text and the file it is read from, for naming where a problem is. */
export interface TemplateSource {
  file: string;
  text: string;
}

/**
 * The `define`s that call themselves, directly or through others (whatever their data, they never end: a
 * template's data is the same all the way down), each as the circle of names it goes round, and the file that
 * defines its first name. `sources` in the order they are read (later ones winning a name).
 */
export function recursiveDefines(sources: TemplateSource[]): { file: string; circle: string[] }[] {
  const defines = new Map<string, Node[]>();
  const fileOf = new Map<string, string>();
  for (const source of sources) {
    const own = new Map<string, Node[]>();
    parseTemplate(source.text, own);
    for (const [name, body] of own) {
      defines.set(name, body);
      fileOf.set(name, source.file);
    }
  }
  const calls = (nodes: Node[], into: Set<string>): Set<string> => {
    for (const node of nodes) {
      if (node.kind === 'template') into.add(node.name);
      else if (node.kind === 'if') calls(node.else, calls(node.then, into));
    }
    return into;
  };
  const found: { file: string; circle: string[] }[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): void => {
    if (state.get(name) === 'done' || !defines.has(name)) return;
    if (state.get(name) === 'visiting') {
      const circle = [...path.slice(path.indexOf(name)), name];
      found.push({ file: fileOf.get(circle[0]!)!, circle });
      return;
    }
    state.set(name, 'visiting');
    path.push(name);
    for (const callee of calls(defines.get(name)!, new Set())) visit(callee);
    path.pop();
    state.set(name, 'done');
  };
  for (const name of defines.keys()) visit(name);
  return found;
}
