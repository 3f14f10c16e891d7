import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import type { RigOverlapPayload } from '../../shared/dto/overlaps.js';
import {
  newPairs,
  overlapMessage,
  overlapPairs,
  overlapsWith,
  pageOfPairs,
  pairKey,
  reviewParty,
  RECENT_MS,
  RigOverlaps,
  sessionParty,
  type OverlapReview,
  type OverlapSession,
  type PartyChanges,
} from '../../controller/worktrees/overlaps.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

/** A session's side with its changed files. */
function side(id: string, name: string, files: string[]): PartyChanges {
  return { party: sessionParty(id, name), files, branch: `ctl/w/${name}` };
}

describe('overlap pairs', function () {
  it('pairs sessions that changed a same file, with the shared files sorted', function () {
    const pairs = overlapPairs([
      side('s1', 'a', ['src/z.ts', 'src/x.ts', 'README']),
      side('s2', 'b', ['docs/y.md']),
      side('s3', 'c', ['src/x.ts', 'src/z.ts']),
    ]);
    expect(pairs).to.deep.equal([
      {
        parties: [
          { kind: 'session', session: 'a', session_id: 's1' },
          { kind: 'session', session: 'c', session_id: 's3' },
        ],
        sessions: ['a', 'c'],
        session_ids: ['s1', 's3'],
        files: ['src/x.ts', 'src/z.ts'],
      },
    ]);
  });

  it('finds every pair among three sessions on one file, and none among disjoint ones', function () {
    const all = overlapPairs([side('s1', 'a', ['f']), side('s2', 'b', ['f']), side('s3', 'c', ['f', 'g'])]);
    expect(all.map((p) => p.sessions)).to.deep.equal([
      ['a', 'b'],
      ['a', 'c'],
      ['b', 'c'],
    ]);
    expect(overlapPairs([side('s1', 'a', ['f']), side('s2', 'b', ['g']), side('s3', 'c', [])])).to.deep.equal([]);
  });

  it('takes a pair the same whichever order its sessions come in', function () {
    const [s1, s2] = [sessionParty('s1', 'a'), sessionParty('s2', 'b')];
    expect(pairKey({ parties: [s2, s1] })).to.equal(pairKey({ parties: [s1, s2] }));
    const now = overlapPairs([side('s2', 'b', ['f']), side('s1', 'a', ['f']), side('s3', 'c', ['f'])]);
    const before = new Set([pairKey({ parties: [s1, s2] })]);
    expect(newPairs(before, now).map((p) => p.session_ids)).to.deep.equal([
      ['s2', 's3'],
      ['s1', 's3'],
    ]);
  });
});

describe('overlap pairs with reviews waiting to land', function () {
  const review = (bead: string, sessionId: string, name: string, files: string[], holder?: string): PartyChanges => ({
    party: reviewParty({ bead, session: name, session_id: sessionId }),
    files,
    branch: `ctl/w/${name}`,
    ...(holder ? { holder } : {}),
  });

  it('pairs a working session with another session’s pending review, and two reviews with each other', function () {
    const pairs = overlapPairs([
      side('s1', 'a', ['app.ts']),
      review('b-1', 's2', 'b', ['app.ts', 'lib.ts']),
      review('c-1', 's3', 'c', ['lib.ts']),
    ]);
    expect(pairs).to.deep.equal([
      {
        parties: [
          { kind: 'session', session: 'a', session_id: 's1' },
          { kind: 'review', session: 'b', session_id: 's2', bead: 'b-1' },
        ],
        sessions: ['a', 'b'],
        session_ids: ['s1', 's2'],
        files: ['app.ts'],
      },
      {
        parties: [
          { kind: 'review', session: 'b', session_id: 's2', bead: 'b-1' },
          { kind: 'review', session: 'c', session_id: 's3', bead: 'c-1' },
        ],
        sessions: ['b', 'c'],
        session_ids: ['s2', 's3'],
        files: ['lib.ts'],
      },
    ]);
    expect(overlapMessage(pairs[0])).to.equal('a and review of b-1 (b) both changed app.ts');
  });

  it('never pairs one piece of work: a session with its own review, one branch, the session holding the bead', function () {
    expect(overlapPairs([side('s1', 'a', ['f']), review('a-1', 's1', 'a', ['f'])]), 'its own review').to.deep.equal([]);
    expect(
      overlapPairs([review('a-1', 's1', 'a', ['f']), review('a-2', 's1', 'a', ['f'])]),
      'two rounds of work of one session',
    ).to.deep.equal([]);
    expect(
      overlapPairs([side('s9', 'z', ['f']), { ...review('x-1', 's2', 'x', ['f']), branch: 'ctl/w/z' }]),
      'one branch',
    ).to.deep.equal([]);
    // Sent back, taken by another session (the one that finished it gone): that session is the same work.
    expect(overlapPairs([side('s5', 'e', ['f']), review('b-1', 's2', 'b', ['f'], 's5')]), 'its holder').to.deep.equal(
      [],
    );
    expect(overlapPairs([side('s6', 'g', ['f']), review('b-1', 's2', 'b', ['f'], 's5')])).to.have.length(1);
  });

  it('keys a review apart from its session’s worktree, and says what one side overlaps with', function () {
    const pairs = overlapPairs([side('s1', 'a', ['f']), side('s2', 'b', ['f', 'g']), review('a-1', 's1', 'a', ['g'])]);
    expect(pairs.map((p) => p.files)).to.deep.equal([['f'], ['g']]);
    expect(new Set(pairs.map(pairKey)).size, 'the review of a and a itself are two sides').to.equal(2);
    expect(overlapsWith(pairs, { kind: 'review', session_id: 's1', bead: 'a-1' })).to.deep.equal([
      { party: sessionParty('s2', 'b'), files: ['g'] },
    ]);
    expect(overlapsWith(pairs, { kind: 'session', session_id: 's2' }).map((o) => o.party.kind)).to.deep.equal([
      'session',
      'review',
    ]);
    // Paged by names: a's worktree pair and a's review pair are two keys, both listed once.
    const first = pageOfPairs(pairs, 1, '');
    const second = pageOfPairs(pairs, 1, first.last!);
    expect([...first.items, ...second.items]).to.have.members(pairs);
    expect(second.last).to.equal(undefined);
  });
});

describe('pages of overlap pairs', function () {
  const pairs = overlapPairs(['d', 'b', 'c', 'a'].map((name) => side(`id-${name}`, name, ['f'])));

  it('pages in the order of the session names, each pair once, the last page without a key', function () {
    const seen: string[][] = [];
    let after = '';
    for (let n = 0; n < 10; n++) {
      const page = pageOfPairs(pairs, 4, after);
      seen.push(...page.items.map((p) => p.sessions));
      if (page.last === undefined) break;
      expect(page.items).to.have.length(4);
      after = page.last;
    }
    expect(seen).to.have.length(6);
    const keys = seen.map((s) => s.join(' '));
    expect(keys).to.deep.equal([...keys].sort());
    expect(new Set(keys).size).to.equal(6);
  });

  it('a pair that ends between pages shifts none of the rest', function () {
    const first = pageOfPairs(pairs, 2, '');
    const without = pairs.filter((p) => p !== first.items[0]);
    const second = pageOfPairs(without, 2, first.last!);
    expect(second.items).to.deep.equal(pageOfPairs(pairs, 2, first.last!).items);
  });
});

// The overlaps of real git worktrees of one repository: committed and uncommitted changes, events once per pair.
describe('a rig’s overlaps', function () {
  let root: string;
  let repo: string;
  let sessions: OverlapSession[];
  let reviews: OverlapReview[];
  let events: RigOverlapPayload[];
  let overlaps: RigOverlaps;

  function worktree(name: string): OverlapSession {
    const path = join(root, 'worktrees', name);
    git(repo, 'worktree', 'add', '-q', '-b', `ctl/w/${name}`, path, 'main');
    return {
      id: `id-${name}`,
      session_name: name,
      work_dir: path,
      worktree: path,
      branch: `ctl/w/${name}`,
      base: 'main',
      worktree_repo: repo,
    };
  }

  function commit(s: OverlapSession, file: string, text: string): void {
    mkdirSync(join(s.worktree!, file, '..'), { recursive: true });
    writeFileSync(join(s.worktree!, file), text);
    git(s.worktree!, 'add', '-A');
    git(s.worktree!, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', `edit ${file}`);
  }

  beforeEach(function () {
    root = mkdtempSync(join(tmpdir(), 'ctl-unit-overlaps-'));
    repo = join(root, 'rig');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(join(repo, 'README'), 'hello\n');
    writeFileSync(join(repo, 'app.txt'), 'app\n');
    git(repo, 'add', '.');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init');
    sessions = [];
    reviews = [];
    events = [];
    overlaps = new RigOverlaps({
      sessionsOf: (rig) => (rig === 'r' ? sessions : undefined),
      reviewsOf: () => reviews,
      rigOf: () => 'r',
      record: async (payload) => {
        events.push(payload);
      },
      logger: pino({ level: 'silent' }),
    });
  });

  afterEach(function () {
    rmSync(root, { recursive: true, force: true });
  });

  it('lists two sessions that committed the same file, and records the pair once while it lasts', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    sessions = [a, b];
    commit(a, 'app.txt', 'from a\n');
    commit(b, 'app.txt', 'from b\n');
    commit(b, 'only-b.txt', 'b\n');
    const first = await overlaps.compute('r');
    expect(first?.items).to.deep.equal([
      {
        parties: [
          { kind: 'session', session: 'a', session_id: 'id-a' },
          { kind: 'session', session: 'b', session_id: 'id-b' },
        ],
        sessions: ['a', 'b'],
        session_ids: ['id-a', 'id-b'],
        files: ['app.txt'],
      },
    ]);
    expect(first?.sessions_checked).to.equal(2);
    expect(Date.parse(first!.computed_at)).to.be.a('number').and.not.NaN;
    expect(events).to.have.length(1);
    expect(events[0]).to.deep.equal({
      rig: 'r',
      parties: first!.items[0].parties,
      sessions: ['a', 'b'],
      session_ids: ['id-a', 'id-b'],
      files: ['app.txt'],
    });
    commit(a, 'only-b.txt', 'a too\n');
    const second = await overlaps.compute('r');
    expect(second?.items[0]?.files).to.deep.equal(['app.txt', 'only-b.txt']);
    expect(events, 'no second event while the pair lasts').to.have.length(1);
  });

  it('answers a page from the read under way or one just made, and reads again once it is old', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    sessions = [a, b];
    commit(a, 'app.txt', 'a\n');
    commit(b, 'app.txt', 'b\n');
    let reads = 0;
    const counted = sessions;
    sessions = new Proxy(counted, {
      get(target, key, receiver) {
        if (key === 'filter') reads += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    // A turn end's read under way: a page asking meanwhile shares it.
    const turnEnd = overlaps.compute('r');
    const page = overlaps.of('r', { kind: 'session', session_id: 'id-a' });
    await turnEnd;
    expect((await page)?.map((o) => o.party.session)).to.deep.equal(['b']);
    expect(reads, 'one read for both').to.equal(1);
    // Just made: reused.
    await overlaps.of('r', { kind: 'session', session_id: 'id-b' });
    expect(reads).to.equal(1);
    // Old: read again (the clock moved past RECENT_MS).
    const later = performance.now() + RECENT_MS + 1;
    Object.defineProperty(performance, 'now', { value: () => later, configurable: true });
    try {
      await overlaps.of('r', { kind: 'session', session_id: 'id-b' });
    } finally {
      delete (performance as { now?: unknown }).now;
    }
    expect(reads).to.equal(2);
  });

  it('counts a local worktree’s uncommitted and untracked files', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    sessions = [a, b];
    writeFileSync(join(a.worktree!, 'README'), 'edited, not committed\n');
    writeFileSync(join(b.worktree!, 'README'), 'edited too\n');
    writeFileSync(join(a.worktree!, 'new.txt'), 'untracked\n');
    writeFileSync(join(b.worktree!, 'new.txt'), 'untracked too\n');
    const read = await overlaps.compute('r');
    expect(read?.items.map((p) => p.files)).to.deep.equal([['README', 'new.txt']]);
  });

  it('lists nothing for sessions on different files, and a pair that ends and begins again is new again', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    sessions = [a, b];
    commit(a, 'one.txt', '1\n');
    commit(b, 'two.txt', '2\n');
    expect((await overlaps.compute('r'))?.items).to.deep.equal([]);
    expect(events).to.deep.equal([]);
    writeFileSync(join(b.worktree!, 'one.txt'), 'b as well\n');
    expect((await overlaps.compute('r'))?.items).to.have.length(1);
    rmSync(join(b.worktree!, 'one.txt'));
    expect((await overlaps.compute('r'))?.items).to.deep.equal([]);
    writeFileSync(join(b.worktree!, 'one.txt'), 'again\n');
    await overlaps.compute('r');
    expect(events).to.have.length(2);
  });

  it('compares against the merge-base: what the base gained since is no change of the session', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    sessions = [a, b];
    commit(a, 'app.txt', 'a\n');
    // The base moves on (another branch merged) touching the same file: b itself changed nothing.
    writeFileSync(join(repo, 'app.txt'), 'base moved\n');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'base moves');
    const read = await overlaps.compute('r');
    expect(read?.items).to.deep.equal([]);
  });

  it('reads a branch whose worktree is elsewhere (a remote session’s, fetched back) from its commits only', async function () {
    const a = worktree('a');
    const b = worktree('b');
    commit(b, 'app.txt', 'b on its host\n');
    commit(a, 'app.txt', 'a\n');
    // As on a host: no worktree here, only its branch in the rig.
    sessions = [a, { ...b, worktree: join(root, 'not-here') }];
    const read = await overlaps.compute('r');
    expect(read?.items.map((p) => p.files)).to.deep.equal([['app.txt']]);
  });

  it('says which session could not be read, and counts none whose worktree is not made yet', async function () {
    const a = worktree('a');
    commit(a, 'app.txt', 'a\n');
    const unmade: OverlapSession = {
      ...a,
      id: 'id-c',
      session_name: 'c',
      branch: 'ctl/w/c',
      worktree: join(root, 'c'),
    };
    const broken: OverlapSession = { ...a, id: 'id-d', session_name: 'd', worktree_repo: join(root, 'gone') };
    sessions = [a, unmade, broken];
    const read = await overlaps.compute('r');
    expect(read?.items).to.deep.equal([]);
    expect(read?.problems?.map((p) => p.session)).to.deep.equal(['d']);
    expect(read?.problems?.[0]?.error).to.match(/git|directory|ENOENT|spawn/);
  });

  /** A review of what `s` finished: its branch's head against where it left main. */
  function reviewOf(s: OverlapSession, bead: string): OverlapReview {
    return {
      bead,
      session_id: s.id,
      session: s.session_name,
      branch: s.branch!,
      repo,
      base_commit: git(repo, 'merge-base', 'main', s.branch!),
      commit: git(repo, 'rev-parse', s.branch!),
    };
  }

  it('pairs a working session with a pending review of the same files, once, and not with its own work', async function () {
    const [a, b] = [worktree('a'), worktree('b')];
    commit(a, 'app.txt', 'finished by a\n');
    commit(a, 'a-only.txt', 'a\n');
    reviews = [reviewOf(a, 'bd-1')];
    // a works on after its close, on the same branch: its worktree and its review are one piece of work.
    writeFileSync(join(a.worktree!, 'README'), 'a goes on\n');
    sessions = [a, b];
    writeFileSync(join(b.worktree!, 'app.txt'), 'b, uncommitted\n');
    const read = await overlaps.compute('r');
    expect(read).to.include({ sessions_checked: 2, reviews_checked: 1 });
    expect(read?.items).to.deep.equal([
      {
        parties: [
          { kind: 'session', session: 'b', session_id: 'id-b' },
          { kind: 'review', session: 'a', session_id: 'id-a', bead: 'bd-1' },
        ],
        sessions: ['b', 'a'],
        session_ids: ['id-b', 'id-a'],
        files: ['app.txt'],
      },
    ]);
    expect(events).to.deep.equal([{ rig: 'r', ...read!.items[0] }]);
    expect(await overlaps.of('r', { kind: 'review', session_id: 'id-a', bead: 'bd-1' })).to.deep.equal([
      { party: { kind: 'session', session: 'b', session_id: 'id-b' }, files: ['app.txt'] },
    ]);
    expect(events, 'the same pair read again is no second event').to.have.length(1);

    // The review is what was finished: a's commits after it are a's worktree's side, not the review's.
    commit(a, 'later.txt', 'after the close\n');
    writeFileSync(join(b.worktree!, 'later.txt'), 'b too\n');
    const later = await overlaps.compute('r');
    expect(later?.items.map((p) => [p.sessions, p.files])).to.deep.equal([
      [['a', 'b'], ['later.txt']],
      [['b', 'a'], ['app.txt']],
    ]);

    // Merged (no longer waiting): the review's pair ends, and a's worktree is counted whole again.
    reviews = [];
    expect((await overlaps.compute('r'))?.items.map((p) => [p.sessions, p.files])).to.deep.equal([
      [
        ['a', 'b'],
        ['app.txt', 'later.txt'],
      ],
    ]);
  });

  it('says which review could not be read, keeping its pairs unannounced', async function () {
    const a = worktree('a');
    commit(a, 'app.txt', 'a\n');
    sessions = [];
    reviews = [{ ...reviewOf(a, 'bd-2'), commit: '0'.repeat(40) }];
    const read = await overlaps.compute('r');
    expect(read?.items).to.deep.equal([]);
    expect(read?.reviews_checked).to.equal(0);
    expect(read?.problems?.map((p) => [p.bead, p.session])).to.deep.equal([['bd-2', 'a']]);
  });

  it('answers undefined for a rig that is not there', async function () {
    expect(await overlaps.compute('nope')).to.equal(undefined);
  });
});
