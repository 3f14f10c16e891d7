import { expect } from 'chai';
import { newSideLines, splitDiff } from '../../controller/reviews/review-diff.js';
import { changesMessage } from '../../controller/reviews/review-service.js';
import type { ReviewRecord } from '../../controller/reviews/review-store.js';

const TWO_FILES = [
  'diff --git a/src/a.ts b/src/a.ts',
  'index 1111111..2222222 100644',
  '--- a/src/a.ts',
  '+++ b/src/a.ts',
  '@@ -1,3 +1,4 @@',
  ' one',
  '-two',
  '+deux',
  '+zwei',
  ' three',
  '@@ -10,2 +11,2 @@ function f() {',
  ' ten',
  '-eleven',
  '+onze',
  'diff --git a/gone.txt b/gone.txt',
  'deleted file mode 100644',
  'index 3333333..0000000',
  '--- a/gone.txt',
  '+++ /dev/null',
  '@@ -1 +0,0 @@',
  '-bye',
  'diff --git a/logo.png b/logo.png',
  'new file mode 100644',
  'index 0000000..4444444',
  'Binary files /dev/null and b/logo.png differ',
  '',
].join('\n');

describe('review diffs', () => {
  it('splits a unified diff per file, named by the new path (the old one for a deleted file)', () => {
    const { files, truncated } = splitDiff(TWO_FILES);
    expect(files.map((f) => f.path)).to.deep.equal(['src/a.ts', 'gone.txt', 'logo.png']);
    expect(files.every((f) => !f.truncated)).to.equal(true);
    expect(truncated).to.equal(false);
    expect(files.map((f) => f.diff).join('')).to.equal(TWO_FILES);
  });

  it('cuts a file at its bound on a line end, and leaves out files past the whole bound', () => {
    const big = `diff --git a/big b/big\n--- a/big\n+++ b/big\n@@ -0,0 +1,200 @@\n${'+line\n'.repeat(200)}`;
    const cut = splitDiff(big + TWO_FILES, 300, 10_000);
    expect(cut.files[0].path).to.equal('big');
    expect(cut.files[0].truncated).to.equal(true);
    expect(cut.files[0].diff.length).to.be.at.most(300);
    expect(cut.files[0].diff.endsWith('\n')).to.equal(true);
    expect(cut.files).to.have.length(4);
    const whole = splitDiff(big + TWO_FILES, 300, 400);
    expect(whole.truncated).to.equal(true);
    expect(whole.files.map((f) => f.path)).to.deep.equal(['big']);
  });

  it("knows the new side's lines a file's diff shows: added and context, not removed", () => {
    const a = splitDiff(TWO_FILES).files[0].diff;
    expect([...newSideLines(a)].sort((x, y) => x - y)).to.deep.equal([1, 2, 3, 4, 11, 12]);
    const gone = splitDiff(TWO_FILES).files[1].diff;
    expect(newSideLines(gone).size).to.equal(0);
  });

  it('tells the agent the request and every comment with its file:line', () => {
    const review = {
      bead: 'alp-7',
      branch: 'ctl/worker/worker-1',
      round: 1,
      comments: [
        { id: 1, text: 'use a constant', author: 'ann', at: '', path: 'src/a.ts', line: 3 },
        { id: 2, text: 'whole file is odd', author: 'bob', at: '', path: 'src/b.ts' },
        { id: 3, text: 'nice overall', author: 'ann', at: '' },
      ],
    } as unknown as ReviewRecord;
    const text = changesMessage(review, 'tidy it up', 'ann');
    expect(text).to.contain('Changes were requested on bead alp-7 by ann');
    expect(text).to.contain('tidy it up');
    expect(text).to.contain('- src/a.ts:3: use a constant (ann)');
    expect(text).to.contain('- src/b.ts: whole file is odd (bob)');
    expect(text).to.contain('- nice overall (ann)');
    expect(text).to.contain('ctl bead close alp-7');
  });
});
