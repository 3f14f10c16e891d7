import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Its own file, with nothing but node:fs, so that the in-process tier (test/unit/) can make one without loading
// the process tier's helpers (supervisor.ts and what it imports).

/** A temporary directory (realpath'd, so comparisons with server-side paths hold). */
export function tempDir(prefix = 'ctl-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}
