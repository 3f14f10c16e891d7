import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { EventLog } from '../../shared/events/event-log.js';
import { LogTail } from '../../shared/events/log-tail.js';
import type { EventRecord } from '../../shared/events/record.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitUntil } from '../helpers/wait.js';

describe('LogTail', function () {
  let dir: string;
  let log: EventLog;
  let tail: LogTail;

  beforeEach(function () {
    dir = tempDir('ctl-tail-');
    log = EventLog.at(join(dir, 'events.jsonl'), join(dir, 'events.lock'));
    tail = new LogTail(log, 50);
  });
  afterEach(async function () {
    await tail.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const append = (n: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => log.appendCustom({ type: 't', actor: 'a', payload: { i } })));

  it('follows only while someone listens, each time from the end of the log', async function () {
    await append(3);
    expect(tail.head).to.equal(0);
    const seen: EventRecord[] = [];
    const stop = tail.subscribe((records) => seen.push(...records));
    expect(tail.head).to.equal(3);
    await append(2);
    await waitUntil('the two new records', () => seen.length === 2);
    expect(seen.map((r) => r.seq)).to.deep.equal([4, 5]);

    stop();
    expect(tail.head).to.equal(0);
    await append(2);

    // Another writer's appends (no poke from this process) arrive through the file watch or the poll.
    const again: EventRecord[] = [];
    tail.subscribe((records) => again.push(...records));
    expect(tail.head).to.equal(7);
    const other = EventLog.at(log.path, join(dir, 'events.lock'));
    await other.appendCustom({ type: 'u', actor: 'b', payload: {} });
    await waitUntil('the other writer’s record', () => again.length === 1);
    expect(again[0]).to.include({ seq: 8, type: 'u' });
    expect(seen).to.have.length(2);
  });

  it('waitFor answers at once for a seq already written, and waits for one to come', async function () {
    await append(4);
    expect(await tail.waitFor(4, 1000)).to.equal(true);
    const waiting = tail.waitFor(6, 5000);
    await append(2);
    expect(await waiting).to.equal(true);
    expect(await tail.waitFor(100, 100)).to.equal(false);
    // Nothing is left listening after the waits.
    expect(tail.head).to.equal(0);
  });

  it('keeps a line written in two parts until its newline arrives', async function () {
    const seen: EventRecord[] = [];
    tail.subscribe((records) => seen.push(...records));
    const ts = new Date().toISOString();
    const whole = JSON.stringify({ seq: 1, type: 'whole', ts, actor: 'x', payload: {} });
    const line = JSON.stringify({ seq: 2, type: 'half', ts, actor: 'x', payload: {} });
    // A whole record and the first part of the next in one write: the read that delivers the whole record
    // has read the part too.
    appendFileSync(log.path, whole + '\n' + line.slice(0, 20));
    tail.poke();
    await waitUntil('the whole record', () => seen.length > 0);
    expect(seen.map((r) => r.type)).to.deep.equal(['whole']);
    appendFileSync(log.path, line.slice(20) + '\n');
    await waitUntil('the completed line', () => seen.length === 2);
    expect(seen[1]).to.include({ seq: 2, type: 'half' });
  });
});
