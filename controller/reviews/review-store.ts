import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { ReviewComment, ReviewSummary } from '../../shared/dto/reviews.js';

/** A review as kept: what a list shows, its comments, and where its branch lives. */
export interface ReviewRecord extends ReviewSummary {
  comments: ReviewComment[];
  /** The repository (main working tree) the branch is in. */
  repo: string;
  /** `approved`: its place in approval order, city-wide (the merge queue lands each rig's in this order). */
  queue_seq?: number;
  /** `approved`: the commit the queue is fast-forwarding its base to (so that a dead controller's is found). */
  landing_commit?: string;
}

/**
 * The city's reviews, one JSON file each in `.ctl/reviews/<bead id>.json`, held in memory: a review outlives its
 * session and the bead's metadata stays small (the bead carries only `ctl.review`, its state). A file that cannot
 * be read is skipped with the others kept.
 */
export class ReviewStore {
  private readonly reviews = new Map<string, ReviewRecord>();

  constructor(readonly dir: string) {
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    } catch {
      return;
    }
    for (const file of files) {
      try {
        const review = JSON.parse(readFileSync(join(dir, file), 'utf8')) as ReviewRecord;
        if (typeof review.bead === 'string') this.reviews.set(review.bead, review);
      } catch {
        // Half-written by a dead process cannot happen (atomic writes); anything else is not ours to guess at.
      }
    }
  }

  get(bead: string): ReviewRecord | undefined {
    return this.reviews.get(bead);
  }

  /** Every review, oldest first (then by bead id), as a list pages them. */
  all(): ReviewRecord[] {
    return [...this.reviews.values()].sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.bead.localeCompare(b.bead),
    );
  }

  put(review: ReviewRecord): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(
      join(this.dir, `${review.bead.replace(/[^A-Za-z0-9._-]/g, '_')}.json`),
      JSON.stringify(review) + '\n',
    );
    this.reviews.set(review.bead, review);
  }
}
