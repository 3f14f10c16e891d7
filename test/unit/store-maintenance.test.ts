import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { StoreMaintenance } from '../../controller/beads/store-maintenance.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';

describe('store maintenance (unit)', function () {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctl-maint-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs one at a time: a second start while one runs is a 409; the journal store folds its journal', async function () {
    const store = JournalBeadStore.open(dir, 'mt');
    const log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    for (let i = 0; i < 50; i++) store.delete(store.create({ title: `t${i}` }).id);
    const maintenance = new StoreMaintenance({ store, backend: store.backend, log, statePath: join(dir, 'm.json') });
    const first = maintenance.start('manual');
    expect(maintenance.status().in_flight).to.equal(true);
    expect(() => maintenance.start('manual')).to.throw(Problem, /operation_in_progress/);
    const run = await first.done;
    expect(run).to.include({ outcome: 'succeeded' });
    expect(run.operations).to.deep.equal(['expire_idempotency_keys', 'compact_journal']);
    expect(store.journalSize()).to.equal(0);
    expect(maintenance.status().in_flight).to.equal(false);
    expect(
      new StoreMaintenance({ store, backend: store.backend, log, statePath: join(dir, 'm.json') }).status().history,
    ).to.have.length(1);
    store.close();
    log.close();
  });
});
