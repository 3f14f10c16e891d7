import type { BeadComment } from '../../shared/dto/beads.js';
import { BeadError } from './bead-store.js';

/**
 * The journal store's comments, in memory: each bead's in id order (ids only grow, so appending keeps the
 * order), with the counter ids come from. The journal and snapshot persist what this holds.
 */
export class CommentBook {
  private readonly byBead = new Map<string, BeadComment[]>();
  /** The id the next comment gets. */
  next = 1;

  /** Applies a comment read back from disk or just written. */
  put(comment: BeadComment): void {
    let list = this.byBead.get(comment.issue_id);
    if (!list) this.byBead.set(comment.issue_id, (list = []));
    if (!list.some((c) => c.id === comment.id)) list.push(comment);
    this.next = Math.max(this.next, comment.id + 1);
  }

  remove(beadId: string, commentId: number): void {
    const list = this.byBead.get(beadId);
    if (!list) return;
    const kept = list.filter((c) => c.id !== commentId);
    if (kept.length) this.byBead.set(beadId, kept);
    else this.byBead.delete(beadId);
  }

  /** A deleted bead's comments go with it. */
  dropBead(beadId: string): void {
    this.byBead.delete(beadId);
  }

  get(beadId: string, commentId: number): BeadComment | undefined {
    const found = this.byBead.get(beadId)?.find((c) => c.id === commentId);
    return found && { ...found };
  }

  page(
    beadId: string,
    query: { limit: number; before?: number },
  ): { items: BeadComment[]; total: number; more: boolean } {
    const list = this.byBead.get(beadId) ?? [];
    const end = query.before === undefined ? list.length : list.filter((c) => c.id < query.before!).length;
    const start = Math.max(0, end - query.limit);
    return { items: list.slice(start, end).map((c) => ({ ...c })), total: list.length, more: start > 0 };
  }

  all(): BeadComment[] {
    return [...this.byBead.values()].flat().sort((a, b) => a.id - b.id);
  }
}

/** The store-level check both stores share: a comment needs a known bead. */
export function noSuchComment(beadId: string, commentId: number): BeadError {
  return new BeadError('not-found', `bead ${beadId} has no comment ${commentId}`);
}
