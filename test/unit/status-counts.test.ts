import { expect } from 'chai';
import { STATUS_COUNTS_MAX_AGE_MS, StatusCounts, type StoreCounts } from '../../controller/status-counts.js';

describe('the status counts projection (controller/status-counts.ts)', function () {
  function setup() {
    let counted = 0;
    let open = 0;
    let now = 1_000_000;
    const listeners: (() => void)[] = [];
    const log = { onAppend: (l: () => void) => (listeners.push(l), () => undefined) };
    const source = (): StoreCounts => {
      counted++;
      return { work: { open, in_progress: 0, ready: open }, mail: { total: 0, unread: 0 } };
    };
    const counts = new StatusCounts(source, log, () => now);
    return {
      counts,
      counted: () => counted,
      setOpen: (n: number) => (open = n),
      append: () => listeners.forEach((l) => l()),
      advance: (ms: number) => (now += ms),
    };
  }

  it('answers repeated reads from memory: the store is counted once', function () {
    const s = setup();
    for (let i = 0; i < 100; i++) s.counts.get();
    expect(s.counted()).to.equal(1);
  });

  it('an appended event makes the next read count again, and see the change', function () {
    const s = setup();
    expect(s.counts.get().work.open).to.equal(0);
    s.setOpen(3);
    s.append();
    expect(s.counts.get().work.open).to.equal(3);
    expect(s.counted()).to.equal(2);
  });

  it('counts again once they are as old as the limit (deferred beads become ready with no event)', function () {
    const s = setup();
    s.counts.get();
    s.advance(STATUS_COUNTS_MAX_AGE_MS - 1);
    s.counts.get();
    expect(s.counted()).to.equal(1);
    s.advance(1);
    s.counts.get();
    expect(s.counted()).to.equal(2);
  });
});
