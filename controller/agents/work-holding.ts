import type { Logger } from 'pino';
import type { Bead } from '../../shared/dto/beads.js';
import type { BeadsService } from '../beads/beads-service.js';
import type { Session } from '../sessions/session.js';
import { HELD_BEAD_FILE, writeHeldBead } from '../sessions/session-environment.js';
import { mergeNote } from './sling-input.js';
import { ASSIGNED_SESSION, MERGE_STRATEGY, ROUTED_TO } from '../beads/work-schema.js';
import { heldBeadOf, type WorkBoard } from './work-board.js';

/** A session's held-bead file is in its directory: what the file needs of a session. */
type SessionFiles = Pick<Session, 'id' | 'dir'>;

/**
 * Copies a session's file just written where its program reads it, when that is another host (its shells there
 * read `CTL_BEAD` from it); resolves once it is there.
 */
export type MirrorFile = (session: SessionFiles, file: string) => Promise<void>;

/** How a bead is handed to a session. */
export interface HoldOptions {
  /** Routed to this agent too, so it goes back to the agent's sessions if this one ends first (sling). */
  routedTo?: string;
  /** Its merge strategy (`ctl.merge_strategy`), named in what the session is told. */
  merge?: string;
  /** The agent's `nudge`, said after the work line. */
  nudge?: string;
  /** Wakes a sleeping session for it, with this reason (sling); the tick wakes its sessions itself. */
  wake?: string;
  /** The tick's board: the hand-over is applied to it, and its `bead.updated` is no news to it. */
  board?: WorkBoard;
}

/**
 * "A session holds a bead", owned in one place: the bead's side (assignee = the session's name, `in_progress`,
 * `ctl.assigned_session` = its id), the session's held-bead file (its shells' `CTL_BEAD`), and the line it is
 * told. Sling (to a session), the tick (routed work, reopening what a gone session held, the file after every
 * change others made) and a session's start all go through it: none writes the bead's holding or the file itself.
 */
export class WorkHolding {
  /** The bead each session's held-bead file names, as last written. */
  private readonly written = new Map<string, string | undefined>();

  constructor(
    private readonly beads: BeadsService,
    private readonly logger: Logger,
    private readonly mirror?: MirrorFile,
  ) {}

  /**
   * Hands `bead` to `session`: the bead taken, its file naming it — before the session is told, so the shell its
   * program runs for the work already sees it — then the work line queued. Answers the bead as written.
   */
  async hold(session: Session, bead: Bead, o: HoldOptions = {}): Promise<Bead> {
    const taken = await written(o.board, bead.id, session.id, () =>
      this.beads.update(bead.id, {
        status: 'in_progress',
        assignee: session.record.session_name,
        metadata: {
          [ASSIGNED_SESSION]: session.id,
          ...(o.routedTo ? { [ROUTED_TO]: o.routedTo } : {}),
          ...(o.merge ? { [MERGE_STRATEGY]: o.merge } : {}),
        },
      }),
    );
    o.board?.held(session.id, taken);
    this.writeFile(session, taken.id);
    // On a host, the file is there before the work line is: the shell its program runs for it sees the bead.
    await this.mirrored(session);
    session.enqueue(withNudge(workMessage(taken), o.nudge), 'default', o.wake !== undefined ? { wake: o.wake } : {});
    return taken;
  }

  /**
   * Lets go of a bead a session held (the session is gone): open again, unassigned, still routed, so another
   * session of its agent takes it. With the tick's board, applied to it; the file follows at `syncFiles`.
   */
  async release(bead: Bead, sessionId: string, board?: WorkBoard): Promise<Bead> {
    const reopened = await written(board, bead.id, '', () =>
      this.beads.update(bead.id, { status: 'open', assignee: '', metadata: { [ASSIGNED_SESSION]: '' } }),
    );
    board?.released(sessionId, reopened);
    return reopened;
  }

  /** A session starting: its file names the bead it holds now (from the store), which is answered. */
  atStart(session: SessionFiles): string | undefined {
    const bead = heldBeadOf(this.beads, session.id);
    this.writeFile(session, bead);
    return bead;
  }

  /**
   * Each open session's file names the bead it holds as `heldBy` says (closed, reopened, taken: none); only
   * files that would change are written. Failures are logged: the next sync writes them again.
   */
  syncFiles(sessions: Iterable<SessionFiles>, heldBy: (sessionId: string) => string | undefined): void {
    const open = new Set<string>();
    for (const session of sessions) {
      open.add(session.id);
      const bead = heldBy(session.id);
      if (this.written.has(session.id) && this.written.get(session.id) === bead) continue;
      try {
        this.writeFile(session, bead);
        void this.mirrored(session);
      } catch (err) {
        this.logger.warn({ err, session: session.id }, 'could not record the bead a session holds');
      }
    }
    for (const id of this.written.keys()) if (!open.has(id)) this.written.delete(id);
  }

  /** The held-bead file copied to the session's host (a failure is logged: the next change copies it again). */
  private async mirrored(session: SessionFiles): Promise<void> {
    try {
      await this.mirror?.(session, HELD_BEAD_FILE);
    } catch (err) {
      this.written.delete(session.id);
      this.logger.warn({ err, session: session.id }, 'could not copy the bead a session holds to its host');
    }
  }

  private writeFile(session: SessionFiles, bead: string | undefined): void {
    this.written.delete(session.id);
    writeHeldBead(session.dir, bead);
    this.written.set(session.id, bead);
  }
}

/** A bead write of the tick's own (with its board): the board told first, so the write's event is no news. */
async function written(
  board: WorkBoard | undefined,
  beadId: string,
  assignedSession: string,
  write: () => Promise<Bead>,
): Promise<Bead> {
  board?.writing(beadId, assignedSession);
  try {
    return await write();
  } catch (err) {
    board?.notWritten(beadId, assignedSession);
    throw err;
  }
}

/** A line a session is told, with its agent's `nudge` after it (one line still: one turn). */
export function withNudge(line: string, nudge: string | undefined): string {
  return nudge ? `${line} ${nudge.replace(/\s+/g, ' ')}` : line;
}

/** What a session is told when it is handed a bead. */
export function workMessage(bead: Bead): string {
  // One line: a program that reads a line per turn takes it as one turn.
  const title = bead.title.replace(/\s+/g, ' ');
  const merge = mergeNote(bead.metadata?.[MERGE_STRATEGY]);
  return `Work on bead ${bead.id}: ${title} (details: ctl bead show ${bead.id}; when it is done: ctl bead close ${bead.id}${merge})`;
}
