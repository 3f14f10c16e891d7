import { useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type Schemas } from '../api.js';
import { announce, cityUrl, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useLoad, useQueryParam, useReloadOn } from '../hooks.js';

type Bead = Schemas['Bead'];
const COLUMNS = ['open', 'in_progress', 'blocked', 'closed'] as const;
const LIMIT = 500;

export const beadUrl = (city: string, id: string) => cityUrl(city, `/bead/${encodeURIComponent(id)}`);

export function BeadsView({ city }: { city: string }) {
  const [view, setView] = useQueryParam('view');
  const [type, setType] = useQueryParam('type');
  const [label, setLabel] = useQueryParam('label');
  const [assignee, setAssignee] = useQueryParam('assignee');
  const [rig, setRig] = useQueryParam('rig');
  const [status, setStatus] = useQueryParam('status');
  const beads = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/beads', {
          params: {
            path: cityPath(city),
            query: {
              limit: LIMIT,
              ...(type ? { type } : {}),
              ...(label ? { label } : {}),
              ...(assignee ? { assignee } : {}),
              ...(rig ? { rig } : {}),
              ...(status ? { status } : { all: true }),
            },
          },
        }),
      ),
    [city, type, label, assignee, rig, status],
  );
  const live = useReloadOn(city, (e) => e.type.startsWith('bead.'), beads);
  const items = beads.data?.items ?? [];
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
      <ErrorNote error={beads.error} />
      {beads.loading && !beads.data && <Loading what="beads" />}
      {beads.data && (
        <p class="muted small" aria-live="polite">
          {beads.data.total} beads{beads.data.total > items.length ? `, the ${items.length} newest shown` : ''}.
        </p>
      )}
      {beads.data && items.length === 0 && <Empty>No beads match.</Empty>}
      {items.length > 0 && (board ? <Board city={city} beads={items} /> : <BeadTable city={city} beads={items} />)}
      <NewBead city={city} onDone={beads.reload} />
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

function Board({ city, beads }: { city: string; beads: Bead[] }) {
  const columns = [
    ...COLUMNS,
    ...new Set(beads.map((b) => b.status).filter((s) => !(COLUMNS as readonly string[]).includes(s))),
  ];
  return (
    <div class="board">
      {columns.map((column) => {
        const inColumn = beads.filter((b) => b.status === column);
        return (
          <section key={column} class="column" aria-labelledby={`col-${column}`}>
            <h2 id={`col-${column}`}>
              {column.replace('_', ' ')} <span class="muted">({inColumn.length})</span>
            </h2>
            <ul>
              {inColumn.map((b) => (
                <li key={b.id} class="card">
                  <a href={beadUrl(city, b.id)}>
                    <span class="muted small">{b.id}</span> {b.title}
                  </a>
                  <div class="small">
                    {b.issue_type}
                    {b.assignee ? ` · ${b.assignee}` : ''}
                    {b.is_blocked ? ' · blocked' : ''}
                  </div>
                </li>
              ))}
            </ul>
          </section>
        );
      })}
    </div>
  );
}

function BeadTable({ city, beads }: { city: string; beads: Bead[] }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
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
          {beads.map((b) => (
            <tr key={b.id}>
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
          ))}
        </tbody>
      </table>
    </div>
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
