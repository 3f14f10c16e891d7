import { Problem } from './problem.js';

/** A percent-decoded path segment; malformed percent-encoding is a 400, not a server error. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new Problem(
      'invalid-request',
      `invalid: malformed percent-encoding in path segment ${JSON.stringify(segment)}`,
    );
  }
}

// A `.` or `..` segment, its dots plain or percent-encoded, between separators that `/`, `\` (which some
// servers take for one) or their encodings `%2f` and `%5c` spell.
const DOT_SEGMENT = /(?:^|\/|\\|%2f|%5c)(?:\.|%2e){1,2}(?=$|\/|\\|%2f|%5c)/i;

/** Whether a raw (not decoded) path has a dot segment in any spelling a server behind us might resolve. */
export function hasDotSegment(path: string): boolean {
  return DOT_SEGMENT.test(path);
}
