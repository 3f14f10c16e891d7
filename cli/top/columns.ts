// How wide `ctl top`'s HOST column is drawn, apart from the view so that unit tests reach it without Ink.

/** Below this many columns the HOST column is left out: the line's tail (its last output, a question) needs the room. */
export const HOST_COLUMN_MIN_TERMINAL = 72;
/** A host's name longer than this (with the gap after it) is cut, marked with an ellipsis. */
const HOST_COLUMN_MAX = 13;
const LOCAL = 'local';

/** The HOST column's width (its gap included) for the sessions' hosts on a terminal this wide; 0: not shown. */
export function hostColumnWidth(hosts: string[], columns: number): number {
  if (columns < HOST_COLUMN_MIN_TERMINAL) return 0;
  const longest = Math.max(LOCAL.length, ...hosts.map((h) => [...h].length));
  return Math.min(longest + 1, HOST_COLUMN_MAX);
}

/** A host's name in its column: padded, or cut with an ellipsis so that a cut name never passes for another. */
export function hostCell(host: string, width: number): string {
  const chars = [...host];
  if (chars.length < width) return host.padEnd(width);
  return `${chars.slice(0, width - 2).join('')}… `;
}

export const isRemoteHost = (host: string): boolean => host !== LOCAL;
