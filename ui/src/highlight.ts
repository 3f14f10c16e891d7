import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { escapeHtml, splitHtmlLines } from './html-lines.js';

// Syntax colours for a review's diff, in the page itself: highlight.js's core with the languages an agent's work
// mostly is, registered here (no language is fetched, nothing leaves the page). Its output is HTML of its own
// escaping (only `<span class="hljs-…">` around the escaped text), set as a line's markup.

const LANGUAGES = { bash, css, go, ini, javascript, json, markdown, python, rust, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

const BY_EXTENSION: Record<string, keyof typeof LANGUAGES> = {
  sh: 'bash',
  bash: 'bash',
  zsh: 'bash',
  css: 'css',
  scss: 'css',
  go: 'go',
  ini: 'ini',
  toml: 'ini',
  cfg: 'ini',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  json: 'json',
  md: 'markdown',
  py: 'python',
  rs: 'rust',
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'typescript',
  html: 'xml',
  htm: 'xml',
  xml: 'xml',
  svg: 'xml',
  yml: 'yaml',
  yaml: 'yaml',
};

/** The language a file's name says, among those registered; none for the rest (shown plain). */
export function languageOf(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  if (name === 'dockerfile' || name === 'makefile') return undefined;
  const dot = name.lastIndexOf('.');
  return dot >= 0 ? BY_EXTENSION[name.slice(dot + 1)] : undefined;
}

/**
 * Lines of one side of a hunk as markup, one per line: highlighted together (a comment or a string spanning lines
 * is coloured throughout), then split again at each newline, every span open there closed and opened again on the
 * next line. Without a language, each line escaped as it is.
 */
export function highlightLines(lines: string[], language: string | undefined): string[] {
  if (!language || lines.length === 0) return lines.map(escapeHtml);
  const html = hljs.highlight(lines.join('\n'), { language, ignoreIllegals: true }).value;
  const split = splitHtmlLines(html);
  // The highlighter keeps every character, so as many lines come back; were it not so, plain text is right.
  return split.length === lines.length ? split : lines.map(escapeHtml);
}
