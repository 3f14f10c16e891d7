import type { PackCommand } from './pack-commands.js';
import type { PackDoctorEntry } from './pack-file.js';

/** One import as the loader found it: where its files are, or why it could not be read. */
export interface ComposedPack {
  /** Its binding path: `review`, `review.lint` for a pack a pack imports, `web/review` for a rig's import. */
  binding: string;
  /**
   * What its agents, orders and commands are named under (`namespace.agent`): its binding path, less the
   * bindings of imports that re-export (`export = true`); empty for a pack the city includes (`[workspace]
   * includes`), whose contents keep their own names.
   */
  namespace: string;
  /** `[pack] description`. */
  description?: string;
  /** Its commands (`ctl <namespace> <command>`). */
  commands?: PackCommand[];
  source: string;
  version?: string;
  /** The file that declares it (`city.toml`, `pack.toml`, or the importing pack's). */
  file: string;
  /** Its directory (in place, or in the cache at the locked commit); absent when it is not readable. */
  dir?: string;
  gitBacked: boolean;
  commit?: string;
  /** `[pack] name` and `version` of its `pack.toml`. */
  packName?: string;
  packVersion?: string;
  rig?: string;
  /** Its `[[doctor]]` checks. */
  doctors?: PackDoctorEntry[];
  /** Imported by the city (`[imports.*]` of `city.toml` or `pack.toml`): what `GET /packs` lists. */
  direct: boolean;
  error?: string;
}
