import type { SessionState } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';

/**
 * What can happen to a session's lifecycle. Commands a person gives (`suspend`, `wake`, `close`, …) and what the
 * controller observes (`started`, `ready`, `exited`, …) go through the same table, so the state can only move
 * the ways this table allows.
 */
export type SessionCommand =
  | 'start' // start-pending → creating: the program is being started
  | 'ready' // creating → active
  | 'fail-create' // creating → failed-create: it could not be started, or exited before it was ready
  | 'exited' // active → asleep: its program ended (asked to, or not)
  | 'lose' // its host stopped answering: lost, until a person wakes or closes it
  | 'wake' // a dormant session: its program starts again (resuming the conversation where it can)
  | 'suspend' // kept dormant: nothing wakes it but `wake`
  | 'quarantine'
  | 'release' // quarantined → asleep: its quarantine's time is up
  | 'drain'
  | 'drained'
  | 'archive'
  | 'close';

const DORMANT: SessionState[] = ['asleep', 'suspended', 'quarantined', 'drained', 'archived', 'failed-create', 'lost'];

const TRANSITIONS: Record<SessionCommand, { from: SessionState[]; to: SessionState }> = {
  start: { from: ['start-pending'], to: 'creating' },
  ready: { from: ['creating'], to: 'active' },
  'fail-create': { from: ['creating', 'start-pending'], to: 'failed-create' },
  exited: { from: ['active', 'draining'], to: 'asleep' },
  lose: { from: ['creating', 'active', 'draining'], to: 'lost' },
  wake: { from: DORMANT, to: 'creating' },
  suspend: {
    from: ['start-pending', 'creating', 'active', 'asleep', 'quarantined', 'draining', 'drained', 'failed-create'],
    to: 'suspended',
  },
  quarantine: { from: ['active', 'asleep', 'failed-create', 'creating'], to: 'quarantined' },
  release: { from: ['quarantined'], to: 'asleep' },
  drain: { from: ['active', 'creating'], to: 'draining' },
  drained: { from: ['draining'], to: 'drained' },
  archive: { from: ['active', 'asleep', 'suspended', 'quarantined', 'draining', 'drained'], to: 'archived' },
  close: {
    from: [
      'start-pending',
      'creating',
      'active',
      'asleep',
      'suspended',
      'draining',
      'drained',
      'quarantined',
      'archived',
      'failed-create',
      'lost',
    ],
    to: 'closed',
  },
};

/** The state `command` leads to from `state`, or undefined when the table forbids it. */
export function nextState(state: SessionState, command: SessionCommand): SessionState | undefined {
  const rule = TRANSITIONS[command];
  return rule.from.includes(state) ? rule.to : undefined;
}

/** The state `command` leads to; a 409 `conflict:` naming the states it is allowed from when it is not. */
export function requireTransition(id: string, state: SessionState, command: SessionCommand): SessionState {
  const to = nextState(state, command);
  if (to === undefined) {
    throw new Problem(
      'conflict-wrong-state',
      `conflict: session ${id} is ${state}; ${command} is allowed only from ${TRANSITIONS[command].from.join(', ')}`,
    );
  }
  return to;
}

/** No program runs in these states, and none should. */
export function isDormant(state: SessionState): boolean {
  return DORMANT.includes(state) || state === 'closed';
}

/**
 * A message to a session in one of these states wakes it and is its first turn. A `quarantined` session is kept
 * from waking by itself, and a `lost` one is not started behind anyone's back: only an explicit `wake` starts them.
 */
export function wakesOnMessage(state: SessionState): boolean {
  return DORMANT.includes(state) && state !== 'quarantined' && state !== 'lost';
}
