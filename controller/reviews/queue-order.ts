/** What the queue's order reads of a review. */
export interface Queued {
  bead: string;
  state: string;
  rig?: string;
  /** The repository its branch is in: the queue of a review of no rig. */
  repo: string;
  /** Its place in approval order, city-wide (set at approval). */
  queue_seq?: number;
}

/**
 * The queue a review is in: its rig's (one queue per rig, so that reviews of one repository land one at a time,
 * each on what landed before it), else its repository's.
 */
export function queueOf(review: Pick<Queued, 'rig' | 'repo'>): string {
  return review.rig !== undefined ? `rig:${review.rig}` : `repo:${review.repo}`;
}

/** Each queue's approved reviews in approval order (ties, which a store never has, by bead id). */
export function queues(reviews: Iterable<Queued>): Map<string, Queued[]> {
  const byQueue = new Map<string, Queued[]>();
  for (const review of reviews) {
    if (review.state !== 'approved') continue;
    const key = queueOf(review);
    const list = byQueue.get(key) ?? [];
    list.push(review);
    byQueue.set(key, list);
  }
  for (const list of byQueue.values()) {
    list.sort((a, b) => (a.queue_seq ?? 0) - (b.queue_seq ?? 0) || a.bead.localeCompare(b.bead));
  }
  return byQueue;
}

/** Every approved review's place in its queue, 1 for its head. */
export function queuePositions(reviews: Iterable<Queued>): Map<string, number> {
  const positions = new Map<string, number>();
  for (const list of queues(reviews).values()) list.forEach((r, i) => positions.set(r.bead, i + 1));
  return positions;
}

/** The head of `queue`: the approved review to land next, if any. */
export function headOf(reviews: Iterable<Queued>, queue: string): string | undefined {
  return queues(reviews).get(queue)?.[0]?.bead;
}

/** The place in approval order the next approval takes. */
export function nextSeq(reviews: Iterable<Queued>): number {
  let max = 0;
  for (const review of reviews) max = Math.max(max, review.queue_seq ?? 0);
  return max + 1;
}
