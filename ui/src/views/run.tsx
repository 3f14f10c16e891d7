import { api, CSRF, must, type Schemas } from '../api.js';
import { ActionButton, ErrorNote, Loading, Page, StateBadge } from '../components.js';
import { useLoad, useReloadOn } from '../hooks.js';
import { beadUrl } from './beads.js';
import { RunGraph } from './run-graph.js';

type Snapshot = Schemas['WorkflowSnapshotResponse'];

export function RunView({ city, id }: { city: string; id: string }) {
  const run = useLoad(
    () => must(api.GET('/v0/city/{cityName}/runs/{run_id}', { params: { path: { cityName: city, run_id: id } } })),
    [city, id],
  );
  const graph = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/workflow/{workflow_id}', {
          params: { path: { cityName: city, workflow_id: id } },
        }),
      ) as Promise<Snapshot>,
    [city, id],
  );
  const ids = new Set(graph.data?.beads.map((b) => b.id) ?? []);
  const live = useReloadOn(
    city,
    (e) =>
      e.type.startsWith('molecule.') ||
      (e.type.startsWith('bead.') && ids.has((e.payload as { bead?: { id: string } } | undefined)?.bead?.id ?? '')),
    run,
    graph,
  );
  const r = run.data as { run_id: string; title?: string; status: string } | undefined;
  return (
    <Page title={r?.title ? `Run ${r.title}` : `Run ${id}`} live={live}>
      <ErrorNote error={run.error ?? graph.error} />
      {r && (
        <div class="run-status">
          <StateBadge state={r.status} />{' '}
          {['pending', 'active', 'waiting'].includes(r.status) && (
            <ActionButton
              label="Cancel run"
              kind="danger"
              confirm={{
                title: 'Cancel this run?',
                body: 'Every step not yet done is closed as canceled, then the run itself; it cannot be resumed.',
                keep: 'Keep running',
              }}
              done="Canceled"
              run={() =>
                must(
                  api.POST('/v0/city/{cityName}/runs/{run_id}/cancel', {
                    params: { path: { cityName: city, run_id: id }, header: CSRF },
                  }),
                )
              }
            />
          )}
        </div>
      )}
      {graph.loading && !graph.data && <Loading what="the run's graph" />}
      {graph.data && <RunGraph snapshot={graph.data} />}
      {graph.data && (
        <section aria-labelledby="steps-h">
          <h2 id="steps-h">Steps</h2>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Assignee</th>
                </tr>
              </thead>
              <tbody>
                {graph.data.beads.map((b) => (
                  <tr key={b.id}>
                    <th scope="row">
                      <a href={beadUrl(city, b.id)}>{b.step_ref ?? b.id}</a> <span class="muted small">{b.title}</span>
                    </th>
                    <td>{b.kind}</td>
                    <td>
                      <StateBadge state={b.status} />
                    </td>
                    <td>{b.attempt ?? ''}</td>
                    <td>{b.assignee ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
    </Page>
  );
}
