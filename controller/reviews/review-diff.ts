import type { ReviewFileDiff } from '../../shared/dto/reviews.js';

/** A file's diff past this is cut (a generated file, a lock file): the rest is still in git. */
export const FILE_DIFF_BOUND = 64 * 1024;
/** A review's whole diff past this leaves the remaining files out: a page must stay readable and quick. */
export const REVIEW_DIFF_BOUND = 1024 * 1024;

/** A unified diff split per file and bounded: each file's part cut at `fileBound`, files past `totalBound` left out. */
export function splitDiff(
  unified: string,
  fileBound = FILE_DIFF_BOUND,
  totalBound = REVIEW_DIFF_BOUND,
): { files: ReviewFileDiff[]; truncated: boolean } {
  const files: ReviewFileDiff[] = [];
  let total = 0;
  let truncated = false;
  for (const part of fileParts(unified)) {
    if (total + Math.min(part.text.length, fileBound) > totalBound) {
      truncated = true;
      break;
    }
    const cut = part.text.length > fileBound;
    const diff = cut ? part.text.slice(0, part.text.lastIndexOf('\n', fileBound - 1) + 1 || fileBound) : part.text;
    total += diff.length;
    files.push({ path: part.path, diff, truncated: cut });
  }
  return { files, truncated };
}

/** The new-side line numbers a file's diff shows (added and context lines of its hunks). */
export function newSideLines(fileDiff: string): Set<number> {
  const lines = new Set<number>();
  let next: number | undefined;
  for (const line of fileDiff.split('\n')) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      next = Number(hunk[1]);
      continue;
    }
    if (next === undefined) continue;
    if (line.startsWith('+') || line.startsWith(' ')) lines.add(next++);
    // A removed line, or "\ No newline at end of file", takes no new-side number.
  }
  return lines;
}

/** The per-file parts of `git diff` output, each named by its new path (its old one when it was deleted). */
function* fileParts(unified: string): Generator<{ path: string; text: string }> {
  const starts: number[] = [];
  const header = /^diff --git /gm;
  for (let m = header.exec(unified); m; m = header.exec(unified)) starts.push(m.index);
  for (let i = 0; i < starts.length; i++) {
    const text = unified.slice(starts[i], starts[i + 1] ?? unified.length);
    yield { path: pathOf(text), text };
  }
}

function pathOf(part: string): string {
  const added = /^\+\+\+ b\/(.+)$/m.exec(part)?.[1];
  if (added) return added;
  const removed = /^--- a\/(.+)$/m.exec(part)?.[1];
  if (removed) return removed;
  // No content lines (a mode change, a binary or an empty file): the header's new path.
  const renamed = /^rename to (.+)$/m.exec(part)?.[1];
  if (renamed) return renamed;
  return /^diff --git a\/.+? b\/(.+)$/m.exec(part)?.[1] ?? '';
}
