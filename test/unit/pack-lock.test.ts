import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { readPackLock } from '../../controller/packs/pack-cache.js';
import { ConfigError } from '../../shared/config/config-error.js';

describe('packs.lock', function () {
  let dir: string;
  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), 'ctl-pack-lock-'));
  });
  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads the reference's lock, keyed by source with no source field, as that source's entries", function () {
    const core = 'https://github.com/gastownhall/gascity.git//internal/bootstrap/packs/core';
    writeFileSync(
      join(dir, 'packs.lock'),
      `schema = 1\n\n[packs]\n[packs."${core}"]\nversion = "sha:f895c0ff"\ncommit = "f895c0ff47d6ee9334ed282a416387eb5b084d24"\n`,
    );
    expect(readPackLock(dir)).to.deep.equal({
      [core]: { source: core, version: 'sha:f895c0ff', commit: 'f895c0ff47d6ee9334ed282a416387eb5b084d24' },
    });
  });

  it('still refuses an entry of ours (keyed by binding) without a source', function () {
    writeFileSync(join(dir, 'packs.lock'), '[packs.review]\ncommit = "abc"\n');
    expect(() => readPackLock(dir)).to.throw(ConfigError, 'packs.lock: packs.review needs a source and a commit');
  });
});
