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
