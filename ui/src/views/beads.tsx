import { useEffect, useRef, useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type LiveEvent, type Schemas } from '../api.js';
import { applyBeadEvent, beadOf, waitingOn } from '../bead-rows.js';
import { announce, cityUrl, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useCityEvents, useQueryParam } from '../hooks.js';
import { usePagedList, type PagedList } from '../paged.js';
import { BEAD_COLUMNS, BEAD_PAGE, fetchBeads } from '../prefetch.js';
import { useVirtualRows } from '../virtual.js';

type Bead = Schemas['Bead'];
/** The board's columns (`is_blocked` shows on the card). */
const COLUMNS = BEAD_COLUMNS;
/** Fixed row heights, so the virtualiser places rows without measuring them. */
const CARD_ROW = 66;
const TABLE_ROW = 37;

export const beadUrl = (city: string, id: string) => cityUrl(city, `/bead/${encodeURIComponent(id)}`);

interface Filters {
  type: string;
  label: string;
  assignee: string;
  rig: string;
}

/**
 * The page's city events, handed to each list it shows (one stream for the page); `reopened` when the stream
 * came back after a gap, whose events may be lost.
 */
interface BeadFeed {
  lists: Set<{ take: (event: LiveEvent) => void; reopened: () => void }>;
}

/**
 * The beads matching `filters` (and `status`, else all), newest first, paged through the API as rows are needed,
 * and kept live from the events' payloads: a `bead.*` event's bead is put in, moved or taken out of the loaded rows
 * without a request. Asked for: the count when the payload cannot tell it, rows waiting on a bead that closed or
 * opened (their `is_blocked`), and everything again after the stream reopens.
 */
function useBeads(city: string, filters: Filters, status: string, feed: BeadFeed): PagedList<Bead> {
  const list = usePagedList<Bead>(
    (limit, cursor) => fetchBeads({ city, ...filters, status, limit, ...(cursor ? { cursor } : {}) }),
    (b) => b.id,
    [city, filters.type, filters.label, filters.assignee, filters.rig, status],
    BEAD_PAGE,
  );
  const filter = { ...filters, status };
  const current = useRef({ list, filter });
  current.current = { list, filter };
  useEffect(() => {
    const asked = new Set<string>();
    const take = (event: LiveEvent) => {
      const bead = beadOf(event);
      if (!bead) return;
      const { list, filter } = current.current;
      list.edit((rows) => applyBeadEvent(rows, event, filter));
      if (event.type === 'bead.deleted') return;
      for (const id of waitingOn(list.items, bead)) {
        if (asked.has(id)) continue;
        asked.add(id);
        must(api.GET('/v0/city/{cityName}/bead/{id}', { params: { path: { cityName: city, id } } }))
          .then((fresh) => {
            const event = { type: 'bead.updated', payload: { bead: fresh } };
            current.current.list.edit((rows) => applyBeadEvent(rows, event, current.current.filter));
          })
          // Gone meanwhile: its own event says so.
          .catch((err: Error) => console.warn(`reading ${id} again failed: ${err.message}`))
          .finally(() => asked.delete(id));
      }
    };
    const entry = { take, reopened: () => current.current.list.reload() };
    feed.lists.add(entry);
    return () => feed.lists.delete(entry);
  }, [city, feed]);
  return list;
}

export function BeadsView({ city }: { city: string }) {
  const [view, setView] = useQueryParam('view');
  const [type, setType] = useQueryParam('type');
  const [label, setLabel] = useQueryParam('label');
  const [assignee, setAssignee] = useQueryParam('assignee');
  const [rig, setRig] = useQueryParam('rig');
  const [status, setStatus] = useQueryParam('status');
  // One stream for the page; every list takes what a bead event says (and reloads when the stream reopens).
  const feed = useRef<BeadFeed>({ lists: new Set() }).current;
  const live = useCityEvents(
    city,
    (e) => {
      for (const list of feed.lists) list.take(e);
    },
    (resumed) => {
      if (resumed) for (const list of feed.lists) list.reopened();
    },
  );
  const filters = { type, label, assignee, rig };
  const board = view !== 'table';
  return (
    <Page title={`Beads of ${city}`} live={live}>
      <div class="toolbar" role="group" aria-label="Show as">
        <button type="button" aria-pressed={board} onClick={() => setView('')}>
          Board
        </button>
        <button type="button" aria-pressed={!board} onClick={() => setView('table')}>
          Table
        </button>
      </div>
      <form class="filters" aria-label="Filter beads" onSubmit={(e) => e.preventDefault()}>
        <Filter label="Type" value={type} set={setType} />
        <Filter label="Label" value={label} set={setLabel} />
        <Filter label="Assignee" value={assignee} set={setAssignee} />
        <Filter label="Rig" value={rig} set={setRig} />
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {COLUMNS.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
      </form>
      {board ? (
        <div class="board">
          {COLUMNS.filter((c) => !status || c === status).map((column) => (
            <BoardColumn key={column} city={city} status={column} filters={filters} feed={feed} />
          ))}
        </div>
      ) : (
        <BeadTable city={city} filters={filters} status={status} feed={feed} />
      )}
      <NewBead city={city} />
    </Page>
  );
}

function Filter({ label, value, set }: { label: string; value: string; set: (v: string) => void }) {
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

/** Asks for more pages once the drawn rows come near the end of what is loaded. */
function useLoadAhead(list: Pick<PagedList<unknown>, 'items' | 'loadUpTo'>, lastDrawn: number | undefined) {
  useEffect(() => {
    if (lastDrawn !== undefined && lastDrawn >= list.items.length - 20) list.loadUpTo(lastDrawn + 100);
  }, [lastDrawn, list.items.length]);
}

function BoardColumn(props: { city: string; status: string; filters: Filters; feed: BeadFeed }) {
  const { city, status } = props;
  const list = useBeads(city, props.filters, status, props.feed);
  const { scrollRef, rows, totalHeight } = useVirtualRows(list.total, CARD_ROW);
  useLoadAhead(list, rows.at(-1)?.index);
  const name = status.replace('_', ' ');
  return (
    <section class="column" aria-labelledby={`col-${status}`}>
      <h2 id={`col-${status}`}>
        {name} <span class="muted">({list.loading ? '…' : list.total})</span>
      </h2>
      <ErrorNote error={list.error} />
      {list.loading && <Loading what={`${name} beads`} />}
      {!list.loading && list.total === 0 && <Empty>None.</Empty>}
      <div class="scroller" ref={scrollRef} tabIndex={0} role="region" aria-label={`${name} beads, ${list.total}`}>
        <ul class="virtual" style={{ height: `${totalHeight}px` }}>
          {rows.map((row) => {
            const b = list.items[row.index];
            return (
              <li
                key={b?.id ?? `row-${row.index}`}
                class={b ? 'card' : 'card placeholder'}
                style={{ transform: `translateY(${row.start}px)` }}
                aria-setsize={list.total}
                aria-posinset={row.index + 1}
              >
                {b ? (
                  <>
                    <a href={beadUrl(city, b.id)}>
                      <span class="muted small">{b.id}</span> {b.title}
                    </a>
                    <div class="small">
                      {b.issue_type}
                      {b.assignee ? ` · ${b.assignee}` : ''}
                      {b.is_blocked ? ' · blocked' : ''}
                    </div>
                  </>
                ) : (
                  <span class="muted small">Loading…</span>
                )}
              </li>
            );
          })}
        </ul>
      </div>
    </section>
  );
}

function BeadTable(props: { city: string; filters: Filters; status: string; feed: BeadFeed }) {
  const { city } = props;
  const list = useBeads(city, props.filters, props.status, props.feed);
  const { scrollRef, rows, totalHeight } = useVirtualRows(list.total, TABLE_ROW);
  useLoadAhead(list, rows.at(-1)?.index);
  const before = rows[0]?.start ?? 0;
  const after = totalHeight - (rows.at(-1)?.end ?? 0);
  return (
    <>
      <ErrorNote error={list.error} />
      {list.loading && <Loading what="beads" />}
      {!list.loading && (
        <p class="muted small" aria-live="polite">
          {list.total} beads.
        </p>
      )}
      {!list.loading && list.total === 0 && <Empty>No beads match.</Empty>}
      {list.total > 0 && (
        <div class="table-wrap table-scroller" ref={scrollRef} tabIndex={0} role="region" aria-label="Beads table">
          <table aria-rowcount={list.total + 1}>
            <thead>
              <tr aria-rowindex={1}>
                <th scope="col">Bead</th>
                <th scope="col">Title</th>
                <th scope="col">Status</th>
                <th scope="col">Type</th>
                <th scope="col">Assignee</th>
                <th scope="col">Labels</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {before > 0 && <tr aria-hidden="true" style={{ height: `${before}px` }} />}
              {rows.map((row) => {
                const b = list.items[row.index];
                return b ? (
                  <tr key={b.id} aria-rowindex={row.index + 2}>
                    <th scope="row">
                      <a href={beadUrl(city, b.id)}>{b.id}</a>
                    </th>
                    <td>{b.title}</td>
                    <td>
                      <StateBadge state={b.status} />
                    </td>
                    <td>{b.issue_type}</td>
                    <td>{b.assignee ?? ''}</td>
                    <td>{(b.labels ?? []).join(', ')}</td>
                    <td>
                      <Time iso={b.updated_at} />
                    </td>
                  </tr>
                ) : (
                  <tr key={`row-${row.index}`} aria-rowindex={row.index + 2}>
                    <td colSpan={7} class="muted small">
                      Loading…
                    </td>
                  </tr>
                );
              })}
              {after > 0 && <tr aria-hidden="true" style={{ height: `${after}px` }} />}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** A new bead's form; the bead shows on the board with its `bead.created` event. */
function NewBead({ city }: { city: string }) {
  const [title, setTitle] = useState('');
  const [type, setType] = useState('task');
  const [assignee, setAssignee] = useState('');
  const [busy, setBusy] = useState(false);
  const create = async () => {
    setBusy(true);
    try {
      const bead = await must(
        api.POST('/v0/city/{cityName}/beads', {
          params: { path: cityPath(city), header: CSRF },
          body: { title, type, ...(assignee ? { assignee } : {}) },
        }),
      );
      announce(`Created ${bead.id}`);
      setTitle('');
    } catch (err) {
      announce(`Create failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="new-bead-h">
      <h2 id="new-bead-h">New bead</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label class="grow">
          Title
          <input required value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <label>
          Type
          <input value={type} onInput={(e) => setType(e.currentTarget.value)} />
        </label>
        <label>
          Assignee
          <input value={assignee} onInput={(e) => setAssignee(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Create bead
        </button>
      </form>
    </section>
  );
}
