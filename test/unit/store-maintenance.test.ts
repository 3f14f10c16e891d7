import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { StoreMaintenance } from '../../controller/beads/store-maintenance.js';
import { JournalBeadStore } from '../../controller/beads/journal-store.js';
import { EventLog } from '../../shared/events/event-log.js';
import { Problem } from '../../shared/http/problem.js';
import { waitUntil } from '../helpers/wait.js';

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

  it('runs on its interval, again an interval after each run, even when a run by hand holds the store; stops when unset', async function () {
    const store = JournalBeadStore.open(dir, 'mt');
    const log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    const maintenance = new StoreMaintenance({ store, backend: store.backend, log, statePath: join(dir, 'm.json') });
    expect(maintenance.status()).to.include({ enabled: false, interval_seconds: 0 });
    expect(maintenance.status()).to.not.have.property('next_scheduled');
    // The configuration's floor is a minute; the class takes any interval, so the test need not wait one.
    maintenance.schedule(30);
    expect(maintenance.status().enabled).to.equal(true);
    expect(maintenance.status().next_scheduled).to.be.a('string');
    // A run by hand holding the store when the timer fires: the scheduled one gives way, and the schedule goes on.
    const manual = maintenance.start('manual');
    const scheduled = () => maintenance.status().history.filter((r) => r.trigger === 'scheduled');
    await manual.done;
    await waitUntil('two scheduled runs', () => scheduled().length >= 2);
    expect(scheduled().every((r) => r.outcome === 'succeeded')).to.equal(true);
    const types = log.after(0).map((e) => e.type);
    expect(types.filter((t) => t === 'ctl.store.maintenance.done').length).to.be.at.least(3);
    maintenance.schedule(undefined);
    expect(maintenance.status()).to.include({ enabled: false });
    expect(maintenance.status()).to.not.have.property('next_scheduled');
    const count = maintenance.status().history.length;
    await maintenance.start('manual').done;
    expect(maintenance.status().history).to.have.length(count + 1);
    store.close();
    log.close();
  });
});
