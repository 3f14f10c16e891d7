import { useEffect } from 'preact/hooks';
import { api, must, type LiveEvent } from '../api.js';
import { cityUrl, ErrorNote, Time } from '../components.js';
import { useLoad } from '../hooks.js';
import { overlapsConcerning, type OverlapSelf, type OverlapWith } from '../review-rows.js';

/** A rig's overlaps are pairs of its worktrees: a few, read whole, the API's largest page at a time. */
const PAGE = 1000;

async function loadOverlaps(city: string, rig: string) {
  const items = [];
  let cursor: string | undefined;
  let computedAt = '';
  do {
    const page = await must(
      api.GET('/v0/city/{cityName}/rigs/{name}/overlaps', {
        params: { path: { cityName: city, name: rig }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
      }),
    );
    items.push(...page.items);
    computedAt ||= page.computed_at;
    cursor = page.next_cursor;
  } while (cursor);
  return { items, computedAt };
}

/** The events after which a rig's overlaps may have changed: its `rig.overlap`, and any review's (a side while it waits). */
export const changesOverlaps = (e: LiveEvent, rig: string): boolean =>
  (e.type === 'rig.overlap' && e.payload?.rig === rig) || e.type.startsWith('review.');

/**
 * What else of the rig changed the files this session or review changed (`GET …/rigs/{rig}/overlaps`): each other
 * side — a session at work, or a review not merged — linked, with the files. Read again each time `changes` moves:
 * the page counts the events `changesOverlaps` names on its own stream (and a reopening), so no second one opens.
 */
export function RigOverlaps(props: { city: string; rig: string; self: OverlapSelf; changes: number }) {
  const { city, rig } = props;
  const overlaps = useLoad(() => loadOverlaps(city, rig), [city, rig]);
  useEffect(() => {
    if (props.changes > 0) overlaps.reload();
  }, [props.changes]);
  const mine = overlaps.data ? overlapsConcerning(overlaps.data.items, props.self) : undefined;
  return (
    <section aria-labelledby="overlaps-h">
      <h2 id="overlaps-h">Overlaps in {rig}</h2>
      <ErrorNote error={overlaps.error} />
      {mine && mine.length === 0 && <p class="muted">No other work of the rig changed the same files.</p>}
      {mine && mine.length > 0 && (
        <ul class="overlaps">
          {mine.map((o) => (
            <li key={`${o.party.kind}:${o.party.bead ?? o.party.session_id}`}>
              Also changed by <OverlapLink city={city} overlap={o} />:{' '}
              {o.files.map((f, i) => [i > 0 && ', ', <code key={f}>{f}</code>])}
            </li>
          ))}
        </ul>
      )}
      {overlaps.data && (
        <p class="muted small">
          As read <Time iso={overlaps.data.computedAt} />.
        </p>
      )}
    </section>
  );
}

function OverlapLink({ city, overlap }: { city: string; overlap: OverlapWith }) {
  const p = overlap.party;
  if (p.kind === 'review' && p.bead) {
    return (
      <a href={cityUrl(city, `/reviews/${encodeURIComponent(p.bead)}`)}>
        review {p.bead} (by {p.session})
      </a>
    );
  }
  return <a href={cityUrl(city, `/session/${encodeURIComponent(p.session_id)}`)}>session {p.session}</a>;
}
