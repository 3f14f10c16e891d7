import type { SessionResponse } from '../../shared/dto/sessions.js';

// What `ctl top`'s session line says beyond its fixed columns — its HOST column (how wide, how a long name is cut)
// and its tail — apart from the view so that unit tests reach it without Ink.

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

/**
 * The end of a session's line: the question or permission it waits on; for a lost one why (its host stopped
 * answering: what a person must act on, since nothing starts it again by itself); else its last output or title.
 */
export function sessionTail(s: Pick<SessionResponse, 'pending' | 'state' | 'reason' | 'last_output' | 'title'>): {
  text: string;
  tone: 'asks' | 'lost' | 'output';
} {
  const flat = (text: string) => text.replace(/\s+/g, ' ');
  if (s.pending) return { text: flat(`? ${s.pending.kind}: ${s.pending.prompt ?? ''}`), tone: 'asks' };
  if (s.state === 'lost' && s.reason) return { text: flat(s.reason), tone: 'lost' };
  return { text: flat(s.last_output ?? s.title), tone: 'output' };
}
