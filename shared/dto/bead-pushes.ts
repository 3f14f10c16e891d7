/** The payload of `bead.pushed` and `bead.push_failed`: a session's branch pushed for a bead (`merge = "push"`). */
export interface BeadPushPayload {
  bead: string;
  /** The session whose worktree holds the branch. */
  session: string;
  branch: string;
  /** The rig's remote, by name (its URL is not told: it may carry credentials). */
  remote: string;
  /** `refs/heads/<branch>` on the remote. */
  ref: string;
  /** `bead.pushed`: the commit the remote's ref is at now. */
  commit?: string;
  /** `bead.pushed`: the ref was moved past a commit it did not contain (a bead pushed again after a rebase). */
  forced?: boolean;
  /**
   * `bead.pushed`: how many of the branch's commits were given the `Ctl-Bead` trailer.
   * @isInt
   */
  stamped?: number;
  /** `bead.push_failed`: why (git's reason or the remote's refusal). */
  reason?: string;
}
