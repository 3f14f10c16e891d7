import { expect } from 'chai';
import { DEFAULT_DAEMON } from '../../shared/config/city-config.js';
import { CrashTracker } from '../../controller/agents/crash-tracker.js';

const daemon = { ...DEFAULT_DAEMON, restartBackoffMs: 150, restartBackoffMaxMs: 500 };

/** How long the next start of `id` waits after `act`, within the clock's movement during it. */
function delayAfter(tracker: CrashTracker, id: string, act: () => void): [number, number] {
  const before = Date.now();
  act();
  const after = Date.now();
  const notBefore = tracker.facts().get(id)!.notBefore;
  return [notBefore - after, notBefore - before];
}

describe('crash back-off (CrashTracker)', () => {
  it('doubles the wait per fast failure in a row, up to restart_backoff_max', () => {
    const tracker = new CrashTracker();
    const waits = [150, 300, 500, 500].map((expected) => {
      const [low, high] = delayAfter(tracker, 's1', () => tracker.failed('s1', true, daemon));
      expect(expected).to.be.within(low, high);
      return tracker.facts().get('s1')!;
    });
    expect(waits.map((w) => w.count)).to.deep.equal([1, 2, 3, 4]);
    expect(waits[1].why).to.equal('after 2 failures');
  });

  it('a slow failure (past restart_window) starts the count again', () => {
    const tracker = new CrashTracker();
    tracker.failed('s1', true, daemon);
    tracker.failed('s1', true, daemon);
    expect(tracker.failed('s1', false, daemon)).to.equal(1);
  });

  it('a pause (the provider said to wait) holds the start without counting a failure', () => {
    const tracker = new CrashTracker();
    tracker.failed('s1', true, daemon);
    const [low, high] = delayAfter(tracker, 's1', () => tracker.pause('s1', 30_000, 'rate-limited'));
    expect(30_000).to.be.within(low, high);
    expect(tracker.facts().get('s1')).to.include({ count: 1, why: 'rate-limited' });
  });

  it('forgets a session (a person resumed its agent)', () => {
    const tracker = new CrashTracker();
    tracker.failed('s1', true, daemon);
    tracker.forget('s1');
    expect(tracker.facts().size).to.equal(0);
  });
});
