import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Bead, BeadComment, Dep } from '../../shared/dto/beads.js';
import { noSuchComment } from './comment-book.js';
import {
  BeadError,
  BLOCKING_KINDS,
  DEP_KINDS,
  NOT_WORK_LABELS,
  NOT_WORK_TYPES,
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

const BLOCKING = [...BLOCKING_KINDS].map((k) => `'${k}'`).join(',');
const ORDERING = [...BLOCKING_KINDS, 'parent-child'].map((k) => `'${k}'`).join(',');
const NOT_WORK = [...NOT_WORK_TYPES].map((t) => `'${t}'`).join(',');
const BOOKKEEPING = [...NOT_WORK_LABELS].map((l) => `'${l}'`).join(',');
/** isWork() in SQL, for the row `beads`: what `beads.work` holds (set by every save). */
const IS_WORK = `(beads.ephemeral = 0 and beads.type not in (${NOT_WORK}) and not exists (select 1 from labels l where l.n = beads.n and l.label in (${BOOKKEEPING})))`;

/**
 * The open blocking dependencies of the bead in `beads` row `n`: what `beads.blockers` holds, kept current by
 * every write that can change it (the bead's own dependencies, or a dependency's status crossing closed).
 */
const COUNT_BLOCKERS = `(select count(*) from deps d join beads t on t.n = d.target where d.n = beads.n and d.kind in (${BLOCKING}) and t.status != 'closed')`;

/**
 * Kept in SQLite's `user_version`. Version 2 keeps in each bead's row its open-blocker count and whether it
 * is work at all, and indexes lists for counting without reading documents; a store from before versioning
 * (0: the same tables without `blockers` and `work`) is brought up to it when opened, and a store from a newer
 * ctl is refused rather than misread. What counts as work (NOT_WORK_TYPES, NOT_WORK_LABELS) changing means
 * a new version, whose migration recomputes `work`. Version 3 adds the `comments` table (created by TABLES).
 */
const SCHEMA_VERSION = 3;

const TABLES = `
create table if not exists beads (
  n integer primary key,            -- creation number: the id is <prefix>-<n>; newest first = n desc
  id text not null unique,
  status text not null,
  type text not null,
  assignee text,
  parent text,
  ephemeral integer not null default 0,
  defer_until text,
  doc text not null,                -- the bead as JSON, as the API shows it (without derived fields)
  blockers integer not null default 0,
  work integer not null default 0   -- isWork(): 1 when the bead could ever be ready
);
create table if not exists labels (n integer not null, label text not null, primary key (label, n));
create index if not exists labels_n on labels(n);
create table if not exists metadata (n integer not null, key text not null, value text not null, primary key (key, value, n));
create index if not exists metadata_n on metadata(n);
create table if not exists deps (n integer not null, target integer not null, kind text not null, primary key (n, target, kind));
create index if not exists deps_target on deps(target);
create table if not exists counters (name text primary key, value integer not null);
create table if not exists idempotency (key text primary key, hash text not null, at integer not null, response text not null);
create table if not exists comments (id integer primary key autoincrement, bead text not null, author text not null, text text not null, created_at text not null);
create index if not exists comments_by_bead on comments(bead, id);
`;

/**
 * Every list filter leads an index that ends in (status, ephemeral, n), so a list's total is counted from the
 * index alone and its page read newest first from it; ready work has a partial index of its own, so the ready
 * queue is as cheap as the number of ready beads, whatever the size of the store.
 */
const INDEXES = `
drop index if exists beads_status;
drop index if exists beads_type;
drop index if exists beads_assignee;
drop index if exists beads_parent;
create index if not exists beads_by_status on beads(status, ephemeral, n);
create index if not exists beads_by_type on beads(type, status, ephemeral, n);
create index if not exists beads_by_assignee on beads(assignee, status, ephemeral, n);
create index if not exists beads_by_parent on beads(parent, status, ephemeral, n);
create index if not exists beads_ready on beads(n, defer_until, assignee) where status = 'open' and blockers = 0 and work = 1;
`;

/** A `comments` row as the API shows it. */
const COMMENT = 'id, bead as issue_id, author, text, created_at';

interface Row {
  n: number;
  doc: string;
  blockers: number;
}

/**
 * The bead store on SQLite (better-sqlite3): one file, `beads.db`, in WAL mode. Every mutation is one
 * transaction, committed before the call returns, so an acknowledged change survives kill -9 and a write
 * the process died in is rolled back; a write touches only its rows. Indexes serve lists by status, type,
 * label, assignee, parent and metadata; each bead's open blockers are counted in its row as they change, so
 * the ready rule is one query over an index of the beads it can hold. Opening costs nothing
 * however many beads there are: nothing is loaded into memory.
 */
export class SqliteBeadStore implements BeadStore {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /** What the shared bead rules ask this store about other beads. */
  private readonly lookup: BeadLookup = {
    require: (id, field) => this.require(id, field),
    ancestorsOf: (id) => this.ancestorsOf(id),
  };

  private constructor(
    private readonly path: string,
    private readonly prefix: string,
  ) {
    this.db = new Database(path);
    // NORMAL: a commit survives the process dying (not a power cut) without an fsync per transaction.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.migrate();
  }

  /** Creates the tables, or brings an older store's up to this version, in one transaction. */
  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version === SCHEMA_VERSION) return;
    if (version > SCHEMA_VERSION) {
      throw new Error(
        `${this.db.name} is bead store version ${version}; this ctl reads up to version ${SCHEMA_VERSION}`,
      );
    }
    this.db.transaction(() => {
      this.db.exec(TABLES);
      const columns = this.db.pragma('table_info(beads)') as { name: string }[];
      if (!columns.some((c) => c.name === 'blockers')) {
        this.db.exec('alter table beads add column blockers integer not null default 0');
        this.db.exec('alter table beads add column work integer not null default 0');
        this.db.exec(`update beads set blockers = ${COUNT_BLOCKERS}, work = ${IS_WORK}`);
      }
      this.db.exec(INDEXES);
      this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
    })();
  }

  /** Opens (creating if needed) the store in `dir`, with ids `<prefix>-<n>`. */
  static open(dir: string, prefix: string): SqliteBeadStore {
    return new SqliteBeadStore(`${dir}/beads.db`, prefix);
  }

  readonly backend = 'sqlite';

  get size(): number {
    return (this.sql('select count(*) as c from beads').get() as { c: number }).c;
  }

  get(id: string): Bead | undefined {
    const row = this.sql('select n, doc, blockers from beads where id = ?').get(id) as Row | undefined;
    return row && view(row);
  }

  create(input: NewBead, idempotency?: { key: string; hash: string }): Bead {
    return this.db.transaction(() => {
      const n = this.nextNumber();
      const bead = newBead(`${input.prefix ?? this.prefix}-${n}`, input, this.lookup);
      this.sql('insert into beads (n, id, status, type, doc) values (?, ?, ?, ?, ?)').run(
        n,
        bead.id,
        'open',
        bead.issue_type,
        '{}',
      );
      this.save(n, bead, undefined);
      const response = this.get(bead.id)!;
      if (idempotency) {
        // What this create answers, kept with the key: a repeat answers the same.
        this.sql('insert or replace into idempotency (key, hash, at, response) values (?, ?, ?, ?)').run(
          idempotency.key,
          idempotency.hash,
          Date.now(),
          JSON.stringify(response),
        );
      }
      return response;
    })();
  }

  update(id: string, change: BeadChange): Bead {
    return this.db.transaction(() => {
      const { n, bead } = this.require(id);
      const before = structuredClone(bead);
      this.save(n, applyChange(bead, change, this.lookup), before);
      return this.get(id)!;
    })();
  }

  delete(id: string): Bead {
    return this.db.transaction(() => {
      const before = this.get(id);
      const { n } = this.require(id);
      // Edges and parent links pointing at it go too (a dependency on a missing bead would block forever),
      // but for `tracks`: a convoy goes on counting a deleted member as not closed.
      const now = new Date().toISOString();
      for (const dependent of this.sql('select distinct n from deps where target = ?').all(n) as { n: number }[]) {
        const other = this.byNumber(dependent.n);
        const kept = (other.dependencies ?? []).filter((d) => d.depends_on_id !== id || d.type === 'tracks');
        if (kept.length === (other.dependencies ?? []).length) continue;
        const previous = structuredClone(other);
        if (kept.length) other.dependencies = kept;
        else delete other.dependencies;
        other.updated_at = now;
        this.save(dependent.n, other, previous);
      }
      for (const child of this.sql('select n from beads where parent = ?').all(id) as { n: number }[]) {
        const other = this.byNumber(child.n);
        const previous = structuredClone(other);
        delete other.parent;
        other.updated_at = now;
        this.save(child.n, other, previous);
      }
      for (const table of ['labels', 'metadata', 'deps']) this.sql(`delete from ${table} where n = ?`).run(n);
      this.sql('delete from comments where bead = ?').run(id);
      this.sql('delete from beads where n = ?').run(n);
      return before!;
    })();
  }

  addDependency(id: string, dependsOn: string, kind: DepKind): Bead {
    return this.db.transaction(() => {
      const { n, bead } = this.require(id);
      if (!(DEP_KINDS as readonly string[]).includes(kind)) {
        throw new BeadError('invalid', `dependency type must be one of ${DEP_KINDS.join(', ')}`, 'type');
      }
      const target = this.find(dependsOn);
      if (!target)
        throw new BeadError('missing-dependency', `${id} cannot depend on ${dependsOn}: no such bead`, 'depends_on');
      if (dependsOn === id) throw new BeadError('cycle', `${id} cannot depend on itself`, 'depends_on');
      if ((bead.dependencies ?? []).some((d) => d.depends_on_id === dependsOn && d.type === kind)) return this.get(id)!;
      if (isOrdering(kind) && this.reaches(target.n, n)) {
        throw new BeadError('cycle', `${id} → ${dependsOn} would create a dependency cycle`, 'depends_on');
      }
      const before = structuredClone(bead);
      bead.dependencies = [...(bead.dependencies ?? []), { issue_id: id, depends_on_id: dependsOn, type: kind }];
      bead.updated_at = new Date().toISOString();
      this.save(n, bead, before);
      return this.get(id)!;
    })();
  }

  removeDependency(id: string, dependsOn: string, kind?: DepKind): Bead {
    return this.db.transaction(() => {
      const { n, bead } = this.require(id);
      const keep = (d: Dep) => d.depends_on_id !== dependsOn || (kind !== undefined && d.type !== kind);
      if ((bead.dependencies ?? []).every(keep)) {
        throw new BeadError('not-found', `${id} has no ${kind ? `${kind} ` : ''}dependency on ${dependsOn}`);
      }
      const before = structuredClone(bead);
      const dependencies = (bead.dependencies ?? []).filter(keep);
      if (dependencies.length) bead.dependencies = dependencies;
      else delete bead.dependencies;
      bead.updated_at = new Date().toISOString();
      this.save(n, bead, before);
      return this.get(id)!;
    })();
  }

  addComment(id: string, input: { author: string; text: string }): BeadComment {
    return this.db.transaction(() => {
      this.require(id);
      const created_at = new Date().toISOString();
      const { lastInsertRowid } = this.sql(
        'insert into comments (bead, author, text, created_at) values (?, ?, ?, ?)',
      ).run(id, input.author, input.text, created_at);
      return { id: Number(lastInsertRowid), issue_id: id, author: input.author, text: input.text, created_at };
    })();
  }

  comments(id: string, query: { limit: number; before?: number }) {
    this.require(id);
    const total = (this.sql('select count(*) as c from comments where bead = ?').get(id) as { c: number }).c;
    const rows = this.sql(`select ${COMMENT} from comments where bead = ? and id < ? order by id desc limit ?`).all(
      id,
      query.before ?? Number.MAX_SAFE_INTEGER,
      query.limit + 1,
    ) as BeadComment[];
    return { items: rows.slice(0, query.limit).reverse(), total, more: rows.length > query.limit };
  }

  comment(id: string, commentId: number): BeadComment | undefined {
    return this.sql(`select ${COMMENT} from comments where bead = ? and id = ?`).get(id, commentId) as
      BeadComment | undefined;
  }

  deleteComment(id: string, commentId: number): BeadComment {
    const comment = this.comment(id, commentId);
    if (!comment) throw noSuchComment(id, commentId);
    this.sql('delete from comments where id = ?').run(commentId);
    return comment;
  }

  list(query: BeadQuery): BeadPage {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.status !== undefined) {
      where.push('b.status = ?');
      params.push(query.status);
    } else if (query.includeClosed !== true) {
      where.push("b.status in ('open', 'in_progress')");
    }
    if (query.type !== undefined) {
      where.push('b.type = ?');
      params.push(query.type);
    }
    if (query.excludeType !== undefined) {
      where.push('b.type <> ?');
      params.push(query.excludeType);
    }
    if (query.assignee !== undefined) {
      where.push('b.assignee = ?');
      params.push(query.assignee);
    }
    if (query.parent !== undefined) {
      where.push('b.parent = ?');
      params.push(query.parent);
    }
    // The first label drives the list from its index, newest first (a page reads only what it shows); any other
    // is a lookup in the same index per bead.
    const [driving, ...otherLabels] = [...(query.label === undefined ? [] : [query.label]), ...(query.labels ?? [])];
    const from = driving === undefined ? 'beads b' : 'labels l0 join beads b on b.n = l0.n';
    const key = driving === undefined ? 'b.n' : 'l0.n';
    if (driving !== undefined) {
      where.push('l0.label = ?');
      params.push(driving);
    }
    for (const label of otherLabels) {
      where.push('exists (select 1 from labels l where l.label = ? and l.n = b.n)');
      params.push(label);
    }
    if (query.withoutLabel !== undefined) {
      where.push('not exists (select 1 from labels l where l.label = ? and l.n = b.n)');
      params.push(query.withoutLabel);
    }
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      where.push('b.n in (select n from metadata where key = ? and value = ?)');
      params.push(key, value);
    }
    if (query.createdBefore !== undefined) {
      // The store writes every created_at with toISOString(), so their text sorts as their times do.
      where.push("json_extract(b.doc, '$.created_at') < ?");
      params.push(query.createdBefore);
    }
    if (!query.includeEphemeral) where.push('b.ephemeral = 0');
    if (query.workOnly) where.push('b.work = 1');
    const filter = where.length ? `where ${where.join(' and ')}` : '';
    const total = (this.sql(`select count(*) as c from ${from} ${filter}`).get(...params) as { c: number }).c;
    const page: string[] = [...where];
    const pageParams = [...params];
    if (query.before !== undefined) {
      page.push(`${key} < ?`);
      pageParams.push(numberOf(query.before));
    }
    // The page's numbers come from an index alone (sorting numbers, not documents); then its rows are read.
    const rows = this.sql(
      `select n, doc, blockers from beads where n in (select ${key} from ${from} ${page.length ? `where ${page.join(' and ')}` : ''} order by ${key} desc limit ?) order by n desc`,
    ).all(...pageParams, query.limit + 1) as Row[];
    return { items: rows.slice(0, query.limit).map(view), total, more: rows.length > query.limit };
  }

  ready(query: { assignee?: string; limit?: number; after?: string }): {
    items: Bead[];
    total: number;
    more: boolean;
  } {
    const params: unknown[] = [new Date().toISOString()];
    let assignee = '';
    if (query.assignee !== undefined) {
      assignee = 'and b.assignee = ?';
      params.push(query.assignee);
    }
    // The first three terms are beads_ready's own condition, which SQLite needs to see to use that index; the
    // index holds only the beads that are ready but for a deferral, so counting them reads nothing else.
    const where = `status = 'open' and blockers = 0 and work = 1 and (b.defer_until is null or b.defer_until <= ?) ${assignee}`;
    const after = query.after === undefined ? 0 : numberOf(query.after);
    const rows = this.sql(
      `select b.n, b.doc, b.blockers from beads b indexed by beads_ready where ${where} and b.n > ? order by b.n limit ?`,
    ).all(...params, after, query.limit === undefined ? -1 : query.limit + 1) as Row[];
    const more = query.limit !== undefined && rows.length > query.limit;
    const total = (
      this.sql(`select count(*) as c from beads b indexed by beads_ready where ${where}`).get(...params) as {
        c: number;
      }
    ).c;
    return { items: (more ? rows.slice(0, query.limit) : rows).map(view), total, more };
  }

  dependents(id: string): Bead[] {
    const { n } = this.require(id);
    const rows = this.sql(
      'select b.n, b.doc, b.blockers from beads b where b.n in (select n from deps where target = ?) order by b.n',
    ).all(n) as Row[];
    return rows.map(view);
  }

  children(id: string): Bead[] {
    this.require(id);
    const rows = this.sql('select n, doc, blockers from beads where parent = ? order by n').all(id) as Row[];
    return rows.map(view);
  }

  idempotent(key: string): { bead: Bead; hash: string } | undefined {
    const entry = this.sql('select hash, at, response from idempotency where key = ?').get(key) as
      { hash: string; at: number; response: string } | undefined;
    if (!entry) return undefined;
    if (Date.now() - entry.at > IDEMPOTENCY_TTL_MS) {
      this.sql('delete from idempotency where key = ?').run(key);
      return undefined;
    }
    return { bead: JSON.parse(entry.response) as Bead, hash: entry.hash };
  }

  files(): { path: string; bytes: number }[] {
    return [this.path, `${this.path}-wal`, `${this.path}-shm`].map((path) => ({ path, bytes: sizeOf(path) }));
  }

  /**
   * Expired idempotency keys deleted, the WAL folded into the database and truncated, the database rebuilt without
   * its free pages (VACUUM), the planner's statistics refreshed (`PRAGMA optimize`), the WAL truncated again.
   */
  maintain(): string[] {
    this.sql('delete from idempotency where at < ?').run(Date.now() - IDEMPOTENCY_TTL_MS);
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.exec('VACUUM');
    this.db.pragma('optimize');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    return ['expire_idempotency_keys', 'wal_checkpoint', 'vacuum', 'optimize', 'wal_checkpoint'];
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // --- rows ---

  /**
   * Writes a bead's document and, where they changed from `before`, its label, metadata and dependency rows
   * (within the caller's transaction).
   */
  private save(n: number, bead: Bead, before: Bead | undefined): void {
    const stored: Bead = { ...bead };
    delete stored.needs;
    delete stored.is_blocked;
    this.sql(
      'update beads set status = ?, type = ?, assignee = ?, parent = ?, ephemeral = ?, defer_until = ?, work = ?, doc = ? where n = ?',
    ).run(
      stored.status,
      stored.issue_type,
      stored.assignee ?? null,
      stored.parent ?? null,
      stored.ephemeral ? 1 : 0,
      stored.defer_until ?? null,
      isWork(stored) ? 1 : 0,
      JSON.stringify(stored),
      n,
    );
    const changed = (key: 'labels' | 'metadata' | 'dependencies') =>
      JSON.stringify(before?.[key] ?? null) !== JSON.stringify(stored[key] ?? null);
    if (changed('labels')) {
      if (before) this.sql('delete from labels where n = ?').run(n);
      for (const label of stored.labels ?? []) this.sql('insert into labels (n, label) values (?, ?)').run(n, label);
    }
    if (changed('metadata')) {
      if (before) this.sql('delete from metadata where n = ?').run(n);
      for (const [key, value] of Object.entries(stored.metadata ?? {})) {
        this.sql('insert into metadata (n, key, value) values (?, ?, ?)').run(n, key, value);
      }
    }
    if (changed('dependencies')) {
      if (before) this.sql('delete from deps where n = ?').run(n);
      for (const dep of stored.dependencies ?? []) {
        const target = this.find(dep.depends_on_id);
        if (target)
          this.sql('insert or ignore into deps (n, target, kind) values (?, ?, ?)').run(n, target.n, dep.type);
      }
      this.sql(`update beads set blockers = ${COUNT_BLOCKERS} where n = ?`).run(n);
    }
    if (before && (before.status === 'closed') !== (stored.status === 'closed')) {
      // Its status crossed closed: every bead it blocks gains or loses an open blocker.
      this.sql(
        `update beads set blockers = ${COUNT_BLOCKERS} where n in (select n from deps where target = ? and kind in (${BLOCKING}))`,
      ).run(n);
    }
  }

  private nextNumber(): number {
    const row = this.sql("select value from counters where name = 'next'").get() as { value: number } | undefined;
    const next = row?.value ?? 1;
    this.sql("insert or replace into counters (name, value) values ('next', ?)").run(next + 1);
    return next;
  }

  private find(id: string): { n: number } | undefined {
    return this.sql('select n from beads where id = ?').get(id) as { n: number } | undefined;
  }

  private byNumber(n: number): Bead {
    return JSON.parse((this.sql('select doc from beads where n = ?').get(n) as { doc: string }).doc) as Bead;
  }

  private require(id: string, field?: string): { n: number; bead: Bead } {
    const row = this.sql('select n, doc from beads where id = ?').get(id) as { n: number; doc: string } | undefined;
    if (!row) {
      if (field) throw new BeadError('missing-dependency', `no such bead: ${id}`, field);
      throw new BeadError('not-found', `bead not found: ${id}`);
    }
    return { n: row.n, bead: JSON.parse(row.doc) as Bead };
  }

  /** True when bead `to` is reachable from `from` along ordering dependencies. */
  private reaches(from: number, to: number): boolean {
    const row = this.sql(
      `with recursive reach(n) as (select ? union select d.target from deps d join reach r on d.n = r.n where d.kind in (${ORDERING}))
       select 1 as hit from reach where n = ? limit 1`,
    ).get(from, to);
    return row !== undefined;
  }

  private ancestorsOf(id: string): Set<string> {
    const seen = new Set<string>();
    let at = this.require(id).bead.parent;
    while (at && !seen.has(at)) {
      seen.add(at);
      at = this.find(at) ? this.require(at).bead.parent : undefined;
    }
    return seen;
  }

  private sql(text: string): Database.Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }
}

function view(row: Row): Bead {
  const bead = JSON.parse(row.doc) as Bead;
  bead.labels ??= [];
  bead.metadata ??= {};
  bead.dependencies ??= [];
  bead.needs = bead.dependencies.filter((d) => BLOCKING_KINDS.has(d.type)).map((d) => d.depends_on_id);
  bead.is_blocked = row.blockers > 0;
  return bead;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
