// The bead metadata of the work schema that more than one domain reads or writes: how a bead is routed to an
// agent, handed to a session, and merged once done. Sling and the tick (agents/) write them; molecules,
// worktrees and the views read them. A bead key owned by one domain alone stays with it (molecules/molecule-keys.ts,
// worktrees/bead-merge.ts, orders/order-dispatch.ts).

/** The agent a bead is routed to (stamped by sling). */
export const ROUTED_TO = 'ctl.routed_to';
/** The session the tick handed a bead to (its id; the bead's assignee is its session name). */
export const ASSIGNED_SESSION = 'ctl.assigned_session';
/** How a slung bead's work gets into its base (`direct`, `local`, `mr`), as the reference names it. */
export const MERGE_STRATEGY = 'merge_strategy';
