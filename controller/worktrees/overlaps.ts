import type { Logger } from 'pino';
import type {
  OverlapParty,
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

/** What one session's worktree changed against its base. */
export interface SessionChanges {
  id: string;
  name: string;
  files: string[];
}

/**
 * The pairs of sessions that changed at least one same file, with those files: each pair once, ordered as the
 * sessions are given, files sorted. Pure: the unit tests give it lists.
 */
export function overlapPairs(changes: SessionChanges[]): RigOverlap[] {
  const pairs: RigOverlap[] = [];
  const sets = changes.map((c) => new Set(c.files));
  for (let i = 0; i < changes.length; i++) {
    for (let j = i + 1; j < changes.length; j++) {
      const shared = [...sets[i]!].filter((f) => sets[j]!.has(f)).sort();
      if (!shared.length) continue;
      const [a, b] = [changes[i]!, changes[j]!];
      pairs.push({
        parties: [partyOf(a), partyOf(b)],
        sessions: [a.name, b.name],
        session_ids: [a.id, b.id],
        files: shared,
      });
    }
  }
  return pairs;
}

function partyOf(changes: SessionChanges): OverlapParty {
  return { kind: 'session', session: changes.name, session_id: changes.id };
}

/** A pair's identity while it lasts: its two sessions, whichever order they come in. */
export function pairKey(pair: Pick<RigOverlap, 'session_ids'>): string {
  return [...pair.session_ids].sort().join('\0');
}

/**
 * The pairs of `now` that were not in `before` (by their sessions): the ones that have just begun. A pair that
 * ends and begins again is new again.
 */
export function newPairs(before: ReadonlySet<string>, now: RigOverlap[]): RigOverlap[] {
  return now.filter((pair) => !before.has(pairKey(pair)));
}

/**
 * A page of pairs in the order of their session names, after the pair keyed `after` (`''`: from the first): its
 * pairs, and the key of its last when more follow. By key, not position, so that a pair ending between two pages
 * shifts none of the rest.
 */
export function pageOfPairs(pairs: RigOverlap[], size: number, after: string): { items: RigOverlap[]; last?: string } {
  const rest = pairs
    .map((item) => ({ item, key: item.sessions.join('\0') }))
    .filter((k) => k.key > after)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const page = rest.slice(0, size);
  return { items: page.map((k) => k.item), ...(rest.length > size ? { last: page.at(-1)!.key } : {}) };
}

/** What the overlaps need of the city: a rig's open sessions, the rig a session is of, and the event log. */
export interface OverlapsHost {
  /** The rig's open sessions (of its agents), oldest first; undefined when there is no such rig. */
  sessionsOf(rig: string): OverlapSession[] | undefined;
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
 * Which files each open worktree session of a rig has changed against its base, and the pairs of sessions
 * touching the same files: read at every turn end of a session of the rig, and on demand (the API). A session's
 * committed changes are its branch against the merge-base with its base (`git diff --name-only base...branch`, in
 * the rig's repository, where a remote session's branch is fetched back), cached until either head moves; a
 * local worktree's uncommitted changes (`git status`) are added each time. A pair that begins is `rig.overlap`,
 * once while it lasts. Reads of one rig run one after another, so that an event is never recorded twice.
 */
export class RigOverlaps {
  /** By rig, by session: what its branch changed at its last read heads (only open sessions kept). */
  private readonly committed = new Map<string, Map<string, Committed>>();
  private readonly seen = new Map<string, Set<string>>();
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly host: OverlapsHost) {}

  /** A session's turn ended: its rig's overlaps read again (in the background; failures are logged). */
  turnEnded(record: WorktreeRecord): void {
    const rig = this.host.rigOf(record);
    if (rig === undefined) return;
    this.compute(rig).catch((err: unknown) =>
      this.host.logger.warn({ err, rig, session: record.id }, 'could not read a rig’s overlaps'),
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
    const computedAt = new Date().toISOString();
    const withWorktrees = sessions.filter((s) => s.branch !== undefined && s.worktree_repo !== undefined);
    const cache = this.committed.get(rig) ?? new Map<string, Committed>();
    const fresh = new Map<string, Committed>();
    const read = await Promise.all(
      withWorktrees.map(async (s) => {
        try {
          return { session: s, files: await this.changes(s, cache, fresh) };
        } catch (err) {
          return { session: s, error: reasonOf(err) };
        }
      }),
    );
    this.committed.set(rig, fresh);
    const changes: SessionChanges[] = [];
    const problems: RigOverlapProblem[] = [];
    for (const r of read) {
      if (r.files) changes.push({ id: r.session.id, name: r.session.session_name, files: r.files });
      else if (r.error !== undefined) {
        problems.push({ session: r.session.session_name, session_id: r.session.id, error: r.error });
      }
    }
    const items = overlapPairs(changes);
    const before = this.seen.get(rig) ?? new Set<string>();
    // A session whose changes could not be read keeps its pairs as they were: a failing git is no new overlap.
    const unread = new Set(problems.map((p) => p.session_id));
    const kept = [...before].filter((key) => key.split('\0').some((id) => unread.has(id)));
    this.seen.set(rig, new Set([...items.map(pairKey), ...kept]));
    for (const pair of newPairs(before, items)) {
      await this.host.record({ rig, sessions: pair.sessions, session_ids: pair.session_ids, files: pair.files });
    }
    return {
      rig,
      items,
      sessions_checked: changes.length,
      ...(problems.length ? { problems } : {}),
      computed_at: computedAt,
    };
  }

  /**
   * The files a session changed against its base: committed (cached by its branch's and base's heads), plus a
   * local worktree's uncommitted ones. Empty while it has no branch or base yet (its worktree not made).
   */
  private async changes(
    s: OverlapSession,
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
    const key = `${head}:${baseHead}`;
    let committed = cache.get(s.id);
    if (committed?.key !== key) {
      const diff = await git(repo, [
        'diff',
        '--name-only',
        '-z',
        '--no-renames',
        '--no-ext-diff',
        '--no-textconv',
        `${baseHead}...${head}`,
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
