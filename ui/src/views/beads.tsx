import { useEffect, useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type Schemas } from '../api.js';
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

/** The beads matching `filters` (and `status`, else all), newest first, paged through the API as rows are needed. */
function useBeads(city: string, filters: Filters, status: string, version: number): PagedList<Bead> {
  const list = usePagedList<Bead>(
    (limit, cursor) => fetchBeads({ city, ...filters, status, limit, ...(cursor ? { cursor } : {}) }),
    (b) => b.id,
    [city, filters.type, filters.label, filters.assignee, filters.rig, status],
    BEAD_PAGE,
  );
  useEffect(() => {
    if (version > 0) list.reload();
  }, [version]);
  return list;
}

export function BeadsView({ city }: { city: string }) {
  const [view, setView] = useQueryParam('view');
  const [type, setType] = useQueryParam('type');
  const [label, setLabel] = useQueryParam('label');
  const [assignee, setAssignee] = useQueryParam('assignee');
  const [rig, setRig] = useQueryParam('rig');
  const [status, setStatus] = useQueryParam('status');
  // One stream for the page; every list reloads what it shows when a bead changes (or the stream reopens).
  const [version, setVersion] = useState(0);
  const live = useCityEvents(
    city,
    (e) => e.type.startsWith('bead.') && setVersion((v) => v + 1),
    (resumed) => resumed && setVersion((v) => v + 1),
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
            <BoardColumn key={column} city={city} status={column} filters={filters} version={version} />
          ))}
        </div>
      ) : (
        <BeadTable city={city} filters={filters} status={status} version={version} />
      )}
      <NewBead city={city} onDone={() => setVersion((v) => v + 1)} />
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
function useLoadAhead(list: PagedList<unknown>, lastDrawn: number | undefined) {
  useEffect(() => {
    if (lastDrawn !== undefined && lastDrawn >= list.items.length - 20) list.loadUpTo(lastDrawn + 100);
  }, [lastDrawn, list.items.length]);
}

function BoardColumn(props: { city: string; status: string; filters: Filters; version: number }) {
  const { city, status } = props;
  const list = useBeads(city, props.filters, status, props.version);
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

function BeadTable(props: { city: string; filters: Filters; status: string; version: number }) {
  const { city } = props;
  const list = useBeads(city, props.filters, props.status, props.version);
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

function NewBead({ city, onDone }: { city: string; onDone: () => void }) {
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
      onDone();
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
