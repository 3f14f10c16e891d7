import type { SessionResetResponse } from '../../shared/dto/sessions.js';
import { Problem } from '../../shared/http/problem.js';
import type { Session } from './session.js';

/** States a reset waits out: the program is being started, or finishing its work before it is drained. */
const SETTLING = ['start-pending', 'creating', 'draining'];

/**
 * A fresh conversation for the same session (`POST …/session/{id}/reset`): its provider's conversation is no
 * longer resumed — Claude Code starts without `--resume`, Codex `exec` on a new thread, an ACP agent with
 * `session/new`; a program that cannot resume (a plain stdin one) is simply started again. A running program is
 * restarted at once (what was still queued for it fails, as at a stop); a dormant session begins the new
 * conversation at its next start, and stays as it is until then. A `reset` entry marks the place in the
 * transcript, and `session.reset` says where; `prompt` (an agent's, for a program with no system prompt to take
 * it) is queued as the new conversation's first turn, as at the session's creation.
 */
export async function resetSession(session: Session, prompt: string | undefined): Promise<SessionResetResponse> {
  if (session.changing || SETTLING.includes(session.state)) {
    const now = session.changing ? 'restarting' : session.state;
    throw new Problem(
      'conflict-wrong-state',
      `conflict: session ${session.id} is ${now}; reset it once it has settled`,
    );
  }
  const previous = session.record.provider_session_key;
  const restarted = session.running;
  let seq = 0;
  // Between the old conversation's end (its program's exit entry) and the new one's start.
  const mark = async () => {
    const text = `conversation reset: a new conversation begins here${previous ? ` (${previous} is not resumed)` : ''}`;
    const data = previous ? { previous_conversation: previous } : {};
    // `api`: the requester, recorded in its place.
    seq = (await session.note({ kind: 'reset', actor: 'api', text, data }))?.seq ?? session.transcript.head();
    if (prompt !== undefined) session.enqueue(prompt, 'default');
  };
  if (restarted) {
    await session.restart('reset: a new conversation', { provider_session_key: undefined }, mark);
  } else {
    session.saveFields({ provider_session_key: undefined });
    await mark();
  }
  await session.events.reset(seq, restarted, previous);
  return {
    status: 'reset',
    id: session.id,
    restarted,
    transcript_seq: seq,
    ...(previous ? { previous_conversation: previous } : {}),
  };
}
