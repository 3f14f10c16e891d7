import type { ReviewSummary } from '../../shared/dto/reviews.js';
import type { CityView } from './model.js';

// What `ctl top` says of the reviews waiting for a person: a count per city with the oldest's wait, and the
// reviews themselves, longest waiting first. Apart from the view so that unit tests reach it without Ink.

/** A pending review with the city it belongs to. */
export interface ReviewRow {
  city: string;
  review: ReviewSummary;
}

/** When a review began to wait: its round's request (a review recorded before that was kept: its first). */
export function waitingSince(review: Pick<ReviewSummary, 'requested_at' | 'created_at'>): string {
  return review.requested_at ?? review.created_at;
}

/** The pending reviews of the cities, longest waiting first (then by city and bead). */
export function reviewRows(cities: CityView[]): ReviewRow[] {
  return cities
    .flatMap((c) => c.reviews.map((review) => ({ city: c.info.name, review })))
    .sort(
      (a, b) =>
        waitingSince(a.review).localeCompare(waitingSince(b.review)) ||
        a.city.localeCompare(b.city) ||
        a.review.bead.localeCompare(b.review.bead),
    );
}

/** A wait in a few characters: `40s`, `12m`, `3h5m`, `2d4h`. */
export function ageText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  return `${Math.floor(h / 24)}d${h % 24 ? `${h % 24}h` : ''}`;
}

/**
 * The REVIEWS heading's count: `none pending`, `2 pending, oldest 3h5m` for one city; for every city, each city
 * that has some (`alpha 2 (oldest 3h5m) · beta 1 (oldest 12m)`). A city whose list was cut at a page counts its
 * total, its oldest among those read (the list is oldest first).
 */
export function reviewsSummary(cities: CityView[], showCity: boolean, now: number): string {
  const counted = cities
    .filter((c) => c.reviewsPending > 0)
    .map((c) => {
      const oldest = Math.min(...c.reviews.map((r) => Date.parse(waitingSince(r))));
      return { city: c.info.name, count: c.reviewsPending, age: Number.isFinite(oldest) ? ageText(now - oldest) : '' };
    });
  if (counted.length === 0) return 'none pending';
  if (!showCity) {
    const [only] = counted;
    return `${only!.count} pending${only!.age ? `, oldest ${only!.age}` : ''}`;
  }
  return counted.map((c) => `${c.city} ${c.count}${c.age ? ` (oldest ${c.age})` : ''}`).join(' · ');
}

/** A review's line after its city: bead, agent, wait, round, what it changed. */
export function reviewCells(
  review: ReviewSummary,
  now: number,
): { bead: string; agent: string; age: string; what: string } {
  const files = review.files.length;
  const commits = review.commits.length;
  const what = [
    `${files} file${files === 1 ? '' : 's'}, ${commits} commit${commits === 1 ? '' : 's'}`,
    ...(review.round > 1 ? [`round ${review.round}`] : []),
    review.branch,
  ].join(' · ');
  return {
    bead: review.bead,
    agent: review.agent,
    age: ageText(now - Date.parse(waitingSince(review))),
    what,
  };
}
