import { Problem } from './problem.js';

/** A body must be an object or an array (RFC 8259 whitespace first): a bare string or number is no request. */
const OBJECT_OR_ARRAY = /^[ \t\n\r]*[[{]/;

/** `"__proto__"` as a key, its letters plain or \u-escaped: JSON.parse makes it an own property, harmless here, but
 * a later spread or Object.assign of the body would set the prototype of what it copies into. */
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
/** `"constructor"` as a key: its `prototype` member is the other way to poison a prototype by merging. */
const CONSTRUCTOR_KEY =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

/**
 * A JSON request body's value, or a 400 problem saying why it is none: not JSON, not an object or array, or
 * carrying a `__proto__` key (or `constructor.prototype`) — the rules koa-body's parser (co-body with hapi's
 * bourne) applied. The key scan is a reviver, run only when the text names such a key, so ordinary bodies are
 * parsed by JSON.parse alone.
 */
export function parseJsonText(text: string): unknown {
  if (!OBJECT_OR_ARRAY.test(text)) {
    if (text === '') return {};
    throw invalid('only an object or an array is a request body');
  }
  const suspicious = PROTO_KEY.test(text) || CONSTRUCTOR_KEY.test(text);
  try {
    return suspicious ? JSON.parse(text, refusePoisonedKeys) : JSON.parse(text);
  } catch (err) {
    throw invalid((err as Error).message);
  }
}

function refusePoisonedKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new SyntaxError('the key "__proto__" is not accepted');
  if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
    throw new SyntaxError('the key "constructor" with a "prototype" member is not accepted');
  }
  return value;
}

function invalid(why: string): Problem {
  return new Problem('invalid-request', `invalid: request body is not valid JSON: ${why}`);
}
