import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { DEFAULT_CHECK_TIMEOUT_MS } from '../../shared/config/review-config.js';
import { headOf, nextSeq, queueOf, queuePositions, queues, type Queued } from '../../controller/reviews/queue-order.js';
import { checkFailedMessage, checkOutcome } from '../../controller/reviews/review-check.js';

const review = (bead: string, state: string, seq?: number, rig: string | null = 'web'): Queued => ({
  bead,
  state,
  repo: '/rigs/web',
  ...(rig !== null ? { rig } : {}),
  ...(seq !== undefined ? { queue_seq: seq } : {}),
});

describe('the merge queue’s order', () => {
  it('puts each rig’s approved reviews in approval order, and nothing else', () => {
    const all = [
      review('w-3', 'approved', 7),
      review('w-1', 'approved', 2),
      review('w-9', 'pending'),
      review('a-1', 'approved', 5, 'api'),
      review('w-2', 'merged', 1),
      review('w-4', 'approved', 4),
    ];
    expect(Object.fromEntries([...queues(all)].map(([k, v]) => [k, v.map((r) => r.bead)]))).to.deep.equal({
      'rig:web': ['w-1', 'w-4', 'w-3'],
      'rig:api': ['a-1'],
    });
    expect(Object.fromEntries(queuePositions(all))).to.deep.equal({ 'w-1': 1, 'w-4': 2, 'w-3': 3, 'a-1': 1 });
    expect(headOf(all, 'rig:web')).to.equal('w-1');
    expect(headOf(all, 'rig:none')).to.equal(undefined);
    expect(nextSeq(all)).to.equal(8);
    expect(nextSeq([])).to.equal(1);
  });

  it('queues a review of no rig by its repository', () => {
    expect(queueOf(review('x-1', 'approved', 1, null))).to.equal('repo:/rigs/web');
    expect(queueOf(review('x-1', 'approved', 1))).to.equal('rig:web');
  });

  it('tells the agent how the check failed and the end of its output', () => {
    const check = {
      command: 'npm test',
      passed: false,
      exit_code: 1,
      timed_out: false,
      duration_ms: 2300,
      at: '',
      commit: 'c',
    };
    expect(checkOutcome(check)).to.equal('exit 1 after 2.3s');
    expect(checkOutcome({ ...check, timed_out: true, exit_code: undefined }, 10_000)).to.equal(
      'killed at its time-out of 10s (ran 2.3s)',
    );
    const text = checkFailedMessage(
      { bead: 'w-1', branch: 'ctl/web/coder/s1', base: 'main' },
      check,
      `${'x'.repeat(9000)}END\n`,
      60_000,
    );
    expect(text).to.match(
      /^The check of bead w-1 failed before it could merge into main: `npm test` \(exit 1 after 2\.3s\)/,
    );
    expect(text).to.contain('END');
    expect(text.length).to.be.below(4500);
    expect(text.split('\n').at(-1)).to.equal(
      'Make it pass on your branch ctl/web/coder/s1 in your worktree and commit; when done: ctl bead close w-1',
    );
  });
});

describe('[review] in city.toml', () => {
  it('reads check, check_timeout and land, with a default time-out and landing by merge', () => {
    expect(parseCityConfig('', 'city.toml').review).to.deep.equal({
      checkTimeoutMs: DEFAULT_CHECK_TIMEOUT_MS,
      land: 'merge',
    });
    expect(parseCityConfig('[review]\ncheck = "npm test"\ncheck_timeout = "90s"\n', 'city.toml').review).to.deep.equal({
      check: 'npm test',
      checkTimeoutMs: 90_000,
      land: 'merge',
    });
  });

  it('refuses a check or a time-out that is not one', () => {
    const bad = (text: string) => () => parseCityConfig(text, 'city.toml');
    expect(bad('[review]\ncheck = ""\n')).to.throw('city.toml: review.check must be a shell command');
    expect(bad('[review]\ncheck = 3\n')).to.throw('review.check must be a shell command');
    expect(bad('[review]\ncheck_timeout = "soon"\n')).to.throw('review.check_timeout must be a duration');
    expect(bad('[review]\ncheck_timeout = 30\n')).to.throw('review.check_timeout must be a duration');
    expect(bad('[review]\ncheck_timeout = "48h"\n')).to.throw('between 100ms and 24h');
    expect(bad('review = 1\n')).to.throw('review must be a table');
  });
});
