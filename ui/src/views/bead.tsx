import { useRef, useState } from 'preact/hooks';
import { api, CSRF, must, type LiveEvent, type Schemas } from '../api.js';
import { ActionButton, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { beadOf } from '../bead-rows.js';
import { edgesOf, neighboursAfter, withEvent } from '../bead-neighbours.js';
import { useCityEvents, useLoad } from '../hooks.js';
import { BeadComments, type CommentFeed } from './bead-comments.js';
import { BeadEditor } from './bead-edit.js';
import { beadUrl } from './beads.js';
import { Dag, type DagEdge, type DagNode } from './dag.js';

type Bead = Schemas['Bead'];

const aboutBead = (e: LiveEvent, id: string) =>
  (e.payload as { bead?: Bead } | undefined)?.bead?.id === id || e.payload?.bead_id === id;

export function BeadView({ city, id }: { city: string; id: string }) {
  const path = { cityName: city, id };
  const bead = useLoad(() => must(api.GET('/v0/city/{cityName}/bead/{id}', { params: { path } })), [city, id]);
  const deps = useLoad(() => must(api.GET('/v0/city/{cityName}/bead/{id}/deps', { params: { path } })), [city, id]);
  const history = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/events', {
          params: { path: { cityName: city }, query: { limit: 1000 } },
        }),
      ).then((page) => (page.items as LiveEvent[]).filter((e) => e.subject === id || aboutBead(e, id))),
    [city, id],
  );
  const comments = useRef<CommentFeed | undefined>(undefined);
  // Each event's payload is taken as it is (the bead, a neighbour, the history's new line); the API is asked
  // only for what it cannot tell: the neighbours' beads when the edges change, everything after a gap.
  const live = useCityEvents(
    city,
    (e) => {
      comments.current?.take(e);
      const changed = beadOf(e);
      const deleted = e.type === 'bead.deleted';
      if (e.subject === id || aboutBead(e, id)) {
        history.set((shown) => withEvent(shown, e));
        // A comment changes neither the bead nor its neighbours.
        if (e.type.startsWith('bead.comment')) return;
        if (changed?.id !== id || deleted) {
          bead.reload();
          deps.reload();
          return;
        }
        const before = bead.data;
        bead.set(() => changed);
        if (!before || edgesOf(before) !== edgesOf(changed)) deps.reload();
        return;
      }
      // A neighbour changing (closing, say) changes its box in the graph.
      if (!changed || !deps.data) return;
      const next = neighboursAfter(deps.data, id, changed, deleted);
      if (!next) deps.reload();
      else if (next !== deps.data) deps.set(() => next);
    },
    (resumed) => {
      if (!resumed) return;
      for (const loaded of [bead, deps, history]) loaded.reload();
      comments.current?.reopened();
    },
  );
  const b = bead.data;
  return (
    <Page title={b ? `${b.id}: ${b.title}` : `Bead ${id}`} live={live}>
      <ErrorNote error={bead.error} />
      {bead.loading && !b && <Loading what="the bead" />}
      {b && (
        <>
          <dl class="facts">
            <div>
              <dt>Status</dt>
              <dd>
                <StateBadge state={b.status} />
              </dd>
            </div>
            <div>
              <dt>Type</dt>
              <dd>{b.issue_type}</dd>
            </div>
            <div>
              <dt>Assignee</dt>
              <dd>{b.assignee ?? 'nobody'}</dd>
            </div>
            <div>
              <dt>Priority</dt>
              <dd>{b.priority ?? '—'}</dd>
            </div>
            <div>
              <dt>Labels</dt>
              <dd>{(b.labels ?? []).join(', ') || '—'}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>
                <Time iso={b.created_at} />
              </dd>
            </div>
          </dl>
          {b.description && <p class="description">{b.description}</p>}
          <div class="toolbar" role="toolbar" aria-label="Bead actions">
            {b.status === 'closed' ? (
              <ActionButton
                label="Reopen"
                done="Reopened"
                run={() => must(api.POST('/v0/city/{cityName}/bead/{id}/reopen', { params: { path, header: CSRF } }))}
              />
            ) : (
              <ActionButton
                label="Close"
                done="Closed"
                run={() => must(api.POST('/v0/city/{cityName}/bead/{id}/close', { params: { path, header: CSRF } }))}
              />
            )}
          </div>
          <Assign city={city} id={id} current={b.assignee} />
          <BeadEditor city={city} bead={b} onSaved={bead.reload} />
        </>
      )}
      <section aria-labelledby="deps-h">
        <h2 id="deps-h">Dependencies</h2>
        <ErrorNote error={deps.error} />
        {deps.data && b && <DepsGraph bead={b} deps={deps.data} />}
        {deps.data && (
          <ul>
            {deps.data.depends_on.map((d) => (
              <li key={d.id}>
                depends on <a href={beadUrl(city, d.id)}>{d.id}</a> {d.title} <StateBadge state={d.status} />
              </li>
            ))}
            {deps.data.dependents.map((d) => (
              <li key={`r${d.id}`}>
                needed by <a href={beadUrl(city, d.id)}>{d.id}</a> {d.title} <StateBadge state={d.status} />
              </li>
            ))}
            {deps.data.children.map((d) => (
              <li key={`c${d.id}`}>
                child <a href={beadUrl(city, d.id)}>{d.id}</a> {d.title} <StateBadge state={d.status} />
              </li>
            ))}
            {deps.data.depends_on.length + deps.data.dependents.length === 0 && <li class="muted">None.</li>}
          </ul>
        )}
      </section>
      <BeadComments city={city} id={id} feed={comments} />
      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ol class="feed">
          {(history.data ?? []).map((e) => (
            <li key={e.seq}>
              <Time iso={e.ts} /> <code>{e.type}</code> by {e.actor} {e.message && <span>{e.message}</span>}
            </li>
          ))}
        </ol>
      </section>
    </Page>
  );
}

function Assign({ city, id, current }: { city: string; id: string; current?: string }) {
  const [to, setTo] = useState(current ?? '');
  return (
    <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
      <label>
        Assign to (an agent)
        <input value={to} onInput={(e) => setTo(e.currentTarget.value)} />
      </label>
      <ActionButton
        label="Assign"
        done="Assigned"
        run={() =>
          must(
            api.POST('/v0/city/{cityName}/bead/{id}/assign', {
              params: { path: { cityName: city, id }, header: CSRF },
              body: { assignee: to },
            }),
          )
        }
      />
      <ActionButton
        label="Sling"
        name="Sling to the agent"
        done="Slung"
        run={() =>
          must(
            api.POST('/v0/city/{cityName}/sling', {
              params: { path: { cityName: city }, header: CSRF },
              body: { target: to, bead: id },
            }),
          )
        }
      />
    </form>
  );
}

/**
 * The bead among its neighbours: what it depends on (left of it), what depends on it and its children (right of
 * it, children dashed), each coloured by status, the kind of each dependency on its box.
 */
function DepsGraph({ bead, deps }: { bead: Bead; deps: Schemas['BeadDepsResponse'] }) {
  if (deps.depends_on.length + deps.dependents.length + deps.children.length === 0) return null;
  const kindOf = (from: Bead, on: string) => from.dependencies?.find((d) => d.depends_on_id === on)?.type;
  const node = (b: Bead, kind?: string): DagNode => ({
    id: b.id,
    title: `${b.id} ${b.title}`,
    status: b.status,
    detail: kind ? `${kind} · ${b.status}` : b.status,
  });
  const nodes = new Map<string, DagNode>([[bead.id, { ...node(bead), current: true }]]);
  const edges: DagEdge[] = [];
  for (const d of deps.depends_on) {
    nodes.set(d.id, node(d, kindOf(bead, d.id)));
    edges.push({ from: d.id, to: bead.id });
  }
  for (const d of deps.dependents) {
    if (!nodes.has(d.id)) nodes.set(d.id, node(d, kindOf(d, bead.id)));
    edges.push({ from: bead.id, to: d.id });
  }
  for (const c of deps.children) {
    if (!nodes.has(c.id)) nodes.set(c.id, node(c, 'child'));
    edges.push({ from: bead.id, to: c.id, dashed: true });
  }
  return (
    <Dag
      nodes={[...nodes.values()]}
      edges={edges}
      label={`${bead.id} with ${deps.depends_on.length} beads it depends on, ${deps.dependents.length} depending on it and ${deps.children.length} children`}
      caption="What it waits for on its left; what waits for it, and its children (dashed), on its right."
    />
  );
}
