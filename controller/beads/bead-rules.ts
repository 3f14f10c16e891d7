import type { Bead } from '../../shared/dto/beads.js';
import { BeadError, BLOCKING_KINDS, NOT_WORK_LABELS, NOT_WORK_TYPES } from './bead-store.js';

// Validation and naming rules every bead store applies the same way.

/** Kinds whose edges order beads: a cycle among them could never resolve. */
export function isOrdering(kind: string): boolean {
  return BLOCKING_KINDS.has(kind) || kind === 'parent-child';
}

/**
 * Whether a bead is work at all, whatever its status: not mail or another ephemeral record, not a container
 * or record type, not marked as bookkeeping. Only such beads can ever be ready.
 */
export function isWork(bead: Bead): boolean {
  if (bead.ephemeral || NOT_WORK_TYPES.has(bead.issue_type)) return false;
  return !(bead.labels ?? []).some((l) => NOT_WORK_LABELS.has(l));
}

/** The creation number of an id `<prefix>-<n>` (0 when it has none). */
export function numberOf(id: string): number {
  const n = Number(id.slice(id.lastIndexOf('-') + 1));
  return Number.isSafeInteger(n) ? n : 0;
}

export function uniqueLabels(labels: string[]): string[] {
  const out: string[] = [];
  for (const label of labels) {
    const trimmed = label.trim();
    if (trimmed === '') throw new BeadError('invalid', 'labels must not be empty', 'labels');
    if (!out.includes(trimmed)) out.push(trimmed);
  }
  return out;
}

/** Metadata without empty values (an empty value means "no such key"). */
export function cleanMetadata(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).filter(([, v]) => v !== ''));
}

export function checkPriority(priority: number | undefined): void {
  if (priority !== undefined && (!Number.isInteger(priority) || priority < 0 || priority > 4)) {
    throw new BeadError('invalid', 'priority must be an integer from 0 to 4', 'priority');
  }
}

/** An RFC 3339 time, normalised to UTC. */
export function checkTime(value: string, field: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new BeadError('invalid', `${field} must be an RFC 3339 time`, field);
  return new Date(ms).toISOString();
}
