import { readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { bodyHash, DeliveryLedger } from '../../controller/webhooks/dedupe.js';
import { tempDir } from '../helpers/temp-dir.js';

describe('webhook delivery dedupe (unit)', () => {
  const root = tempDir('ctl-dedupe-');
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const fresh = () => join(root, `ledger-${++n}.jsonl`);

  it('a delivery claimed and settled is seen by any of its keys, for its webhook only, across a restart', () => {
    const file = fresh();
    let now = 1_000;
    const ledger = new DeliveryLedger(file, { now: () => now });
    expect(ledger.seen('gh', ['id:d-1', 'sha256:aa'])).to.equal(undefined);
    ledger.claim('gh', ['id:d-1', 'sha256:aa']).settle('alp-7');
    expect(ledger.seen('gh', ['id:d-1'])).to.deep.equal({ at: 1_000, tracking: 'alp-7' });
    expect(ledger.seen('gh', ['id:fresh', 'sha256:aa'])?.tracking, 'the same body under a new id').to.equal('alp-7');
    expect(ledger.seen('other', ['id:d-1'])).to.equal(undefined);
    now = 2_000;
    const again = new DeliveryLedger(file, { now: () => now });
    expect(again.seen('gh', ['id:d-1'])).to.deep.equal({ at: 1_000, tracking: 'alp-7' });
  });

  it('a released claim (its order did not fire) is forgotten, also after a restart', () => {
    const file = fresh();
    const ledger = new DeliveryLedger(file);
    ledger.claim('gh', ['id:d-2']).release();
    expect(ledger.seen('gh', ['id:d-2'])).to.equal(undefined);
    expect(new DeliveryLedger(file).seen('gh', ['id:d-2'])).to.equal(undefined);
  });

  it('a claim a controller that died never settled is forgotten at the next start (its order never fired)', () => {
    const file = fresh();
    const ledger = new DeliveryLedger(file);
    ledger.claim('gh', ['id:cut', 'sha256:cc']);
    ledger.claim('gh', ['id:done']).settle('alp-9');
    expect(ledger.seen('gh', ['id:cut']), 'in flight: still a duplicate').to.not.equal(undefined);
    const next = new DeliveryLedger(file);
    expect(next.seen('gh', ['id:cut'])).to.equal(undefined);
    expect(next.seen('gh', ['sha256:cc'])).to.equal(undefined);
    expect(next.seen('gh', ['id:done'])?.tracking).to.equal('alp-9');
  });

  it('forgets deliveries past the window, and past the count the oldest of the webhook that overflowed it', () => {
    const file = fresh();
    let now = 0;
    const ledger = new DeliveryLedger(file, { now: () => now, windowMs: 1_000, max: 3 });
    ledger.claim('quiet', ['id:q']).settle('b-1');
    for (const id of ['a', 'b', 'c']) {
      now += 1;
      ledger.claim('loud', [`id:${id}`]).settle('b-2');
    }
    expect(ledger.seen('quiet', ['id:q']), 'a flood on one webhook does not evict another’s').to.not.equal(undefined);
    expect(ledger.seen('loud', ['id:a'])).to.equal(undefined);
    expect(ledger.seen('loud', ['id:c'])).to.not.equal(undefined);
    now = 1_000;
    expect(ledger.seen('quiet', ['id:q'])).to.equal(undefined);
    expect(new DeliveryLedger(file, { now: () => now, windowMs: 1_000 }).seen('quiet', ['id:q'])).to.equal(undefined);
  });

  it('a line cut short by a crash is skipped; the file is compacted once mostly stale', () => {
    const file = fresh();
    writeFileSync(file, `${JSON.stringify({ k: ['gh', 'id:ok'], at: Date.now(), t: 'x-1' })}\n{"k":["gh","id:cu`);
    expect(new DeliveryLedger(file).seen('gh', ['id:ok'])?.tracking).to.equal('x-1');
    for (let i = 0; i < 1_500; i++) appendFileSync(file, `${JSON.stringify({ drop: ['gh', `id:${i}`] })}\n`);
    new DeliveryLedger(file);
    expect(readFileSync(file, 'utf8').trim().split('\n')).to.have.length(1);
  });

  it('a body’s hash is sha256 of its bytes', () => {
    expect(bodyHash(Buffer.from('abc'))).to.equal(
      'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });
});
