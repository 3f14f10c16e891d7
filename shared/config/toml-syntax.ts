import { parse } from 'smol-toml';
import { ConfigError } from './config-error.js';

/**
 * A TOML document's text as a table; a syntax error is a ConfigError saying where, as editors and compilers do:
 * `path:line:column: reason`, with the line at fault and a caret under the column as its `excerpt`.
 */
export function parseToml(text: string, path: string): Record<string, unknown> {
  try {
    return parse(text);
  } catch (err) {
    throw tomlSyntaxError(err, text, path);
  }
}

export function tomlSyntaxError(err: unknown, text: string, path: string): ConfigError {
  const e = err as Error & { line?: number; column?: number };
  const reason = e.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
  if (!Number.isInteger(e.line) || !Number.isInteger(e.column)) return new ConfigError(`${path}: ${reason}`);
  const line = e.line!;
  const column = e.column!;
  const source = text.split(/\r?\n/)[line - 1] ?? '';
  const shown = source.replace(/\t/g, ' ');
  return new ConfigError(`${path}:${line}:${column}: ${reason}`, {
    line,
    column,
    excerpt: `${shown}\n${' '.repeat(Math.max(0, column - 1))}^`,
  });
}
