// A file's unified diff (one `ReviewFileDiff.diff`, as `git diff` prints it) made into what the review page draws:
// its hunks with each line's old and new numbers, and the same hunks as side-by-side rows. Apart from the view so
// that unit tests read it without a page.

export type DiffLineKind = 'context' | 'add' | 'del';

export interface DiffLine {
  kind: DiffLineKind;
  /** Its number on the old side (context and removed lines). */
  old?: number;
  /** Its number on the new side (context and added lines): where a comment is anchored. */
  new?: number;
  /** The line without its `+`, `-` or space. */
  text: string;
  /** Git's "\ No newline at end of file" followed it. */
  noNewline?: boolean;
}

export interface DiffHunk {
  /** The `@@ -a,b +c,d @@ …` line as git wrote it. */
  header: string;
  lines: DiffLine[];
}

export interface ParsedFileDiff {
  /** What git said of the file before its hunks, in words: new, deleted, renamed, mode changed, binary. */
  notes: string[];
  hunks: DiffHunk[];
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** The hunks of one file's unified diff, each line numbered on its sides. */
export function parseFileDiff(text: string): ParsedFileDiff {
  const notes: string[] = [];
  const hunks: DiffHunk[] = [];
  let hunk: DiffHunk | undefined;
  let oldNo = 0;
  let newNo = 0;
  const lines = text.split('\n');
  // The final newline of the text ends the last line; it starts none.
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    const start = HUNK.exec(line);
    if (start) {
      hunk = { header: line, lines: [] };
      hunks.push(hunk);
      oldNo = Number(start[1]);
      newNo = Number(start[2]);
      continue;
    }
    if (!hunk) {
      const note = noteOf(line);
      if (note) notes.push(note);
      continue;
    }
    const mark = line[0];
    const body = line.slice(1);
    if (mark === '+') hunk.lines.push({ kind: 'add', new: newNo++, text: body });
    else if (mark === '-') hunk.lines.push({ kind: 'del', old: oldNo++, text: body });
    else if (mark === ' ' || line === '') hunk.lines.push({ kind: 'context', old: oldNo++, new: newNo++, text: body });
    else if (mark === '\\') {
      const last = hunk.lines.at(-1);
      if (last) last.noNewline = true;
    }
  }
  return { notes, hunks };
}

/** The header lines worth saying (the `diff --git`, `index`, `---` and `+++` lines are not). */
function noteOf(line: string): string | undefined {
  if (line.startsWith('new file mode')) return 'new file';
  if (line.startsWith('deleted file mode')) return 'deleted';
  if (line.startsWith('rename from ')) return `renamed from ${line.slice('rename from '.length)}`;
  if (line.startsWith('old mode ')) return `mode was ${line.slice('old mode '.length)}`;
  if (line.startsWith('new mode ')) return `mode is ${line.slice('new mode '.length)}`;
  if (line.startsWith('Binary files ')) return 'binary: its contents are not shown';
  return undefined;
}

/** One row of a side-by-side diff: the old line on the left, the new one on the right, either may be absent. */
export interface SideRow {
  left?: DiffLine;
  right?: DiffLine;
}

/**
 * A hunk's lines as side-by-side rows: a context line on both sides; within a change (removed lines and the added
 * lines after them), the n-th removed line beside the n-th added one, the longer side's rest beside nothing.
 */
export function sideBySide(lines: DiffLine[]): SideRow[] {
  const rows: SideRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ left: dels[i], right: adds[i] });
    dels = [];
    adds = [];
  };
  for (const line of lines) {
    if (line.kind === 'context') {
      flush();
      rows.push({ left: line, right: line });
    } else if (line.kind === 'del') {
      // A removal after additions starts another change.
      if (adds.length) flush();
      dels.push(line);
    } else adds.push(line);
  }
  flush();
  return rows;
}

/** How many lines a parsed diff draws (its hunks' lines and a header each): what decides folding a file. */
export function drawnLines(diff: ParsedFileDiff): number {
  return diff.hunks.reduce((n, h) => n + 1 + h.lines.length, 0);
}
