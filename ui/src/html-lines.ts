// Markup as lines: what a highlighter made of many lines at once, cut back into one piece of markup per line.
// Apart from highlight.ts (which loads highlight.js, whose types bring the DOM's) so that unit tests read it.

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

/** Text as markup that shows it as it is. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => escapes[c]!);

/** Markup of spans split at its newlines, each line's spans balanced (closed at its end, reopened on the next). */
export function splitHtmlLines(html: string): string[] {
  const lines: string[] = [];
  const open: string[] = [];
  let current = '';
  const tag = /<\/span>|<span[^>]*>|\n/g;
  let last = 0;
  for (let m = tag.exec(html); m; m = tag.exec(html)) {
    current += html.slice(last, m.index);
    last = m.index + m[0].length;
    if (m[0] === '\n') {
      lines.push(current + '</span>'.repeat(open.length));
      current = open.join('');
    } else if (m[0] === '</span>') {
      open.pop();
      current += m[0];
    } else {
      open.push(m[0]);
      current += m[0];
    }
  }
  lines.push(current + html.slice(last) + '</span>'.repeat(open.length));
  return lines;
}
