/**
 * What the controller and `launch.js` on a host say to each other: the spec of a program to start (one argument,
 * base64url JSON) and the marked lines the launcher writes on stderr, between the program's own.
 */

/** Begins the lines of stderr that are the launcher's, not the program's: `pid N`, `exit {…}`, `failed "…"`. */
export const LAUNCH_MARK = '\u001bctl-launch ';

export interface LaunchSpec {
  argv: string[];
  cwd: string;
  /** Set (null: unset) over the host's own environment; a PATH goes before the host's own. */
  env: Record<string, string | null>;
  runDir: string;
  what: string;
}
