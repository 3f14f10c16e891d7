import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import type { RigOverlapPayload } from '../../shared/dto/overlaps.js';
import {
  newPairs,
  overlapPairs,
  pageOfPairs,
  pairKey,
  RigOverlaps,
  type OverlapSession,
} from '../../controller/worktrees/overlaps.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();
}

describe('overlap pairs', function () {
  it('pairs sessions that changed a same file, with the shared files sorted', function () {
    const pairs = overlapPairs([
      { id: 's1', name: 'a', files: ['src/z.ts', 'src/x.ts', 'README'] },
      { id: 's2', name: 'b', files: ['docs/y.md'] },
      { id: 's3', name: 'c', files: ['src/x.ts', 'src/z.ts'] },
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
    const all = overlapPairs([
      { id: 's1', name: 'a', files: ['f'] },
      { id: 's2', name: 'b', files: ['f'] },
      { id: 's3', name: 'c', files: ['f', 'g'] },
    ]);
    expect(all.map((p) => p.sessions)).to.deep.equal([
      ['a', 'b'],
      ['a', 'c'],
      ['b', 'c'],
    ]);
    expect(
      overlapPairs([
        { id: 's1', name: 'a', files: ['f'] },
        { id: 's2', name: 'b', files: ['g'] },
        { id: 's3', name: 'c', files: [] },
      ]),
    ).to.deep.equal([]);
  });

  it('takes a pair the same whichever order its sessions come in', function () {
    expect(pairKey({ session_ids: ['s2', 's1'] })).to.equal(pairKey({ session_ids: ['s1', 's2'] }));
    const now = overlapPairs([
      { id: 's2', name: 'b', files: ['f'] },
      { id: 's1', name: 'a', files: ['f'] },
      { id: 's3', name: 'c', files: ['f'] },
    ]);
    const before = new Set([pairKey({ session_ids: ['s1', 's2'] })]);
    expect(newPairs(before, now).map((p) => p.session_ids)).to.deep.equal([
      ['s2', 's3'],
      ['s1', 's3'],
    ]);
  });
});

describe('pages of overlap pairs', function () {
  const pairs = overlapPairs(['d', 'b', 'c', 'a'].map((name) => ({ id: `id-${name}`, name, files: ['f'] })));

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
    events = [];
    overlaps = new RigOverlaps({
      sessionsOf: (rig) => (rig === 'r' ? sessions : undefined),
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
      sessions: ['a', 'b'],
      session_ids: ['id-a', 'id-b'],
      files: ['app.txt'],
    });
    commit(a, 'only-b.txt', 'a too\n');
    const second = await overlaps.compute('r');
    expect(second?.items[0]?.files).to.deep.equal(['app.txt', 'only-b.txt']);
    expect(events, 'no second event while the pair lasts').to.have.length(1);
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

  it('answers undefined for a rig that is not there', async function () {
    expect(await overlaps.compute('nope')).to.equal(undefined);
  });
});
