import type { Bead, Dep } from '../../shared/dto/beads.js';
import {
  BeadError,
  BLOCKING_KINDS,
  DEP_KINDS,
  NOT_WORK_LABELS,
  NOT_WORK_TYPES,
  STATUSES,
  type BeadChange,
  type NewBead,
} from './bead-store.js';

// Validation and naming rules every bead store applies the same way.

/** How long a create's idempotency key answers with its first answer. */
export const IDEMPOTENCY_TTL_MS = 30 * 60 * 1000;

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

/** How a store answers the questions a new or changed bead raises about other beads. */
export interface BeadLookup {
  /** Throws `missing-dependency` on `field` unless a bead `id` exists. */
  require(id: string, field: string): unknown;
  /** The parent chain above bead `id`. */
  ancestorsOf(id: string): Set<string>;
}

/** A new bead `id`, as every store writes it: `open`, checked, empty fields left out. */
export function newBead(id: string, input: NewBead, beads: Pick<BeadLookup, 'require'>): Bead {
  const title = input.title.trim();
  if (title === '') throw new BeadError('invalid', 'title must not be empty', 'title');
  const type = (input.type ?? 'task').trim();
  if (type === '') throw new BeadError('invalid', 'type must not be empty', 'type');
  checkPriority(input.priority);
  const deferUntil = input.deferUntil === undefined ? undefined : checkTime(input.deferUntil, 'defer_until');
  if (input.parent) beads.require(input.parent, 'parent');
  for (const dep of input.dependencies ?? []) {
    if (!(DEP_KINDS as readonly string[]).includes(dep.kind)) {
      throw new BeadError('invalid', `dependency type must be one of ${DEP_KINDS.join(', ')}`, 'type');
    }
    beads.require(dep.dependsOn, 'depends_on');
  }
  const now = new Date().toISOString();
  const bead: Bead = { id, title, status: 'open', issue_type: type, created_at: now, updated_at: now };
  const labels = uniqueLabels(input.labels ?? []);
  if (labels.length) bead.labels = labels;
  const metadata = cleanMetadata(input.metadata ?? {});
  if (Object.keys(metadata).length) bead.metadata = metadata;
  if (input.description) bead.description = input.description;
  if (input.priority !== undefined) bead.priority = input.priority;
  if (input.assignee) bead.assignee = input.assignee;
  if (input.parent) bead.parent = input.parent;
  if (deferUntil) bead.defer_until = deferUntil;
  if (input.ephemeral) bead.ephemeral = true;
  if (input.from) bead.from = input.from;
  const deps: Dep[] = [];
  for (const dep of input.dependencies ?? []) {
    if (!deps.some((d) => d.depends_on_id === dep.dependsOn && d.type === dep.kind)) {
      deps.push({ issue_id: id, depends_on_id: dep.dependsOn, type: dep.kind });
    }
  }
  if (deps.length) bead.dependencies = deps;
  return bead;
}

/**
 * `bead` (a stored copy the caller owns) with `change` applied, checked as every store checks it; fields
 * that end up empty are left out.
 */
export function applyChange(bead: Bead, change: BeadChange, beads: BeadLookup): Bead {
  if (change.title !== undefined) {
    if (change.title.trim() === '') throw new BeadError('invalid', 'title must not be empty', 'title');
    bead.title = change.title.trim();
  }
  if (change.status !== undefined) {
    if (!(STATUSES as readonly string[]).includes(change.status)) {
      throw new BeadError('invalid', `status must be one of ${STATUSES.join(', ')}`, 'status');
    }
    bead.status = change.status;
  }
  if (change.type !== undefined) {
    if (change.type.trim() === '') throw new BeadError('invalid', 'type must not be empty', 'type');
    bead.issue_type = change.type.trim();
  }
  if (change.priority !== undefined) {
    checkPriority(change.priority);
    bead.priority = change.priority;
  }
  if (change.assignee !== undefined) {
    if (change.assignee === '') delete bead.assignee;
    else bead.assignee = change.assignee;
  }
  if (change.description !== undefined) {
    if (change.description === '') delete bead.description;
    else bead.description = change.description;
  }
  if (change.addLabels || change.removeLabels) {
    const remove = new Set(change.removeLabels ?? []);
    const labels = uniqueLabels([...(bead.labels ?? []), ...(change.addLabels ?? [])]).filter((l) => !remove.has(l));
    if (labels.length) bead.labels = labels;
    else delete bead.labels;
  }
  if (change.metadata) {
    const metadata = { ...(bead.metadata ?? {}) };
    for (const [key, value] of Object.entries(change.metadata)) {
      if (value === '') delete metadata[key];
      else metadata[key] = value;
    }
    if (Object.keys(metadata).length) bead.metadata = metadata;
    else delete bead.metadata;
  }
  if (change.parent !== undefined) {
    if (change.parent === null || change.parent === '') {
      delete bead.parent;
    } else {
      beads.require(change.parent, 'parent');
      if (change.parent === bead.id || beads.ancestorsOf(change.parent).has(bead.id)) {
        throw new BeadError('cycle', `making ${change.parent} the parent of ${bead.id} would create a cycle`, 'parent');
      }
      bead.parent = change.parent;
    }
  }
  if (change.deferUntil !== undefined) {
    if (change.deferUntil === null || change.deferUntil === '') delete bead.defer_until;
    else bead.defer_until = checkTime(change.deferUntil, 'defer_until');
  }
  bead.updated_at = new Date().toISOString();
  return bead;
}
