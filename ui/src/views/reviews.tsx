import { useEffect, useRef, useState } from 'preact/hooks';
import '../review.css';
import { api, must, type Schemas } from '../api.js';
import { cityUrl, Empty, ErrorNote, Loading, Page, Time } from '../components.js';
import { useCityEvents, useQueryParam } from '../hooks.js';
import { usePagedList } from '../paged.js';
import {
  checkOutcome,
  DONE_STATES,
  OPEN_STATES,
  REVIEW_STATE_HEADINGS,
  REVIEW_STATE_WORDS,
  statTotals,
  type ReviewState,
} from '../review-rows.js';

type Review = Schemas['ReviewSummary'];
/** Rows a section loads at first, and more each time "Show more" is pressed. */
const PAGE = 50;

export const reviewUrl = (city: string, bead: string) => cityUrl(city, `/reviews/${encodeURIComponent(bead)}`);

/** A review's state as a badge, in words (`approved` reads "queued": it waits its turn to merge). */
export function ReviewBadge({ state }: { state: ReviewState }) {
  return <span class={`badge badge-review-${state}`}>{REVIEW_STATE_WORDS[state]}</span>;
}

/**
 * The titles of the beads reviewed, read once each (`GET …/bead/{id}`) as rows show them: a review names its bead,
 * and the bead has the title. A bead that cannot be read keeps its id alone.
 */
export function useBeadTitles(city: string, ids: string[]): Map<string, string> {
  const [titles, setTitles] = useState(() => new Map<string, string>());
  const asked = useRef(new Set<string>());
  useEffect(() => {
    for (const id of ids) {
      if (asked.current.has(id)) continue;
      asked.current.add(id);
      must(api.GET('/v0/city/{cityName}/bead/{id}', { params: { path: { cityName: city, id } } }))
        .then((bead) => setTitles((all) => new Map(all).set(id, bead.title)))
        .catch((err: Error) => console.warn(`reading bead ${id} failed: ${err.message}`));
    }
  }, [city, ids.join(' ')]);
  return titles;
}

/** Which states the view shows: those waiting on someone (the default), one state, or every one. */
function shownStates(filter: string): ReviewState[] {
  if (filter === 'all') return [...OPEN_STATES, ...DONE_STATES];
  if (filter === 'done') return [...DONE_STATES];
  const one = [...OPEN_STATES, ...DONE_STATES].find((s) => s === filter);
  return one ? [one] : [...OPEN_STATES];
}

export function ReviewsView({ city }: { city: string }) {
  const [state, setState] = useQueryParam('state');
  const [agent, setAgent] = useQueryParam('agent');
  const [rig, setRig] = useQueryParam('rig');
  // One stream for the page; each section reloads what it shows on any review's event.
  const sections = useRef(new Set<() => void>()).current;
  const live = useCityEvents(
    city,
    (e) => {
      if (e.type.startsWith('review.')) for (const reload of sections) reload();
    },
    (resumed) => {
      if (resumed) for (const reload of sections) reload();
    },
  );
  const states = shownStates(state);
  return (
    <Page title={`Reviews of ${city}`} live={live}>
      <p class="muted">
        Work agents finished with <code>merge = "review"</code>, what waits for you first: pending, then conflicted,
        sent back, and queued to merge; each section oldest first.
      </p>
      <form class="filters" aria-label="Filter reviews" onSubmit={(e) => e.preventDefault()}>
        <label>
          State
          <select value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">waiting on someone</option>
            {[...OPEN_STATES, ...DONE_STATES].map((s) => (
              <option key={s} value={s}>
                {REVIEW_STATE_WORDS[s]}
              </option>
            ))}
            <option value="done">merged or abandoned</option>
            <option value="all">all</option>
          </select>
        </label>
        <TextFilter label="Agent" value={agent} set={setAgent} />
        <TextFilter label="Rig" value={rig} set={setRig} />
      </form>
      {states.map((s) => (
        <ReviewSection
          key={s}
          city={city}
          state={s}
          agent={agent}
          rig={rig}
          sections={sections}
          alone={states.length === 1}
        />
      ))}
      {state === '' && (
        <button type="button" onClick={() => setState('done')}>
          Show merged and abandoned reviews
        </button>
      )}
    </Page>
  );
}

function TextFilter({ label, value, set }: { label: string; value: string; set: (v: string) => void }) {
  const [draft, setDraft] = useState(value);
  return (
    <label>
      {label}
      <input
        value={draft}
        onInput={(e) => setDraft(e.currentTarget.value)}
        onChange={(e) => set(e.currentTarget.value.trim())}
      />
    </label>
  );
}

/**
 * One state's reviews (`GET …/reviews?state=…`, with the agent and rig filters), paged: a section with nothing in
 * it says so only when it is the pending one or shown alone, the rest stay out of the way.
 */
function ReviewSection(props: {
  city: string;
  state: ReviewState;
  agent: string;
  rig: string;
  sections: Set<() => void>;
  alone: boolean;
}) {
  const { city, state, agent, rig } = props;
  const list = usePagedList<Review>(
    (limit, cursor) =>
      must(
        api.GET('/v0/city/{cityName}/reviews', {
          params: {
            path: { cityName: city },
            query: {
              state,
              limit,
              ...(agent ? { agent } : {}),
              ...(rig ? { rig } : {}),
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
    (r) => r.bead,
    [city, state, agent, rig],
    PAGE,
  );
  useEffect(() => {
    const reload = list.reload;
    props.sections.add(reload);
    return () => props.sections.delete(reload);
  }, [list.reload]);
  const titles = useBeadTitles(
    city,
    list.items.map((r) => r.bead),
  );
  const heading = REVIEW_STATE_HEADINGS[state];
  const quiet = !list.loading && list.total === 0 && !list.error && state !== 'pending' && !props.alone;
  if (quiet) return null;
  const id = `reviews-${state}`;
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>
        {heading} <span class="muted">({list.loading ? '…' : list.total})</span>
      </h2>
      <ErrorNote error={list.error} />
      {list.loading && <Loading what={`${REVIEW_STATE_WORDS[state]} reviews`} />}
      {!list.loading && list.total === 0 && (
        <Empty>{state === 'pending' ? 'Nothing waits for you.' : `No ${REVIEW_STATE_WORDS[state]} reviews.`}</Empty>
      )}
      {list.items.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Bead</th>
                <th scope="col">State</th>
                <th scope="col">Agent</th>
                <th scope="col">Rig</th>
                <th scope="col">Round</th>
                <th scope="col">Files</th>
                <th scope="col">Waiting</th>
              </tr>
            </thead>
            <tbody>
              {list.items.map((r) => {
                const totals = statTotals(r.files);
                return (
                  <tr key={r.bead}>
                    <th scope="row">
                      <a href={reviewUrl(city, r.bead)}>{r.bead}</a>
                      {titles.get(r.bead) && <div class="small">{titles.get(r.bead)}</div>}
                    </th>
                    <td>
                      <ReviewBadge state={r.state} />
                      {r.state === 'approved' && r.queue_position !== undefined && (
                        <div class="small">place {r.queue_position}</div>
                      )}
                      {r.check && !r.check.passed && <div class="small">check {checkOutcome(r.check)}</div>}
                    </td>
                    <td>{r.agent}</td>
                    <td>{r.rig ?? '—'}</td>
                    <td>{r.round}</td>
                    <td>
                      {totals.files} <span class="diff-plus">+{totals.insertions}</span>{' '}
                      <span class="diff-minus">−{totals.deletions}</span>
                    </td>
                    <td>
                      <Time iso={r.updated_at} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.items.length < list.total && (
        <button type="button" onClick={() => list.loadUpTo(list.items.length + PAGE)}>
          Show more {heading.toLowerCase()} ({list.total - list.items.length} more)
        </button>
      )}
    </section>
  );
}
