import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { EventLog } from '../../shared/events/event-log.js';
import type { Session } from '../sessions/session.js';
import type { SessionService } from '../sessions/session-service.js';
import type { MailNotices } from './mail-notices.js';
import type { TickAction, TickPlan } from './tick-facts.js';
import { ROUTED_TO } from '../beads/work-schema.js';
import type { WorkBoard } from './work-board.js';
import { withNudge, type WorkHolding } from './work-holding.js';

/** What applying a plan needs of the city. */
export interface TickApplyHost {
  log: EventLog;
  sessions: SessionService;
  logger: Logger;
  board: WorkBoard;
  /** Holding and releasing work (every hand-over and release goes through it, applied to the board). */
  holding: Pick<WorkHolding, 'hold' | 'release'>;
  mail: MailNotices;
  /** Forgets a session's failures (its quarantine was lifted). */
  forgive(sessionId: string): void;
}

/** What carrying out a plan did. */
export interface AppliedCounts {
  assigned: number;
  released: number;
}

/**
 * Carries out a tick's plan, in its order. What touches a program (a start, wake, sleep, restart, suspend or
 * close) is set going and not waited on, so one slow agent delays no other; what writes a bead or the event log
 * is waited on. Every failure is logged with the session or bead it concerns, and the next action goes on.
 */
export async function applyTickPlan(plan: TickPlan, host: TickApplyHost): Promise<AppliedCounts> {
  const counts: AppliedCounts = { assigned: 0, released: 0 };
  /** Beads whose reopening failed: not handed to another session this tick. */
  const stuck = new Set<string>();
  for (const action of plan.actions) {
    try {
      await applyOne(action, host, counts, stuck);
    } catch (err) {
      host.logger.warn({ err, ...subjectOf(action) }, `tick could not ${action.kind}`);
    }
  }
  return counts;
}

async function applyOne(
  action: TickAction,
  host: TickApplyHost,
  counts: AppliedCounts,
  stuck: Set<string>,
): Promise<void> {
  const background = (what: Promise<unknown>) => {
    what.catch((err: unknown) => host.logger.warn({ err, ...subjectOf(action) }, `tick could not ${action.kind}`));
  };
  switch (action.kind) {
    case 'reopen': {
      const { bead, sessionId } = action;
      try {
        await reopen(bead, sessionId, action.message, host);
        counts.released++;
      } catch (err) {
        stuck.add(bead.id);
        throw err;
      }
      return;
    }
    case 'start':
      host.sessions.startAgentSession(action.agent, action.reason, action.host);
      return;
    case 'wait':
      await host.log.append({
        type: 'agent.waiting',
        actor: 'ctl',
        subject: action.agent,
        message: action.reason,
        payload: { agent: action.agent, reason: action.reason },
      });
      return;
    case 'assign': {
      const session = sessionOf(action.sessionId, host);
      if (stuck.has(action.bead.id)) throw new Error('its reopening failed');
      host.board.taken(action.agent, action.bead.id);
      await host.holding.hold(session, action.bead, { nudge: action.nudge, board: host.board });
      counts.assigned++;
      return;
    }
    case 'tell-mail': {
      const session = sessionOf(action.sessionId, host);
      const notices = host.mail.take(action.agent);
      if (notices.length) session.enqueue(withNudge(host.mail.text(notices), action.nudge), 'default');
      return;
    }
    case 'close': {
      const { sessionId, note } = action;
      if (note) {
        const session = sessionOf(sessionId, host);
        background(session.recordLifecycle('session.draining', note).then(() => host.sessions.close(sessionId, false)));
      } else background(host.sessions.close(sessionId, false));
      return;
    }
    case 'suspend':
      background(host.sessions.suspend(action.sessionId, action.reason, 'tick'));
      return;
    case 'drain': {
      const session = sessionOf(action.sessionId, host);
      if (action.transition) session.transition('drain');
      await session.recordLifecycle('session.draining', action.reason);
      return;
    }
    case 'reconfigure': {
      sessionOf(action.sessionId, host).saveFields(action.changes);
      return;
    }
    case 'restart':
      background(sessionOf(action.sessionId, host).restart(action.reason, action.changes));
      return;
    case 'restart-pending':
      await sessionOf(action.sessionId, host).recordLifecycle('session.restart_pending', action.reason);
      return;
    case 'wake': {
      const session = sessionOf(action.sessionId, host);
      if (action.host) session.saveFields({ host: action.host });
      background(session.wake('wake', action.reason));
      return;
    }
    case 'sleep':
      background(sessionOf(action.sessionId, host).sleep(action.reason));
      return;
    case 'lift-quarantine': {
      const session = sessionOf(action.sessionId, host);
      session.transition('release');
      host.forgive(session.id);
      await session.recordLifecycle('session.quarantine_lifted', action.reason);
      return;
    }
  }
}

async function reopen(bead: Bead, sessionId: string, message: string, host: TickApplyHost): Promise<void> {
  const reopened = await host.holding.release(bead, sessionId, host.board);
  const routedTo = reopened.metadata?.[ROUTED_TO];
  await host.log.append({
    type: 'bead.dead_assignee_reopened',
    actor: 'ctl',
    subject: bead.id,
    message,
    payload: {
      bead_id: bead.id,
      ...(bead.assignee ? { dead_assignee: bead.assignee } : {}),
      ...(routedTo ? { routed_to: routedTo } : {}),
    },
  });
}

function sessionOf(id: string, host: TickApplyHost): Session {
  const session = host.sessions.openById(id);
  if (!session) throw new Error(`session ${id} is no longer open`);
  return session;
}

/** The session, bead or agent an action is about, for its log line. */
function subjectOf(action: TickAction): Record<string, string> {
  switch (action.kind) {
    case 'reopen':
      return { bead: action.bead.id, session: action.sessionId };
    case 'assign':
      return { bead: action.bead.id, session: action.sessionId };
    case 'start':
      return { agent: action.agent.name };
    case 'wait':
      return { agent: action.agent };
    default:
      return { session: action.sessionId };
  }
}
