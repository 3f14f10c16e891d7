import type { Bead } from '../../shared/dto/beads.js';
import { ASSIGNED_SESSION } from '../beads/work-schema.js';
import { WAITING_REVIEW_STATES, type OverlapReview } from '../worktrees/overlaps.js';
import type { ReviewRecord, ReviewStore } from './review-store.js';

/** What reading a rig's waiting reviews needs of the city. */
export interface ReviewPartiesCity {
  /** The rig an agent is of (undefined: none, or the agent is gone from the config). */
  rigOfAgent(agent: string): string | undefined;
  /** A session's name by id, open or closed. */
  sessionName(id: string): string | undefined;
  bead(id: string): Bead | undefined;
}

/** The rig a review belongs to: its agent's rig now, else the rig recorded when it was requested. */
export function rigOfReview(review: ReviewRecord, city: Pick<ReviewPartiesCity, 'rigOfAgent'>): string | undefined {
  return city.rigOfAgent(review.agent) ?? review.rig;
}

/**
 * A rig's reviews whose work is finished and not landed (`pending`, `approved`, `conflicted`), oldest first, as
 * sides of its overlaps: where each branch's finished work is, and who holds its bead now.
 */
export function waitingReviews(store: ReviewStore, rig: string, city: ReviewPartiesCity): OverlapReview[] {
  return store
    .all()
    .filter((r) => WAITING_REVIEW_STATES.has(r.state) && rigOfReview(r, city) === rig)
    .map((r) => {
      const holder = city.bead(r.bead)?.metadata?.[ASSIGNED_SESSION];
      return {
        bead: r.bead,
        session_id: r.session,
        session: city.sessionName(r.session) ?? r.session,
        branch: r.branch,
        repo: r.repo,
        base_commit: r.base_commit,
        commit: r.commit,
        ...(holder ? { holder } : {}),
      };
    });
}
