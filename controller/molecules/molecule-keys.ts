// The metadata a molecule's beads carry: what makes a bead part of a run, and everything the controller needs to
// carry a run on after a restart (a check's command, a gate's timer) — the beads are the whole state.

/** On every member: the run's root bead. */
export const ROOT_BEAD_ID = 'ctl.root_bead_id';
/** `workflow` on the root; `step`, `group`, `check`, `gate` or `finalize` on a member. */
export const KIND = 'ctl.kind';
/** The step id in the formula. */
export const STEP_REF = 'ctl.step_ref';
/** The group step (a step with children or a loop) a member was written inside, by its step ref. */
export const SCOPE_REF = 'ctl.scope_ref';
/** The root's formula. */
export const FORMULA = 'ctl.formula';
/** The root's target agent. */
export const TARGET = 'ctl.target';
/** The vars the run was made with (JSON). */
export const VARS = 'ctl.vars';
/** The bead the run was started for; it is closed when the run passes. */
export const ATTACHED_BEAD_ID = 'ctl.attached_bead_id';
/** How the run came about: `sling`, `order` or `cook`. */
export const RUN_SOURCE = 'ctl.run_source';
/** `pass`, `fail`, `skipped` or `canceled` on a closed bead: how it ended. An agent closing a step may set `fail`. */
export const OUTCOME = 'ctl.outcome';
/** Why it ended so (a failed check's output tail, a cancel). */
export const OUTCOME_REASON = 'ctl.outcome_reason';
/** A work step's attempt (1, 2, …). */
export const ATTEMPT = 'ctl.attempt';
/** A check node: the step bead it checks. */
export const CHECKS = 'ctl.checks';
export const CHECK_COMMAND = 'ctl.check_command';
export const CHECK_TIMEOUT_MS = 'ctl.check_timeout_ms';
export const CHECK_MAX_ATTEMPTS = 'ctl.check_max_attempts';
export const RETRY_MAX_ATTEMPTS = 'ctl.retry_max_attempts';
export const ON_EXHAUSTED = 'ctl.on_exhausted';
/** A gate: `timer`, `condition` or `human`, and its settings. */
export const GATE_KIND = 'ctl.gate_kind';
export const GATE_DURATION_MS = 'ctl.gate_duration_ms';
export const GATE_CHECK = 'ctl.gate_check';
export const GATE_INTERVAL_MS = 'ctl.gate_interval_ms';
export const GATE_TIMEOUT_MS = 'ctl.gate_timeout_ms';
/** When a gate was reached (all it needs closed): a timer counts from here. */
export const GATE_ARMED_AT = 'ctl.gate_armed_at';
/** The order whose firing made the run. */
export const ORDER = 'ctl.order';
/** A runtime loop's group (`loop.until`): its condition, its bound, the iteration under way, and its body. */
export const LOOP_UNTIL = 'ctl.loop_until';
export const LOOP_MAX = 'ctl.loop_max';
export const LOOP_ITERATION = 'ctl.loop_iteration';
/** The body's nodes (JSON), ids relative to the iteration (`<loop>.iter<N>.`). */
export const LOOP_BODY = 'ctl.loop_body';
/** A bond node (`on_complete`): the step bead it pours for, what it pours, and the runs it poured (JSON ids). */
export const BOND_OF = 'ctl.bond_of';
export const BOND_FOR_EACH = 'ctl.bond_for_each';
export const BOND_FORMULA = 'ctl.bond_formula';
export const BOND_VARS = 'ctl.bond_vars';
export const BONDED = 'ctl.bonded';
/** A bond node's `on_complete.sequential`: `sequential` when each run it pours waits for the one before to end. */
export const BOND_MODE = 'ctl.bond_mode';
/**
 * On the root of a run a bond node poured: `<bond bead id>#<item index>`, written with the root. A pour cut short
 * (the controller died) finds the runs it made by it, and finishes the one it was making.
 */
export const POURED_BY = 'ctl.poured_by';
/** A children node (`waits_for`): the bond bead whose runs it waits for, and `all` or `any`. */
export const WAITS_ON = 'ctl.waits_on';
export const WAIT_MODE = 'ctl.wait_mode';
/** On a run poured by a step of another run: that run's root (it is looked at again when this one ends). */
export const PARENT_ROOT = 'ctl.parent_root';
