import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import type { Bead, BeadComment, Dep } from '../../shared/dto/beads.js';
import { CommentBook, noSuchComment } from './comment-book.js';
import {
  BeadError,
  BLOCKING_KINDS,
  DEP_KINDS,
  type BeadChange,
  type BeadPage,
  type BeadQuery,
  type BeadStore,
  type DepKind,
  type NewBead,
} from './bead-store.js';
import {
  applyChange,
  IDEMPOTENCY_TTL_MS,
  isOrdering,
  isWork,
  newBead,
  numberOf,
  type BeadLookup,
} from './bead-rules.js';

/** How long an idempotency key keeps answering with the bead it created. */

interface Journal {
  /** A bead's whole state after a create or change. */
  put?: Bead;
  /** A deleted bead's id. */
  del?: string;
  /** The idempotency key a create was made under, and what it answered. */
  idem?: { key: string; hash: string; at: number; response: Bead };
  /** A comment added. */
  comment?: BeadComment;
  /** A comment deleted: its bead and id. */
  uncomment?: { issue_id: string; id: number };
}

interface Snapshot {
  version: 1;
  next: number;
  beads: Bead[];
  idem: { key: string; hash: string; at: number; response: Bead }[];
  /** Absent in snapshots from before comments. */
  comments?: BeadComment[];
  nextComment?: number;
}

/**
 * The embedded bead store: an append-only journal (`beads.jsonl`, one line per mutation holding the bead's
 * whole new state) over a snapshot (`beads.snapshot.json`), with every bead and index in memory.
 *
 * A mutation is one `write` of one line, done before the call returns, so an acknowledged change survives
 * kill -9; a torn last line (a write the process died in) was never acknowledged and is dropped on open.
 * When the journal outgrows the live data it is folded into a new snapshot (written aside, then renamed).
 * Lists and `ready` are served from indexes by status, type, label, assignee and parent, and from a
 * maintained count of each bead's open blocking dependencies.
 */
export class JournalBeadStore implements BeadStore {
  private readonly beads = new Map<string, Bead>();
  /** What the shared bead rules ask this store about other beads. */
  private readonly lookup: BeadLookup = {
    require: (id, field) => this.require(id, field),
    ancestorsOf: (id) => this.ancestorsOf(id),
  };
  /** Creation number of each id (`prefix-<n>`), for newest-first order. */
  private readonly numbers = new Map<string, number>();
  private next = 1;
  private readonly byStatus = new Map<string, Set<string>>();
  private readonly byType = new Map<string, Set<string>>();
  private readonly byLabel = new Map<string, Set<string>>();
  /** By `key\0value` of each metadata entry (a run's members, an agent's routed work). */
  private readonly byMetadata = new Map<string, Set<string>>();
  private readonly byAssignee = new Map<string, Set<string>>();
  private readonly byParent = new Map<string, Set<string>>();
  /** Target id → ids with a dependency on it. */
  private readonly dependentsOf = new Map<string, Set<string>>();
  /** Id → how many of its blocking dependencies are not closed. */
  private readonly openBlockers = new Map<string, number>();
  private readonly idempotency = new Map<string, { hash: string; at: number; response: Bead }>();
  private readonly notes = new CommentBook();
  private fd = -1;
  private journalLines = 0;

  private constructor(
    private readonly journalPath: string,
    private readonly snapshotPath: string,
    private readonly prefix: string,
  ) {}

  /** Opens (creating if needed) the store in `dir`, with ids `<prefix>-<n>`. */
  static open(dir: string, prefix: string): JournalBeadStore {
    const store = new JournalBeadStore(`${dir}/beads.jsonl`, `${dir}/beads.snapshot.json`, prefix);
    store.load();
    return store;
  }

  readonly backend = 'journal';

  get size(): number {
    return this.beads.size;
  }

  get(id: string): Bead | undefined {
    const bead = this.beads.get(id);
    return bead && this.view(bead);
  }

  create(input: NewBead, idempotency?: { key: string; hash: string }): Bead {
    const number = this.next;
    const bead = newBead(`${input.prefix ?? this.prefix}-${number}`, input, this.lookup);
    // What this create answers: kept with an idempotency key, so that a repeat answers the same.
    const response = this.viewOf(bead);
    const idem = idempotency ? { ...idempotency, at: Date.now(), response } : undefined;
    this.write({ put: bead, ...(idem ? { idem } : {}) });
    this.next = number + 1;
    this.apply(bead);
    if (idem) this.idempotency.set(idem.key, { hash: idem.hash, at: idem.at, response });
    this.settle();
    return this.view(bead);
  }

  update(id: string, change: BeadChange): Bead {
    const bead = applyChange(copyOf(this.require(id)), change, this.lookup);
    this.write({ put: bead });
    this.apply(bead);
    this.settle();
    return this.view(bead);
  }

  delete(id: string): Bead {
    const bead = this.require(id);
    const view = this.view(bead);
    // Edges pointing at it go too (a dependency on a bead that no longer exists would block forever), but
    // for `tracks`: a convoy goes on counting a deleted member as not closed.
    for (const dependentId of [...(this.dependentsOf.get(id) ?? [])]) {
      const dependent = copyOf(this.beads.get(dependentId)!);
      const kept = (dependent.dependencies ?? []).filter((d) => d.depends_on_id !== id || d.type === 'tracks');
      if (kept.length === (dependent.dependencies ?? []).length) continue;
      if (kept.length) dependent.dependencies = kept;
      else delete dependent.dependencies;
      dependent.updated_at = new Date().toISOString();
      this.write({ put: dependent });
      this.apply(dependent);
    }
    for (const childId of [...(this.byParent.get(id) ?? [])]) {
      const child = copyOf(this.beads.get(childId)!);
      delete child.parent;
      child.updated_at = new Date().toISOString();
      this.write({ put: child });
      this.apply(child);
    }
    this.write({ del: id });
    this.remove(id);
    this.notes.dropBead(id);
    this.settle();
    return view;
  }

  addComment(id: string, input: { author: string; text: string }): BeadComment {
    this.require(id);
    const comment = { id: this.notes.next, issue_id: id, ...input, created_at: new Date().toISOString() };
    this.write({ comment });
    this.notes.put(comment);
    this.settle();
    return { ...comment };
  }

  comments(id: string, query: { limit: number; before?: number }) {
    this.require(id);
    return this.notes.page(id, query);
  }

  comment(id: string, commentId: number): BeadComment | undefined {
    return this.notes.get(id, commentId);
  }

  deleteComment(id: string, commentId: number): BeadComment {
    const comment = this.notes.get(id, commentId);
    if (!comment) throw noSuchComment(id, commentId);
    this.write({ uncomment: { issue_id: id, id: commentId } });
    this.notes.remove(id, commentId);
    this.settle();
    return comment;
  }

  addDependency(id: string, dependsOn: string, kind: DepKind): Bead {
    const bead = this.require(id);
    if (!(DEP_KINDS as readonly string[]).includes(kind)) {
      throw new BeadError('invalid', `dependency type must be one of ${DEP_KINDS.join(', ')}`, 'type');
    }
    if (!this.beads.has(dependsOn)) {
      throw new BeadError('missing-dependency', `${id} cannot depend on ${dependsOn}: no such bead`, 'depends_on');
    }
    if (dependsOn === id) throw new BeadError('cycle', `${id} cannot depend on itself`, 'depends_on');
    if ((bead.dependencies ?? []).some((d) => d.depends_on_id === dependsOn && d.type === kind)) return this.view(bead);
    if (isOrdering(kind) && this.reaches(dependsOn, id)) {
      throw new BeadError('cycle', `${id} → ${dependsOn} would create a dependency cycle`, 'depends_on');
    }
    const next = copyOf(bead);
    next.dependencies = [...(next.dependencies ?? []), { issue_id: id, depends_on_id: dependsOn, type: kind }];
    next.updated_at = new Date().toISOString();
    this.write({ put: next });
    this.apply(next);
    this.settle();
    return this.view(next);
  }

  removeDependency(id: string, dependsOn: string, kind?: DepKind): Bead {
    const bead = this.require(id);
    const keep = (d: Dep) => d.depends_on_id !== dependsOn || (kind !== undefined && d.type !== kind);
    if ((bead.dependencies ?? []).every(keep)) {
      throw new BeadError('not-found', `${id} has no ${kind ?? ''} dependency on ${dependsOn}`.replace('  ', ' '));
    }
    const next = copyOf(bead);
    next.dependencies = (next.dependencies ?? []).filter(keep);
    next.updated_at = new Date().toISOString();
    this.write({ put: next });
    this.apply(next);
    this.settle();
    return this.view(next);
  }

  list(query: BeadQuery): BeadPage {
    const wantsClosed = query.includeClosed === true || query.status === 'closed';
    const sets: Set<string>[] = [];
    if (query.status !== undefined) sets.push(this.byStatus.get(query.status) ?? new Set());
    if (query.type !== undefined) sets.push(this.byType.get(query.type) ?? new Set());
    if (query.label !== undefined) sets.push(this.byLabel.get(query.label) ?? new Set());
    for (const label of query.labels ?? []) sets.push(this.byLabel.get(label) ?? new Set());
    if (query.assignee !== undefined) sets.push(this.byAssignee.get(query.assignee) ?? new Set());
    if (query.parent !== undefined) sets.push(this.byParent.get(query.parent) ?? new Set());
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      sets.push(this.byMetadata.get(`${key}\0${value}`) ?? new Set());
    }
    if (sets.length === 0 && !wantsClosed) {
      sets.push(union(this.byStatus.get('open'), this.byStatus.get('in_progress')));
    }
    // Start from the smallest index set; check the rest per bead.
    sets.sort((a, b) => a.size - b.size);
    const rest = sets.slice(1);
    const matches = (id: string) => {
      if (!rest.every((s) => s.has(id))) return false;
      const bead = this.beads.get(id)!;
      if (!wantsClosed && bead.status === 'closed') return false;
      if (bead.ephemeral && !query.includeEphemeral) return false;
      if (query.workOnly && !isWork(bead)) return false;
      if (query.excludeType !== undefined && bead.issue_type === query.excludeType) return false;
      if (query.withoutLabel !== undefined && bead.labels?.includes(query.withoutLabel)) return false;
      // The store writes every created_at with toISOString(), so their text sorts as their times do.
      if (query.createdBefore !== undefined && !(bead.created_at < query.createdBefore)) return false;
      for (const [key, value] of Object.entries(query.metadata ?? {})) if (bead.metadata?.[key] !== value) return false;
      return true;
    };
    let matching: string[];
    if (sets.length) {
      matching = [...sets[0]!].filter(matches);
      matching.sort((a, b) => this.numbers.get(b)! - this.numbers.get(a)!);
    } else {
      // Every bead: the map holds them in creation order already.
      matching = [];
      for (const id of this.beads.keys()) if (matches(id)) matching.push(id);
      matching.reverse();
    }
    let start = 0;
    if (query.before !== undefined) {
      const boundary = numberOf(query.before);
      start = matching.findIndex((id) => this.numbers.get(id)! < boundary);
      if (start < 0) start = matching.length;
    }
    const page = matching.slice(start, start + query.limit);
    return {
      items: page.map((id) => this.view(this.beads.get(id)!)),
      total: matching.length,
      more: start + query.limit < matching.length,
    };
  }

  ready(query: { assignee?: string; limit?: number; after?: string }): {
    items: Bead[];
    total: number;
    more: boolean;
  } {
    const now = Date.now();
    const after = query.after === undefined ? 0 : numberOf(query.after);
    const items: Bead[] = [];
    let total = 0;
    let more = false;
    const ids = [...(this.byStatus.get('open') ?? [])].sort((a, b) => this.numbers.get(a)! - this.numbers.get(b)!);
    for (const id of ids) {
      const bead = this.beads.get(id)!;
      if (!this.isReady(bead, now)) continue;
      if (query.assignee !== undefined && bead.assignee !== query.assignee) continue;
      total++;
      if (this.numbers.get(id)! <= after) continue;
      if (query.limit === undefined || items.length < query.limit) items.push(this.view(bead));
      else more = true;
    }
    return { items, total, more };
  }

  dependents(id: string): Bead[] {
    this.require(id);
    return this.sorted(this.dependentsOf.get(id));
  }

  children(id: string): Bead[] {
    this.require(id);
    return this.sorted(this.byParent.get(id));
  }

  idempotent(key: string): { bead: Bead; hash: string } | undefined {
    const entry = this.idempotency.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.at > IDEMPOTENCY_TTL_MS) {
      this.idempotency.delete(key);
      return undefined;
    }
    return { bead: structuredClone(entry.response), hash: entry.hash };
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  // --- derived fields and the ready rule ---

  /** What callers get: a copy (the store's own objects never leave it), with the derived fields. */
  private view(bead: Bead): Bead {
    return this.viewOf(bead);
  }

  /** The view of a bead that may not be stored yet (its blockers counted from the store as it is). */
  private viewOf(bead: Bead): Bead {
    const copy = copyOf(bead);
    copy.labels ??= [];
    copy.metadata ??= {};
    copy.dependencies ??= [];
    copy.needs = copy.dependencies.filter((d) => BLOCKING_KINDS.has(d.type)).map((d) => d.depends_on_id);
    copy.is_blocked = copy.dependencies.some(
      (d) => BLOCKING_KINDS.has(d.type) && this.beads.get(d.depends_on_id)?.status !== 'closed',
    );
    return copy;
  }

  private isReady(bead: Bead, now: number): boolean {
    if (bead.status !== 'open' || !isWork(bead)) return false;
    if (bead.defer_until !== undefined && Date.parse(bead.defer_until) > now) return false;
    return (this.openBlockers.get(bead.id) ?? 0) === 0;
  }

  // --- indexes ---

  private apply(bead: Bead): void {
    const previous = this.beads.get(bead.id);
    if (previous) this.unindex(previous);
    this.beads.set(bead.id, bead);
    if (!this.numbers.has(bead.id)) this.numbers.set(bead.id, numberOf(bead.id));
    this.index(bead);
    // A bead that closes or reopens changes how many open blockers its dependents have.
    const wasClosed = previous?.status === 'closed';
    const isClosed = bead.status === 'closed';
    if (previous && wasClosed !== isClosed) {
      for (const dependentId of this.dependentsOf.get(bead.id) ?? []) this.recount(dependentId);
    }
    this.recount(bead.id);
  }

  private remove(id: string): void {
    const bead = this.beads.get(id);
    if (!bead) return;
    this.unindex(bead);
    this.beads.delete(id);
    this.openBlockers.delete(id);
  }

  private index(bead: Bead): void {
    add(this.byStatus, bead.status, bead.id);
    add(this.byType, bead.issue_type, bead.id);
    for (const label of bead.labels ?? []) add(this.byLabel, label, bead.id);
    for (const [key, value] of Object.entries(bead.metadata ?? {})) add(this.byMetadata, `${key}\0${value}`, bead.id);
    if (bead.assignee) add(this.byAssignee, bead.assignee, bead.id);
    if (bead.parent) add(this.byParent, bead.parent, bead.id);
    for (const dep of bead.dependencies ?? []) add(this.dependentsOf, dep.depends_on_id, bead.id);
  }

  private unindex(bead: Bead): void {
    drop(this.byStatus, bead.status, bead.id);
    drop(this.byType, bead.issue_type, bead.id);
    for (const label of bead.labels ?? []) drop(this.byLabel, label, bead.id);
    for (const [key, value] of Object.entries(bead.metadata ?? {})) drop(this.byMetadata, `${key}\0${value}`, bead.id);
    if (bead.assignee) drop(this.byAssignee, bead.assignee, bead.id);
    if (bead.parent) drop(this.byParent, bead.parent, bead.id);
    for (const dep of bead.dependencies ?? []) drop(this.dependentsOf, dep.depends_on_id, bead.id);
  }

  private recount(id: string): void {
    const bead = this.beads.get(id);
    if (!bead) return;
    let open = 0;
    for (const dep of bead.dependencies ?? []) {
      if (!BLOCKING_KINDS.has(dep.type)) continue;
      const target = this.beads.get(dep.depends_on_id);
      if (!target || target.status !== 'closed') open++;
    }
    if (open) this.openBlockers.set(id, open);
    else this.openBlockers.delete(id);
  }

  // --- graph checks ---

  /** True when `to` is reachable from `from` along ordering dependencies. */
  private reaches(from: string, to: string): boolean {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const id = stack.pop()!;
      if (id === to) return true;
      if (seen.has(id)) continue;
      seen.add(id);
      for (const dep of this.beads.get(id)?.dependencies ?? []) if (isOrdering(dep.type)) stack.push(dep.depends_on_id);
    }
    return false;
  }

  private ancestorsOf(id: string): Set<string> {
    const seen = new Set<string>();
    for (let at = this.beads.get(id)?.parent; at && !seen.has(at); at = this.beads.get(at)?.parent) seen.add(at);
    return seen;
  }

  private require(id: string, field?: string): Bead {
    const bead = this.beads.get(id);
    if (!bead) {
      if (field) throw new BeadError('missing-dependency', `no such bead: ${id}`, field);
      throw new BeadError('not-found', `bead not found: ${id}`);
    }
    return bead;
  }

  private sorted(ids: Set<string> | undefined): Bead[] {
    return [...(ids ?? [])]
      .sort((a, b) => this.numbers.get(a)! - this.numbers.get(b)!)
      .map((id) => this.view(this.beads.get(id)!));
  }

  // --- disk ---

  private write(entry: Journal): void {
    const line = Buffer.from(JSON.stringify(entry) + '\n');
    let written = 0;
    while (written < line.length) written += writeSync(this.fd, line, written);
    this.journalLines++;
  }

  /** Called once a mutation is written and applied: folds the journal when it outgrows the live data. */
  private settle(): void {
    if (this.journalLines > Math.max(10_000, this.beads.size)) this.compact();
  }

  private load(): void {
    if (existsSync(this.snapshotPath)) {
      const snapshot = JSON.parse(readFileSync(this.snapshotPath, 'utf8')) as Snapshot;
      for (const bead of snapshot.beads) this.beads.set(bead.id, bead);
      this.next = snapshot.next;
      for (const entry of snapshot.idem) {
        this.idempotency.set(entry.key, { hash: entry.hash, at: entry.at, response: entry.response });
      }
      for (const comment of snapshot.comments ?? []) this.notes.put(comment);
      this.notes.next = Math.max(this.notes.next, snapshot.nextComment ?? 1);
    }
    this.fd = openSync(this.journalPath, 'a+');
    const text = readFileSync(this.journalPath, 'utf8');
    const complete = text.lastIndexOf('\n') + 1;
    if (complete < Buffer.byteLength(text)) {
      // The last line was being written when the process died: it was never acknowledged.
      ftruncateSync(this.fd, Buffer.byteLength(text.slice(0, complete)));
    }
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0 && end < complete; end = text.indexOf('\n', start)) {
      const line = text.slice(start, end);
      start = end + 1;
      if (line === '') continue;
      let entry: Journal;
      try {
        entry = JSON.parse(line) as Journal;
      } catch {
        continue;
      }
      this.journalLines++;
      if (entry.put) {
        this.beads.set(entry.put.id, entry.put);
        this.next = Math.max(this.next, numberOf(entry.put.id) + 1);
        if (entry.idem) {
          const { key, hash, at, response } = entry.idem;
          this.idempotency.set(key, { hash, at, response });
        }
      } else if (entry.del) {
        this.beads.delete(entry.del);
        this.notes.dropBead(entry.del);
        this.next = Math.max(this.next, numberOf(entry.del) + 1);
      } else if (entry.comment) {
        this.notes.put(entry.comment);
      } else if (entry.uncomment) {
        this.notes.remove(entry.uncomment.issue_id, entry.uncomment.id);
      }
    }
    for (const bead of this.beads.values()) {
      this.numbers.set(bead.id, numberOf(bead.id));
      this.next = Math.max(this.next, numberOf(bead.id) + 1);
      this.index(bead);
    }
    for (const id of this.beads.keys()) this.recount(id);
    const cutoff = Date.now() - IDEMPOTENCY_TTL_MS;
    for (const [key, entry] of this.idempotency) if (entry.at < cutoff) this.idempotency.delete(key);
    // Start from a snapshot next time rather than replaying a long journal.
    this.settle();
  }

  /** Folds the journal into a new snapshot: written aside and renamed, then the journal starts over. */
  private compact(): void {
    const snapshot: Snapshot = {
      version: 1,
      next: this.next,
      beads: [...this.beads.values()],
      idem: [...this.idempotency].map(([key, e]) => ({ key, hash: e.hash, at: e.at, response: e.response })),
      comments: this.notes.all(),
      nextComment: this.notes.next,
    };
    writeFileAtomic(this.snapshotPath, JSON.stringify(snapshot));
    // Replaying the old journal over the new snapshot would change nothing, so a crash here is harmless.
    ftruncateSync(this.fd, 0);
    this.journalLines = 0;
  }

  files(): { path: string; bytes: number }[] {
    return [this.snapshotPath, this.journalPath].map((path) => {
      try {
        return { path, bytes: statSync(path).size };
      } catch {
        return { path, bytes: 0 };
      }
    });
  }

  /** Expired idempotency keys dropped and the journal folded into a new snapshot of the live beads. */
  maintain(): string[] {
    const cutoff = Date.now() - IDEMPOTENCY_TTL_MS;
    for (const [key, entry] of this.idempotency) if (entry.at < cutoff) this.idempotency.delete(key);
    this.compact();
    return ['expire_idempotency_keys', 'compact_journal'];
  }

  /** Bytes in the journal (for tests and diagnostics). */
  journalSize(): number {
    return fstatSync(this.fd).size;
  }
}

/** A new bead's initial dependencies, without repeats. */
/** A copy of a stored bead (its arrays and metadata too), without the derived fields. Stored beads leave out
 * what is empty, to keep a hundred thousand of them small. */
function copyOf(bead: Bead): Bead {
  const copy: Bead = { ...bead };
  delete copy.needs;
  delete copy.is_blocked;
  if (bead.labels) copy.labels = bead.labels.length ? [...bead.labels] : undefined;
  if (bead.metadata) copy.metadata = Object.keys(bead.metadata).length ? { ...bead.metadata } : undefined;
  if (bead.dependencies)
    copy.dependencies = bead.dependencies.length ? bead.dependencies.map((d) => ({ ...d })) : undefined;
  for (const key of ['labels', 'metadata', 'dependencies'] as const) if (copy[key] === undefined) delete copy[key];
  return copy;
}

function add(index: Map<string, Set<string>>, key: string, id: string): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(id);
}

function drop(index: Map<string, Set<string>>, key: string, id: string): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) index.delete(key);
}

function union(a: Set<string> | undefined, b: Set<string> | undefined): Set<string> {
  return new Set([...(a ?? []), ...(b ?? [])]);
}
