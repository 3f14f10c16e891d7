import { expect } from 'chai';
import { drawnLines, parseFileDiff, sideBySide } from '../../ui/src/diff-rows.js';
import { escapeHtml, splitHtmlLines } from '../../ui/src/html-lines.js';
import { allowedDecisions, overlapsConcerning, rigOfAgent, statTotals } from '../../ui/src/review-rows.js';

// What the review page makes of a file's unified diff (ui/src/diff-rows.ts), its colours cut into lines
// (ui/src/html-lines.ts; highlight.js itself is run by the browser test) and
// of reviews and overlaps (ui/src/review-rows.ts). The page itself is test/dashboard-browser-reviews.test.ts.

const DIFF = `diff --git a/src/app.ts b/src/app.ts
index 1111111..2222222 100644
--- a/src/app.ts
+++ b/src/app.ts
@@ -1,5 +1,6 @@
 const a = 1;
-const b = 2;
-const c = 3;
+const b = 20;
+const c = 30;
+const d = 40;
 const e = 5;
-const f = 6;
 // end
@@ -20,2 +21,2 @@ function later() {
-  return 1;
+  return 2;
 }
\\ No newline at end of file
`;

describe('dashboard: a review’s diff', () => {
  it('numbers each line of each hunk on its old and new side', () => {
    const parsed = parseFileDiff(DIFF);
    expect(parsed.notes).to.deep.equal([]);
    expect(parsed.hunks.map((h) => h.header)).to.deep.equal([
      '@@ -1,5 +1,6 @@',
      '@@ -20,2 +21,2 @@ function later() {',
    ]);
    expect(parsed.hunks[0].lines).to.deep.equal([
      { kind: 'context', old: 1, new: 1, text: 'const a = 1;' },
      { kind: 'del', old: 2, text: 'const b = 2;' },
      { kind: 'del', old: 3, text: 'const c = 3;' },
      { kind: 'add', new: 2, text: 'const b = 20;' },
      { kind: 'add', new: 3, text: 'const c = 30;' },
      { kind: 'add', new: 4, text: 'const d = 40;' },
      { kind: 'context', old: 4, new: 5, text: 'const e = 5;' },
      { kind: 'del', old: 5, text: 'const f = 6;' },
      { kind: 'context', old: 6, new: 6, text: '// end' },
    ]);
    expect(parsed.hunks[1].lines.at(-1)).to.deep.equal({
      kind: 'context',
      old: 21,
      new: 22,
      text: '}',
      noNewline: true,
    });
    expect(drawnLines(parsed)).to.equal(2 + 9 + 3);
  });

  it('pairs removed and added lines side by side, the longer side’s rest beside nothing', () => {
    const rows = sideBySide(parseFileDiff(DIFF).hunks[0].lines);
    const numbers = rows.map((r) => [r.left?.old, r.right?.new]);
    expect(numbers).to.deep.equal([
      [1, 1],
      [2, 2],
      [3, 3],
      [undefined, 4],
      [4, 5],
      [5, undefined],
      [6, 6],
    ]);
    expect(rows[1].left!.text).to.equal('const b = 2;');
    expect(rows[1].right!.text).to.equal('const b = 20;');
    // An addition then a removal are two changes, not one pair.
    const apart = sideBySide([
      { kind: 'add', new: 1, text: 'x' },
      { kind: 'del', old: 1, text: 'y' },
    ]);
    expect(apart.map((r) => [r.left?.text, r.right?.text])).to.deep.equal([
      [undefined, 'x'],
      ['y', undefined],
    ]);
  });

  it('says what git says of a file without hunks: new, deleted, renamed, binary', () => {
    expect(
      parseFileDiff(
        'diff --git a/x.png b/x.png\nnew file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and b/x.png differ\n',
      ),
    ).to.deep.equal({ notes: ['new file', 'binary: its contents are not shown'], hunks: [] });
    expect(
      parseFileDiff('diff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n').notes,
    ).to.deep.equal(['renamed from a']);
    expect(parseFileDiff('diff --git a/a b/a\ndeleted file mode 100644\n').notes).to.deep.equal(['deleted']);
  });

  it('splits coloured markup back into lines, each one’s spans balanced', () => {
    expect(splitHtmlLines('<span class="a">x\ny</span>z\n<span class="b">w</span>')).to.deep.equal([
      '<span class="a">x</span>',
      '<span class="a">y</span>z',
      '<span class="b">w</span>',
    ]);
    // A span inside a span across two lines: both closed, both opened again.
    expect(splitHtmlLines('<span class="c">/* <span class="d">a\nb</span> */</span>')).to.deep.equal([
      '<span class="c">/* <span class="d">a</span></span>',
      '<span class="c"><span class="d">b</span> */</span>',
    ]);
    expect(splitHtmlLines('plain')).to.deep.equal(['plain']);
    expect(escapeHtml(`a < b && "c" > 'd'`)).to.equal('a &lt; b &amp;&amp; &quot;c&quot; &gt; &#x27;d&#x27;');
  });
});

describe('dashboard: reviews and overlaps', () => {
  it('offers only the decisions the API takes in each state', () => {
    expect(allowedDecisions('pending')).to.deep.equal({ approve: true, requestChanges: true, abandon: true });
    expect(allowedDecisions('conflicted')).to.deep.equal({ approve: false, requestChanges: true, abandon: true });
    expect(allowedDecisions('changes_requested')).to.deep.equal({
      approve: false,
      requestChanges: false,
      abandon: true,
    });
    expect(allowedDecisions('approved')).to.deep.equal({ approve: false, requestChanges: false, abandon: true });
    expect(allowedDecisions('merged')).to.deep.equal({ approve: false, requestChanges: false, abandon: false });
    expect(allowedDecisions('abandoned')).to.deep.equal({ approve: false, requestChanges: false, abandon: false });
  });

  it('sums a diff stat and finds an agent’s rig', () => {
    expect(
      statTotals([
        { insertions: 3, deletions: 1 },
        { insertions: 0, deletions: 4 },
      ]),
    ).to.deep.equal({ files: 2, insertions: 3, deletions: 5 });
    expect(rigOfAgent('web/coder')).to.equal('web');
    expect(rigOfAgent('mayor')).to.equal(undefined);
  });

  it('keeps the overlaps concerning a session or a review, one entry per other side, never itself', () => {
    const s = (id: string) => ({ kind: 'session' as const, session: `n-${id}`, session_id: id });
    const r = (bead: string, id: string) => ({ kind: 'review' as const, bead, session: `n-${id}`, session_id: id });
    type Party = ReturnType<typeof s> | ReturnType<typeof r>;
    const pair = (a: Party, b: Party, files: string[]) => ({
      parties: [a, b],
      sessions: [a.session, b.session],
      session_ids: [a.session_id, b.session_id],
      files,
    });
    const items = [
      pair(s('a'), s('b'), ['x.ts']),
      pair(s('c'), s('a'), ['y.ts']),
      pair(r('web-1', 'a'), s('b'), ['z.ts', 'x.ts']),
      pair(s('a'), r('web-1', 'a'), ['x.ts']),
      pair(s('b'), s('c'), ['w.ts']),
    ];
    // A session: its sides are its worktree and the reviews of its finished work.
    expect(overlapsConcerning(items, { session_id: 'a' })).to.deep.equal([
      { party: s('b'), files: ['x.ts', 'z.ts'] },
      { party: s('c'), files: ['y.ts'] },
    ]);
    // A review: its own bead's side and its session's worktree are itself.
    expect(overlapsConcerning(items, { bead: 'web-1', session_id: 'a' })).to.deep.equal([
      { party: s('b'), files: ['x.ts', 'z.ts'] },
      { party: s('c'), files: ['y.ts'] },
    ]);
    expect(overlapsConcerning(items, { session_id: 'd' })).to.deep.equal([]);
  });
});
