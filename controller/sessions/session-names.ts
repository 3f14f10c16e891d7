import { Problem } from '../../shared/http/problem.js';
import { isDormant } from './session-states.js';
import type { SessionRecord } from './session-store.js';
import type { Session } from './session.js';

/** Whether `name` names the session: its id, its alias or its session name. */
export function namesSession(record: SessionRecord, name: string): boolean {
  return record.id === name || record.alias === name || record.session_name === name;
}

/** `<agent or provider>-<bead number>`; a rig's agent `rig/base` gives `rig--base-<n>` (one path segment). */
export function sessionNameOf(template: string, id: string): string {
  return `${template.replace('/', '--')}-${id.slice(id.lastIndexOf('-') + 1)}`;
}

/** A session's title from the message it was created with: its first line, cut to 60 characters. */
export function titleOf(text: string): string {
  const line = text.trim().split('\n')[0]!;
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

/** An alias must not be another session's alias or session name (an open one's); a 409 when it is. */
export function requireFreeName(sessions: Iterable<Session>, name: string, self: string | undefined): void {
  for (const session of sessions) {
    if (session.id !== self && !isDormant(session.state) && namesSession(session.record, name)) {
      throw new Problem('conflict-wrong-state', `conflict: ${name} already names session ${session.id}`);
    }
    if (session.id !== self && session.state !== 'closed' && namesSession(session.record, name)) {
      throw new Problem('conflict-wrong-state', `conflict: ${name} already names session ${session.id}`);
    }
  }
}
