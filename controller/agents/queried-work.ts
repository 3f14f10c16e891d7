import type { Bead } from '../../shared/dto/beads.js';
import type { BeadReads } from '../beads/beads-service.js';

/** Lines of one `work_query` answer read per tick (a query printing more is work enough for any pool). */
const MAX_LINES = 1000;

/**
 * What an agent's `work_query` printed, as work: a line whose first word names a bead of the city that is open,
 * not taken, not blocked and not deferred is that bead, handed to a session as routed work is (as the
 * reference's queries print bead ids, `bd ready …`); any other line is work the tick cannot hand out, and counts
 * only towards how many sessions the agent wants.
 */
export function queriedWork(
  city: Pick<BeadReads, 'find'>,
  lines: readonly string[],
  alreadyRouted: readonly Bead[],
  now: string,
): { beads: Bead[]; otherLines: number } {
  const seen = new Set(alreadyRouted.map((b) => b.id));
  const beads: Bead[] = [];
  let otherLines = 0;
  for (const line of lines.slice(0, MAX_LINES)) {
    const id = line.trim().split(/\s+/)[0] ?? '';
    const bead = id ? city.find(id) : undefined;
    if (!bead) {
      otherLines++;
      continue;
    }
    // A bead it names that is not ready (taken, closed, blocked, deferred) is no work now, nor another session.
    if (seen.has(bead.id) || bead.status !== 'open' || bead.assignee || bead.is_blocked) continue;
    if (bead.defer_until !== undefined && bead.defer_until > now) continue;
    seen.add(bead.id);
    beads.push(bead);
  }
  return { beads, otherLines };
}
