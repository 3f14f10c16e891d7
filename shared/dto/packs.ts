/** One of the city's direct imports (`[imports.<name>]`), as `GET /packs` lists it. */
export interface PackResponse {
  /** The binding: its agents are `<name>.<agent>`. */
  name: string;
  source: string;
  version?: string;
  git_backed: boolean;
  /** The commit `packs.lock` pins (git-backed packs). */
  commit?: string;
  /** `[pack] name` and `version` of its `pack.toml`. */
  pack_name?: string;
  pack_version?: string;
  /** `[pack] description` of its `pack.toml`. */
  description?: string;
  /** The commands it offers: `ctl <name> <command>` (`GET /v0/city/{cityName}/commands` has their details). */
  commands?: string[];
  /** The agents it brings, by qualified name. */
  agents: string[];
  /** Why it is left out, when it is (not fetched, its directory gone, a broken `pack.toml`). */
  error?: string;
}

/** Body of `GET /v0/city/{cityName}/packs`. */
export interface PackListBody {
  packs: PackResponse[];
}

/** Body of `POST /v0/city/{cityName}/packs`. */
export interface PackAddInputBody {
  /**
   * A git URL (`https://…`, `file:///…`, `ssh://…`, `user@host:path`, each with an optional `//subdir`), or a
   * directory (used in place).
   * @minLength 1
   */
  source: string;
  /** The binding; derived from the source when omitted. */
  name?: string;
  /** A branch, a tag, `sha:<commit>`, or a semver range over the tags (`^1.2.0`). */
  version?: string;
}

/** Body of a `201` from `POST /packs`. */
export interface PackAddResponseBody {
  name: string;
  source: string;
  git_backed: boolean;
  version?: string;
  /** The commit it resolved to, recorded in `packs.lock`. */
  commit?: string;
  /** The agents it brings. */
  agents: string[];
}

/** Body of `DELETE /v0/city/{cityName}/packs/{name}`. */
export interface PackRemovedOutputBody {
  name: string;
}
