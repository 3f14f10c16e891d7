import { expect } from 'chai';
import type { ReviewSummary } from '../../shared/dto/reviews.js';
import type { CityView } from '../../cli/top/model.js';
import { ageText, reviewCells, reviewRows, reviewsSummary, waitingSince } from '../../cli/top/reviews.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');

function review(bead: string, requestedMinutesAgo: number, more: Partial<ReviewSummary> = {}): ReviewSummary {
  const at = new Date(NOW - requestedMinutesAgo * 60_000).toISOString();
  return {
    bead,
    state: 'pending',
    agent: 'web/coder',
    session: 's1',
    branch: `ctl/web/coder/${bead}`,
    base: 'main',
    commit: 'c',
    base_commit: 'b',
    commits: [{ sha: 'c', subject: 'x' }],
    files: [{ path: 'a', insertions: 1, deletions: 0 }],
    round: 1,
    created_at: at,
    requested_at: at,
    updated_at: at,
    ...more,
  };
}

function city(name: string, reviews: ReviewSummary[], pending = reviews.length): CityView {
  return {
    info: { name, running: true } as CityView['info'],
    agents: [],
    sessions: [],
    reviews,
    reviewsPending: pending,
  };
}

describe('ctl top’s pending reviews', function () {
  it('says a wait in a few characters', function () {
    expect([0, 40_000, 12 * 60_000, 3 * 3600_000, 3 * 3600_000 + 5 * 60_000, 50 * 3600_000].map(ageText)).to.deep.equal(
      ['0s', '40s', '12m', '3h', '3h5m', '2d2h'],
    );
    expect(ageText(-5000), 'a clock a little ahead is no negative wait').to.equal('0s');
  });

  it('waits from the round’s request, a review kept from before it: from its first', function () {
    const sentBack = review('a-1', 5, { created_at: new Date(NOW - 3 * 3600_000).toISOString(), round: 2 });
    expect(waitingSince(sentBack)).to.equal(sentBack.requested_at);
    const older: ReviewSummary = { ...sentBack };
    delete older.requested_at;
    expect(waitingSince(older)).to.equal(sentBack.created_at);
  });

  it('counts one city’s, with the oldest’s wait, or each city’s for every city; none pending says so', function () {
    const alpha = city('alpha', [review('a-1', 125), review('a-2', 3)]);
    const beta = city('beta', [review('b-1', 12)]);
    expect(reviewsSummary([alpha], false, NOW)).to.equal('2 pending, oldest 2h5m');
    expect(reviewsSummary([alpha, city('empty', []), beta], true, NOW)).to.equal(
      'alpha 2 (oldest 2h5m) · beta 1 (oldest 12m)',
    );
    expect(reviewsSummary([city('empty', [])], false, NOW)).to.equal('none pending');
    // A list cut at its page counts them all.
    expect(reviewsSummary([city('big', [review('c-1', 1)], 700)], false, NOW)).to.equal('700 pending, oldest 1m');
  });

  it('lists the longest waiting first, across cities, each with what it changed', function () {
    const rows = reviewRows([
      city('alpha', [review('a-1', 3), review('a-2', 60)]),
      city('beta', [review('b-1', 30, { round: 2, files: [], commits: [] })]),
    ]);
    expect(rows.map((r) => r.review.bead)).to.deep.equal(['a-2', 'b-1', 'a-1']);
    expect(reviewCells(rows[0].review, NOW)).to.deep.equal({
      bead: 'a-2',
      agent: 'web/coder',
      age: '1h',
      what: '1 file, 1 commit · ctl/web/coder/a-2',
    });
    expect(reviewCells(rows[1].review, NOW).what).to.equal('0 files, 0 commits · round 2 · ctl/web/coder/b-1');
  });
});
