import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { REPOSITORY_DRIVERS_QUERY, repositoryDriverOverrides } from '../../controller/git-safety.js';

// The filters and merge drivers a repository's own configuration defines are switched off for ctl's git; the
// user's and the system's stay (test/git-safety.test.ts shows none runs in a real merge).
describe('git safety: a repository’s own drivers', () => {
  it('blanks each filter and merge driver of the repository’s own configuration, whatever its name', () => {
    const repo = mkdtempSync(join(tmpdir(), 'ctl-git-drivers-'));
    try {
      const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });
      git('init', '-q');
      git('config', 'filter.lfs-ish.smudge', 'touch /tmp/never');
      git('config', 'filter.a b.c.clean', 'cat');
      git('config', 'merge.ours.driver', 'true');
      git('config', 'merge.ff', 'false');
      const listing = execFileSync('git', REPOSITORY_DRIVERS_QUERY, { cwd: repo, encoding: 'utf8' });
      expect(repositoryDriverOverrides(listing)).to.deep.equal([
        'filter.lfs-ish.clean=',
        'filter.lfs-ish.smudge=',
        'filter.lfs-ish.process=',
        'filter.lfs-ish.required=false',
        'filter.a b.c.clean=',
        'filter.a b.c.smudge=',
        'filter.a b.c.process=',
        'filter.a b.c.required=false',
        'merge.ours.driver=',
      ]);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('leaves the drivers of the user’s and the system’s configuration alone', () => {
    expect(
      repositoryDriverOverrides('global\tfilter.lfs.smudge git-lfs smudge -- %f\nsystem\tmerge.x.driver x\n'),
    ).to.deep.equal([]);
  });
});
