import type { Logger } from 'pino';
import type {
  OverlapParty,
  PartyOverlap,
  RigOverlap,
  RigOverlapPayload,
  RigOverlapProblem,
  RigOverlapsResponse,
} from '../../shared/dto/overlaps.js';
import { git } from './git.js';
import { changedFiles, isComplete, reasonOf, type WorktreeRecord } from './session-worktrees.js';

/** An open session of a rig, as the overlaps read it: its worktree's fields and its name. */
export interface OverlapSession extends WorktreeRecord {
  session_name: string;
}

/** A review waiting to land in a rig, as the overlaps read it: where its branch's finished work is. */
export interface OverlapReview {
  bead: string;
  /** The session that finished the work: its id, and its name (its id when its record is gone). */
  session_id: string;
  session: string;
  branch: string;
  /** The repository the branch is in, the base's commit it started from, and the commit it was finished at. */
  repo: string;
  base_commit: string;
  commit: string;
  /** The session holding the bead now, if one does (a round sent back): that is the same work, no overlap. */
  holder?: string;
}

/** The review states whose work is finished and not landed: what a session working now would collide with. */
export const WAITING_REVIEW_STATES: ReadonlySet<string> = new Set(['pending', 'approved', 'conflicted']);

/** What one side (a session's worktree, or a review's branch) changed against its base. */
export interface PartyChanges {
  party: OverlapParty;
  files: string[];
  /** Its branch: two sides on one branch are the same work (a session, and the review of what it finished). */
  branch?: string;
  /** A review's: the session holding its bead now. */
  holder?: string;
}

/** Two sides that are one piece of work, never an overlap: one session's, one branch, or a review and its holder. */
function sameWork(a: PartyChanges, b: PartyChanges): boolean {
  return (
    a.party.session_id === b.party.session_id ||
    (a.branch !== undefined && a.branch === b.branch) ||
    (a.holder !== undefined && a.holder === b.party.session_id && b.party.kind === 'session') ||
    (b.holder !== undefined && b.holder === a.party.session_id && a.party.kind === 'session')
  );
}

/**
 * The pairs of sides that changed at least one same file, with those files: each pair once, ordered as the sides
 * are given, files sorted; no pair of one piece of work (`sameWork`). Pure: the unit tests give it lists.
 */
export function overlapPairs(changes: PartyChanges[]): RigOverlap[] {
  const pairs: RigOverlap[] = [];
  const sets = changes.map((c) => new Set(c.files));
  for (let i = 0; i < changes.length; i++) {
    for (let j = i + 1; j < changes.length; j++) {
      const [a, b] = [changes[i]!, changes[j]!];
      if (sameWork(a, b)) continue;
      const shared = [...sets[i]!].filter((f) => sets[j]!.has(f)).sort();
      if (!shared.length) continue;
      pairs.push({
        parties: [a.party, b.party],
        sessions: [a.party.session, b.party.session],
        session_ids: [a.party.session_id, b.party.session_id],
        files: shared,
      });
    }
  }
  return pairs;
}

/** A session's side of an overlap. */
export function sessionParty(id: string, name: string): OverlapParty {
  return { kind: 'session', session: name, session_id: id };
}

/** A review's side of an overlap. */
export function reviewParty(review: Pick<OverlapReview, 'bead' | 'session' | 'session_id'>): OverlapParty {
  return { kind: 'review', session: review.session, session_id: review.session_id, bead: review.bead };
}

/** A side's identity: a session by its id, a review by its bead (a review's session may be working still). */
export function partyKey(party: Pick<OverlapParty, 'kind' | 'session_id' | 'bead'>): string {
  return party.kind === 'review' ? `review:${party.bead}` : `session:${party.session_id}`;
}

/** How a side is named to a person: its session's name, or `review of BEAD (session)`. */
export function partyLabel(party: OverlapParty): string {
  return party.kind === 'review' ? `review of ${party.bead} (${party.session})` : party.session;
}

/** What `rig.overlap` says to a person: who and which files. */
export function overlapMessage(payload: Pick<RigOverlapPayload, 'parties' | 'files'>): string {
  return `${payload.parties.map(partyLabel).join(' and ')} both changed ${payload.files.join(', ')}`;
}

/** A pair's identity while it lasts: its two sides, whichever order they come in. */
export function pairKey(pair: Pick<RigOverlap, 'parties'>): string {
  return pair.parties.map(partyKey).sort().join('\0');
}

/**
 * The pairs of `now` that were not in `before` (by their sides): the ones that have just begun. A pair that ends
 * and begins again is new again.
 */
export function newPairs(before: ReadonlySet<string>, now: RigOverlap[]): RigOverlap[] {
  return now.filter((pair) => !before.has(pairKey(pair)));
}

/** What `party` overlaps with: the other side of each pair it is in, with the files. */
export function overlapsWith(
  pairs: RigOverlap[],
  party: Pick<OverlapParty, 'kind' | 'session_id' | 'bead'>,
): PartyOverlap[] {
  const key = partyKey(party);
  return pairs.flatMap((pair) => {
    const at = pair.parties.findIndex((p) => partyKey(p) === key);
    return at === -1 ? [] : [{ party: pair.parties[1 - at]!, files: pair.files }];
  });
}

/**
 * A page of pairs in the order of their session names (a review after its session's own worktree), after the
 * pair keyed `after` (`''`: from the first): its pairs, and the key of its last when more follow. By key, not
 * position, so that a pair ending between two pages shifts none of the rest.
 */
export function pageOfPairs(pairs: RigOverlap[], size: number, after: string): { items: RigOverlap[]; last?: string } {
  const rest = pairs
    .map((item) => ({ item, key: item.parties.map(pageKeyOf).join('\0') }))
    .filter((k) => k.key > after)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const page = rest.slice(0, size);
  return { items: page.map((k) => k.item), ...(rest.length > size ? { last: page.at(-1)!.key } : {}) };
}

function pageKeyOf(party: OverlapParty): string {
  return party.kind === 'review' ? `${party.session}\u0001${party.bead}` : party.session;
}

/** A read this recent answers a session's or a review's page: its worktrees' changes are seconds old at most. */
export const RECENT_MS = 5_000;

/**
 * What the overlaps need of the city: a rig's open sessions and waiting reviews, the rig a session is of, and the
 * event log.
 */
export interface OverlapsHost {
  /** The rig's open sessions (of its agents), oldest first; undefined when there is no such rig. */
  sessionsOf(rig: string): OverlapSession[] | undefined;
  /** The rig's reviews waiting to land (`WAITING_REVIEW_STATES`), oldest first. */
  reviewsOf(rig: string): OverlapReview[];
  /** The rig a session's agent is of, if any. */
  rigOf(record: WorktreeRecord): string | undefined;
  /** Records `rig.overlap`. */
  record(payload: RigOverlapPayload): Promise<void>;
  logger: Logger;
}

/** What a branch changed against its base, as read at one pair of heads. */
interface Committed {
  key: string;
  files: string[];
}

/**
 * Which files each open worktree session of a rig, and each of its reviews waiting to land, has changed against its
 * base, and the pairs of them touching the same files: read at every turn end of a session of the rig, when a
 * review is requested, and on demand (the API). A session's committed changes are its branch against the
 * merge-base with its base (`git diff --name-only base...branch`, in the rig's repository, where a remote session's
 * branch is fetched back), cached until either head moves; a local worktree's uncommitted changes (`git status`)
 * are added each time. A review's are its finished commit against the base's commit it started from, cached by
 * those two commits (they never change for one round). A pair that begins is `rig.overlap`, once while it lasts.
 * Reads of one rig run one after another, so that an event is never recorded twice.
 */
export class RigOverlaps {
  /** By rig, by session: what its branch changed at its last read heads (only open sessions kept). */
  private readonly committed = new Map<string, Map<string, Committed>>();
  /** By rig, by review's commits: what its finished branch changed (only waiting reviews kept). */
  private readonly reviewed = new Map<string, Map<string, string[]>>();
  private readonly seen = new Map<string, Set<string>>();
  private readonly running = new Map<string, Promise<RigOverlapsResponse | undefined>>();
  /** By rig: the last read that ended, and when (performance.now()). */
  private readonly lastRead = new Map<string, { at: number; read: RigOverlapsResponse }>();

  constructor(private readonly host: OverlapsHost) {}

  /** A session's turn ended: its rig's overlaps read again (in the background; failures are logged). */
  turnEnded(record: WorktreeRecord): void {
    const rig = this.host.rigOf(record);
    if (rig === undefined) return;
    this.readSoon(rig, { session: record.id });
  }

  /** A review of the rig began or moved (a new party, or one that left): its overlaps read again, in the background. */
  reviewMoved(rig: string, bead: string): void {
    this.readSoon(rig, { bead });
  }

  /**
   * What `party` overlaps with in its rig, as read at most `RECENT_MS` ago (else read now); undefined for an unknown
   * rig. A page that shows a session or a review asks this on every load, and reads are also made at every turn end
   * and review event: without reuse each view would `git status` every worktree of the rig.
   */
  async of(
    rig: string,
    party: Pick<OverlapParty, 'kind' | 'session_id' | 'bead'>,
  ): Promise<PartyOverlap[] | undefined> {
    const read = await this.recent(rig);
    return read && overlapsWith(read.items, party);
  }

  /**
   * The read under way (a turn end or a review event started it: it sees their change); else the last one when it
   * ended under `RECENT_MS` ago; else a new one.
   */
  recent(rig: string): Promise<RigOverlapsResponse | undefined> {
    const running = this.running.get(rig);
    if (running) return running;
    const last = this.lastRead.get(rig);
    if (last && performance.now() - last.at < RECENT_MS) return Promise.resolve(last.read);
    return this.compute(rig);
  }

  /** What an open session overlaps with in its rig, read now; undefined when it is of no rig. */
  async ofSession(record: WorktreeRecord): Promise<PartyOverlap[] | undefined> {
    const rig = this.host.rigOf(record);
    if (rig === undefined) return undefined;
    try {
      return await this.of(rig, { kind: 'session', session_id: record.id });
    } catch (err) {
      // The session is shown all the same; its overlaps are for the page.
      this.host.logger.warn({ err, rig, session: record.id }, 'could not read what a session overlaps');
      return undefined;
    }
  }

  private readSoon(rig: string, about: Record<string, string>): void {
    this.compute(rig).catch((err: unknown) =>
      this.host.logger.warn({ err, rig, ...about }, 'could not read a rig’s overlaps'),
    );
  }

  /** The rig's overlaps read now; undefined for an unknown rig. */
  compute(rig: string): Promise<RigOverlapsResponse | undefined> {
    const previous = this.running.get(rig) ?? Promise.resolve();
    // One read at a time per rig; the one before failed for its own caller, who was told.
    const next = previous
      .catch((err: unknown) => this.host.logger.debug({ err, rig }, 'the overlaps read before this one failed'))
      .then(() => this.read(rig));
    this.running.set(rig, next);
    void next.finally(() => {
      if (this.running.get(rig) === next) this.running.delete(rig);
    });
    return next;
  }

  private async read(rig: string): Promise<RigOverlapsResponse | undefined> {
    const sessions = this.host.sessionsOf(rig);
    if (!sessions) return undefined;
    const reviews = this.host.reviewsOf(rig);
    const computedAt = new Date().toISOString();
    const withWorktrees = sessions.filter((s) => s.branch !== undefined && s.worktree_repo !== undefined);
    const cache = this.committed.get(rig) ?? new Map<string, Committed>();
    const fresh = new Map<string, Committed>();
    const reviewCache = this.reviewed.get(rig) ?? new Map<string, string[]>();
    const freshReviews = new Map<string, string[]>();
    const [sessionReads, reviewReads] = await Promise.all([
      Promise.all(
        withWorktrees.map(async (s) => {
          const side = { party: sessionParty(s.id, s.session_name), ...(s.branch ? { branch: s.branch } : {}) };
          try {
            // Its reviews waiting on its branch, the latest first: where its work since begins.
            const finished = reviews
              .filter((r) => r.branch === s.branch)
              .map((r) => r.commit)
              .reverse();
            return { side, files: await this.changes(s, finished, cache, fresh) };
          } catch (err) {
            return { side, error: reasonOf(err) };
          }
        }),
      ),
      Promise.all(
        reviews.map(async (r) => {
          const side = { party: reviewParty(r), branch: r.branch, ...(r.holder ? { holder: r.holder } : {}) };
          try {
            return { side, files: await reviewChanges(r, reviewCache, freshReviews) };
          } catch (err) {
            return { side, error: reasonOf(err) };
          }
        }),
      ),
    ]);
    this.committed.set(rig, fresh);
    this.reviewed.set(rig, freshReviews);
    const changes: PartyChanges[] = [];
    const problems: RigOverlapProblem[] = [];
    for (const r of [...sessionReads, ...reviewReads]) {
      if (r.files) changes.push({ ...r.side, files: r.files });
      else if (r.error !== undefined) {
        const { session, session_id, bead } = r.side.party;
        problems.push({ session, session_id, ...(bead !== undefined ? { bead } : {}), error: r.error });
      }
    }
    const items = overlapPairs(changes);
    const before = this.seen.get(rig) ?? new Set<string>();
    // A side whose changes could not be read keeps its pairs as they were: a failing git is no new overlap.
    const unread = new Set(problems.map((p) => partyKey({ kind: p.bead === undefined ? 'session' : 'review', ...p })));
    const kept = [...before].filter((key) => key.split('\0').some((side) => unread.has(side)));
    this.seen.set(rig, new Set([...items.map(pairKey), ...kept]));
    for (const pair of newPairs(before, items)) {
      await this.host.record({
        rig,
        parties: pair.parties,
        sessions: pair.sessions,
        session_ids: pair.session_ids,
        files: pair.files,
      });
    }
    const sessionsChecked = changes.filter((c) => c.party.kind === 'session').length;
    const response: RigOverlapsResponse = {
      rig,
      items,
      sessions_checked: sessionsChecked,
      reviews_checked: changes.length - sessionsChecked,
      ...(problems.length ? { problems } : {}),
      computed_at: computedAt,
    };
    this.lastRead.set(rig, { at: performance.now(), read: response });
    return response;
  }

  /**
   * The files a session changed against its base, or since the latest of its `finished` commits (its work gone to
   * review) its branch holds: committed (cached by its branch's and base's heads and those commits), plus a local
   * worktree's uncommitted ones. Empty while it has no branch or base yet (its worktree not made).
   */
  private async changes(
    s: OverlapSession,
    finished: string[],
    cache: ReadonlyMap<string, Committed>,
    fresh: Map<string, Committed>,
  ): Promise<string[]> {
    const repo = s.worktree_repo!;
    const branch = s.branch!;
    if (s.base === undefined) return [];
    const heads = await git(
      repo,
      ['rev-parse', '--quiet', `refs/heads/${branch}^{commit}`, `refs/heads/${s.base}^{commit}`],
      { allow: [128] },
    );
    const [head, baseHead] = heads.stdout.trim().split('\n');
    if (heads.exitCode !== 0 || !head || !baseHead) {
      // Not made yet (its first start is under way), or its base is gone: nothing to compare.
      return [];
    }
    const key = [head, baseHead, ...finished].join(':');
    let committed = cache.get(s.id);
    if (committed?.key !== key) {
      // Its work gone to review is the review's side: the session's own is what it did since (when its branch
      // still holds that commit; rebased since, it is counted whole).
      let from = baseHead;
      for (const commit of finished) {
        const held = await git(repo, ['merge-base', '--is-ancestor', commit, head], { allow: [1, 128] });
        if (held.exitCode === 0) {
          from = commit;
          break;
        }
      }
      const diff = await git(repo, [
        'diff',
        '--name-only',
        '-z',
        '--no-renames',
        '--no-ext-diff',
        '--no-textconv',
        `${from}...${head}`,
      ]);
      committed = { key, files: diff.stdout.split('\0').filter(Boolean) };
    }
    fresh.set(s.id, committed);
    // A remote session's worktree is on its host: only its fetched-back branch counts (no directory here).
    if (s.worktree === undefined || !isComplete(s.worktree)) return committed.files;
    const uncommitted = await changedFiles(s.worktree);
    return [...new Set([...committed.files, ...uncommitted])];
  }
}

/**
 * The files a review's finished branch changed: its commit against the base's commit it started from
 * (`git diff --name-only base_commit...commit`), cached by the two (a round's commits never change).
 */
async function reviewChanges(
  r: OverlapReview,
  cache: ReadonlyMap<string, string[]>,
  fresh: Map<string, string[]>,
): Promise<string[]> {
  const key = `${r.repo}\0${r.base_commit}...${r.commit}`;
  let files = cache.get(key) ?? fresh.get(key);
  if (!files) {
    const diff = await git(r.repo, [
      'diff',
      '--name-only',
      '-z',
      '--no-renames',
      '--no-ext-diff',
      '--no-textconv',
      `${r.base_commit}...${r.commit}`,
    ]);
    files = diff.stdout.split('\0').filter(Boolean);
  }
  fresh.set(key, files);
  return files;
}
