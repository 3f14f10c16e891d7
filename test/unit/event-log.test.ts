import { appendFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { execa } from 'execa';
import { EventLog } from '../../shared/events/event-log.js';
import { parseEventLine } from '../../shared/events/record.js';
import { tempDir } from '../helpers/temp-dir.js';

describe('EventLog', function () {
  let dir: string;
  let n = 0;
  const fresh = () => {
    n++;
    return EventLog.at(join(dir, `events-${n}.jsonl`), join(dir, `events-${n}.lock`));
  };

  before(function () {
    dir = tempDir('ctl-log-');
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('assigns seqs from 1, gap-free, and reads them back newest first and after a seq', async function () {
    const log = fresh();
    expect(log.head()).to.equal(0);
    const records = await Promise.all(
      Array.from({ length: 25 }, (_, i) => log.appendCustom({ type: 't', actor: 'a', payload: { i } })),
    );
    expect(records.map((r) => r.seq)).to.deep.equal(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(log.head()).to.equal(25);
    const page = log.newest({ limit: 10 });
    expect(page.records.map((r) => r.seq)).to.deep.equal([25, 24, 23, 22, 21, 20, 19, 18, 17, 16]);
    expect(page.more).to.equal(true);
    const next = log.newest({ limit: 10, beforeSeq: 16 });
    expect(next.records[0].seq).to.equal(15);
    expect(log.newest({ limit: 10, beforeSeq: 6 })).to.deep.include({ more: false });
    expect(log.after(20).map((r) => r.seq)).to.deep.equal([21, 22, 23, 24, 25]);
    expect(log.after(0, 3).map((r) => r.seq)).to.deep.equal([1, 2, 3]);
    // payload is stored, `{}` when empty
    expect(records[3].payload).to.deep.equal({ i: 3 });
  });

  it('rotates only what is new (a log holding only the last anchor is not archived again), keeping at most keepArchives archives', async function () {
    const log = fresh();
    const archives = () => readdirSync(dir).filter((f) => f.startsWith(`events-${n}.jsonl.`) && !f.endsWith('.lock'));
    await log.appendCustom({ type: 't', actor: 'a', payload: {} });
    const first = await log.rotate({ keepArchives: 2 });
    expect(first.rotated).to.equal(true);
    await first.compressed;
    // Only the anchor since: nothing new, no archive, and it says so.
    const again = await log.rotate({ keepArchives: 2 });
    expect(again).to.deep.include({ rotated: false, reason: 'nothing new since the last rotation' });
    expect(archives()).to.have.length(1);
    const made: string[] = [first.archive!.path];
    for (let i = 0; i < 3; i++) {
      await log.appendCustom({ type: 't', actor: 'a', payload: { i } });
      const rotated = await log.rotate({ keepArchives: 2 });
      await rotated.compressed;
      made.push(rotated.archive!.path);
      expect(archives().length, `after rotation ${i + 2}`).to.be.at.most(2);
      if (made.length > 2) expect(rotated.removed).to.deep.equal([made[made.length - 3]]);
    }
    // The newest two stay; the oldest went first, and each removal was reported.
    expect(archives().sort()).to.deep.equal(
      made
        .slice(-2)
        .map((p) => p.split('/').pop())
        .sort(),
    );
    // Numbering continues and every event still in an archive or the active file reads back.
    expect(log.after(0).map((r) => r.type)).to.include('t');
    expect(log.head()).to.equal(8);
  });

  it('writes a newline first after a torn last line, and skips torn and garbage lines', async function () {
    const log = fresh();
    await log.appendCustom({ type: 't', actor: 'a' });
    await log.appendCustom({ type: 't', actor: 'a' });
    appendFileSync(log.path, 'not json at all\n{"seq":99,"type":"t","ts":"2026'); // a crash mid-write
    const third = await log.appendCustom({ type: 't', actor: 'a' });
    expect(third.seq).to.equal(3);
    const lines = readFileSync(log.path, 'utf8').split('\n');
    expect(lines.filter((l) => parseEventLine(l) !== undefined).map((l) => parseEventLine(l)!.seq)).to.deep.equal([
      1, 2, 3,
    ]);
    expect(log.newest({ limit: 10 }).records.map((r) => r.seq)).to.deep.equal([3, 2, 1]);
    expect(log.after(1).map((r) => r.seq)).to.deep.equal([2, 3]);
  });

  it('finds the head behind a long garbage tail', async function () {
    const log = fresh();
    writeFileSync(log.path, `{"seq":42,"type":"t","ts":"2026-01-01T00:00:00Z","actor":"a"}\n${'x'.repeat(300_000)}\n`);
    expect(log.head()).to.equal(42);
    expect((await log.appendCustom({ type: 't', actor: 'a' })).seq).to.equal(43);
  });

  it('pages a large log by binary search: every seq exactly once, in order', async function () {
    this.timeout(60_000);
    const log = fresh();
    const total = 50_000;
    const lines: string[] = [];
    for (let seq = 1; seq <= total; seq++) {
      lines.push(
        JSON.stringify({
          seq,
          type: seq % 3 ? 'a' : 'b',
          ts: new Date(seq * 1000).toISOString(),
          actor: 'x',
          payload: { pad: 'y'.repeat(seq % 200) },
        }),
      );
    }
    writeFileSync(log.path, lines.join('\n') + '\n');
    expect(log.head()).to.equal(total);
    const seen: number[] = [];
    let before: number | undefined;
    for (;;) {
      const page = log.newest({ limit: 1000, beforeSeq: before });
      seen.push(...page.records.map((r) => r.seq));
      if (!page.more) break;
      before = page.records.at(-1)!.seq;
    }
    expect(seen).to.have.length(total);
    expect(seen[0]).to.equal(total);
    expect(seen.every((seq, i) => seq === total - i)).to.equal(true);
    for (const probe of [0, 1, 2, 999, 25_000, 49_999, 50_000]) {
      const after = log.after(probe, 2).map((r) => r.seq);
      expect(after).to.deep.equal([probe + 1, probe + 2].filter((s) => s <= total));
    }
    const filtered = log.newest({ limit: 5, filter: (r) => r.type === 'b' }).records.map((r) => r.seq);
    expect(filtered).to.deep.equal([49_998, 49_995, 49_992, 49_989, 49_986]);
  });

  it('keeps seqs unique and gap-free with 4 processes appending 10,000 events', async function () {
    this.timeout(120_000);
    const log = fresh();
    const script = new URL('../fixtures/append-events.mjs', import.meta.url).pathname;
    const writers = ['w1', 'w2', 'w3', 'w4'].map((actor) =>
      execa(process.execPath, [script, log.path, join(dir, `events-${n}.lock`), '2500', actor]),
    );
    await Promise.all(writers);
    const records = readFileSync(log.path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => parseEventLine(line));
    expect(records.every((r) => r !== undefined)).to.equal(true);
    const seqs = records.map((r) => r!.seq);
    expect(seqs).to.deep.equal(Array.from({ length: 10_000 }, (_, i) => i + 1));
    for (const actor of ['w1', 'w2', 'w3', 'w4']) {
      const own = records.filter((r) => r!.actor === actor).map((r) => (r!.payload as { i: number }).i);
      expect(own).to.deep.equal(Array.from({ length: 2500 }, (_, i) => i));
    }
    expect(log.head()).to.equal(10_000);
  });
});
