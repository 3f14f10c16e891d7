import type { WebhookRule } from './webhook-config.js';

/** A verified delivery as rules see it. */
export interface MatchInput {
  eventType?: string;
  deliveryId?: string;
  identity?: string;
  /** The parsed JSON body (an object). */
  body: Record<string, unknown>;
}

export interface RuleMatch {
  rule: WebhookRule;
  index: number;
  /** The rule's args rendered against the delivery: the firing's vars. */
  vars: Record<string, string>;
}

/**
 * The first rule, in the order written, whose `event` is the delivery's (or `*`) and whose every `match` path
 * holds: equal as text, `*` present at all, `prefix*` starting so. A path that is not there never matches.
 */
export function matchRule(rules: WebhookRule[], input: MatchInput): RuleMatch | undefined {
  for (const [index, rule] of rules.entries()) {
    if (rule.event !== '*' && rule.event !== input.eventType) continue;
    if (!Object.entries(rule.match).every(([path, want]) => valueMatches(input.body, path, want))) continue;
    const vars: Record<string, string> = {};
    for (const [name, template] of Object.entries(rule.args)) vars[name] = renderTemplate(template, input);
    return { rule, index, vars };
  }
  return undefined;
}

function valueMatches(body: unknown, path: string, want: string): boolean {
  const found = resolvePath(body, path);
  if (!found.present) return false;
  const actual = asText(found.value);
  if (want === '*') return true;
  if (want.endsWith('*')) return actual.startsWith(want.slice(0, -1));
  return actual === want;
}

/**
 * `{{ path }}` fields filled in from the delivery — a dotted payload path, or `@event`, `@delivery` (`@dedup`),
 * `@identity`; a missing one is empty, an unclosed `{{` kept as written. A value is only ever text: never read
 * again as a template, path or command.
 */
export function renderTemplate(template: string, input: MatchInput): string {
  return template.replace(/\{\{([^}]*)\}\}/g, (_, raw: string) => {
    const token = raw.trim();
    if (token === '@event') return input.eventType ?? '';
    if (token === '@delivery' || token === '@dedup') return input.deliveryId ?? '';
    if (token === '@identity') return input.identity ?? '';
    if (token.startsWith('@') || token === '') return '';
    const found = resolvePath(input.body, token);
    return found.present ? asText(found.value) : '';
  });
}

/** A dotted path into parsed JSON: object keys, array indexes (`labels.0.name`). */
export function resolvePath(root: unknown, path: string): { present: boolean; value?: unknown } {
  let node = root;
  for (const part of path.split('.')) {
    if (Array.isArray(node)) {
      if (!/^\d+$/.test(part) || Number(part) >= node.length) return { present: false };
      node = node[Number(part)];
    } else if (typeof node === 'object' && node !== null && Object.hasOwn(node, part)) {
      node = (node as Record<string, unknown>)[part];
    } else {
      return { present: false };
    }
  }
  return { present: true, value: node };
}

/** Text of a JSON value: strings as they are, null empty, objects and arrays as compact JSON. */
function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A body as a JSON object, or why it is not one (an authentic sender's malformed payload: a 400). */
export function parseObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('the body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('the body is not a JSON object');
  return value as Record<string, unknown>;
}
