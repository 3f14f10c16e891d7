/**
 * The part of Go's text/template that the reference's prompt templates use (`*.template.md` and the
 * `template-fragments/` they draw on): `{{ .Field }}`, `{{ define "name" }}…{{ end }}`, `{{ template "name" . }}`,
 * `{{ if … }}…{{ else }}…{{ end }}`, functions called by name with arguments (`{{ basename .AgentName }}`),
 * comments, and the `{{-`/`-}}` trims. A missing field is empty (the reference's `missingkey=zero`). What it does
 * not read — pipes, `range`, `with`, variables — is a TemplateError, so a prompt is never half-understood.
 */

export class TemplateError extends Error {}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'value'; words: string[] }
  | { kind: 'template'; name: string }
  | { kind: 'if'; cond: string[]; then: Node[]; else: Node[] };

export type TemplateFunctions = Record<string, (...args: string[]) => string>;

/** Calls of `template` nest at most this deep: a fragment that includes itself is an error, not a hang. */
const MAX_DEPTH = 32;

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

function render(nodes: Node[], scope: Scope, depth: number): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'value') out += evaluate(node.words, scope);
    else if (node.kind === 'if') {
      const v = evaluate(node.cond, scope);
      out += render(v !== '' && v !== 'false' && v !== '0' ? node.then : node.else, scope, depth);
    } else {
      out += renderNamed(node.name, scope, depth + 1);
    }
  }
  return out;
}

function renderNamed(name: string, scope: Scope, depth: number): string {
  if (depth > MAX_DEPTH) throw new TemplateError(`template "${name}" nests more than ${MAX_DEPTH} deep`);
  const body = scope.defines.get(name);
  if (!body) throw new TemplateError(`no template "${name}"`);
  return render(body, scope, depth);
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
 * TemplateError saying what is wrong.
 */
export function renderPromptTemplate(
  body: string,
  options: { library: string[]; append: string[]; data: Record<string, string>; functions: TemplateFunctions },
): string {
  const defines = new Map<string, Node[]>();
  for (const text of options.library) parseTemplate(text, defines);
  const main = parseTemplate(body, defines);
  const scope: Scope = { data: options.data, functions: options.functions, defines };
  let out = render(main, scope, 0);
  for (const name of options.append) out += `\n\n${renderNamed(name, scope, 1)}`;
  return out;
}
