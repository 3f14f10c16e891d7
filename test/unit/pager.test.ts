import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { pagerCommand, pagerEnv } from '../../cli/_pager.js';

describe('the pager ctl pages through', function () {
  let bin: string;
  before(function () {
    bin = mkdtempSync(join(tmpdir(), 'ctl-unit-pager-'));
    writeFileSync(join(bin, 'less'), '#!/bin/sh\n');
    chmodSync(join(bin, 'less'), 0o755);
  });
  after(() => rmSync(bin, { recursive: true, force: true }));

  it('takes CTL_PAGER, then PAGER, then less when it is on PATH', function () {
    expect(pagerCommand({ CTL_PAGER: 'most', PAGER: 'more', PATH: bin })).to.equal('most');
    expect(pagerCommand({ PAGER: 'more -s', PATH: bin })).to.equal('more -s');
    expect(pagerCommand({ PATH: bin })).to.equal('less');
    expect(pagerCommand({ PATH: join(bin, 'nothing-here') }), 'no less: none').to.equal(undefined);
  });

  it('takes an empty pager or cat for none, as git does, even over a PAGER', function () {
    expect(pagerCommand({ CTL_PAGER: '', PAGER: 'more', PATH: bin })).to.equal(undefined);
    expect(pagerCommand({ CTL_PAGER: ' cat ', PATH: bin })).to.equal(undefined);
    expect(pagerCommand({ PAGER: 'cat', PATH: bin })).to.equal(undefined);
  });

  it('gives less git’s LESS=FRX and lv its LV=-c, unless the person set their own', function () {
    expect(pagerEnv({ HOME: '/h' })).to.deep.equal({ HOME: '/h', LESS: 'FRX', LV: '-c' });
    expect(pagerEnv({ LESS: '-S', LV: '' })).to.deep.include({ LESS: '-S', LV: '' });
  });
});
