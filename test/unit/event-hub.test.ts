import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { EventLog } from '../../shared/events/event-log.js';
import type { EventRecord } from '../../shared/events/record.js';
import { EventHub, type HubSubscriber } from '../../supervisor/event-hub.js';
import type { EventView } from '../../supervisor/event-view.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

// The supervisor stream's fan-out (issue 30, point 9): one write per record and stream, with hundreds of streams
// on a busy log, took the supervisor's whole event loop. The hub paces long fan-outs, so records read meanwhile
// go out together, in order and none lost, while a hub with few subscribers hands each read on at once.

/** Blocks the event loop for `ms`: what writing a record to hundreds of streams costs. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning, as a fan-out to many sockets would
  }
}

describe('the supervisor’s event hub', function () {
  let dir: string;
  let log: EventLog;
  let hub: EventHub;

  beforeEach(function () {
    dir = tempDir('ctl-hub-');
    log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    const view = { sources: () => [{ scope: 'busy', log }] } as unknown as EventView;
    hub = new EventHub(view);
  });
  afterEach(async function () {
    await hub.close();
    log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const APPENDS = 40;

  /** Appends APPENDS records one after another, a millisecond apart (so the hub's tail reads each by itself). */
  async function appendOneByOne(): Promise<void> {
    for (let i = 0; i < APPENDS; i++) {
      await log.appendCustom({ type: 't', actor: 'a', payload: { i } });
      await sleep(1);
    }
  }

  function subscriber(costMs: number): { calls: number; seqs: number[] } & HubSubscriber {
    const seen = {
      calls: 0,
      seqs: [] as number[],
      records(_scope: string, records: EventRecord[]) {
        seen.calls++;
        seen.seqs.push(...records.map((r) => r.seq));
        if (costMs) busyFor(costMs);
      },
      sourceAdded() {},
    };
    return seen;
  }

  it('hands each read on at once while fan-outs are quick', async function () {
    const quick = subscriber(0);
    hub.subscribe(quick);
    await appendOneByOne();
    await waitUntil('every record', () => quick.seqs.length === APPENDS);
    expect(quick.seqs).to.deep.equal(Array.from({ length: APPENDS }, (_, i) => i + 1));
    // Nothing held back to make batches: every append was its own read, handed on by itself.
    expect(quick.calls).to.equal(APPENDS);
  });

  it('after a long fan-out, holds what is read meanwhile and hands it on together, in order, none lost', async function () {
    const slow = subscriber(4);
    hub.subscribe(slow);
    await appendOneByOne();
    await waitUntil('every record', () => slow.seqs.length === APPENDS);
    expect(slow.seqs).to.deep.equal(Array.from({ length: APPENDS }, (_, i) => i + 1));
    // Each fan-out of 4 ms is followed by 12 ms in which the next appends are only gathered; unpaced, every
    // append was a fan-out of its own (APPENDS calls).
    expect(slow.calls, `${slow.calls} fan-outs for ${APPENDS} appends`).to.be.at.most(APPENDS / 2);
  });
});
