import { api, cityPath, CSRF, must } from '../api.js';
import { ActionButton, cityUrl, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useLoad, useReloadOn } from '../hooks.js';

export const runUrl = (city: string, id: string) => cityUrl(city, `/runs/${encodeURIComponent(id)}`);

export function RunsView({ city }: { city: string }) {
  const runs = useLoad(
    () => must(api.GET('/v0/city/{cityName}/runs', { params: { path: cityPath(city), query: { limit: 200 } } })),
    [city],
  );
  const formulas = useLoad(
    () => must(api.GET('/v0/city/{cityName}/formulas', { params: { path: cityPath(city) } })),
    [city],
  );
  const live = useReloadOn(city, (e) => e.type.startsWith('molecule.') || e.type.startsWith('bead.'), runs);
  const counts = runs.data?.status_counts;
  return (
    <Page title={`Runs of ${city}`} live={live}>
      <ErrorNote error={runs.error} />
      {counts && (
        <p class="muted">
          {Object.entries(counts)
            .filter(([, n]) => n > 0)
            .map(([status, n]) => `${n} ${status}`)
            .join(', ') || 'No runs yet.'}
        </p>
      )}
      {runs.loading && !runs.data && <Loading what="runs" />}
      {runs.data && runs.data.runs.length === 0 && <Empty>No runs.</Empty>}
      {runs.data && runs.data.runs.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Formula</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.runs.map((r) => (
                <tr key={r.run_id}>
                  <th scope="row">
                    <a href={runUrl(city, r.run_id)}>{r.title || r.run_id}</a>
                    <div class="muted small">{r.run_id}</div>
                  </th>
                  <td>{r.formula ?? ''}</td>
                  <td>
                    <StateBadge state={r.status} />
                    {r.last_error && <div class="error small">{r.last_error.message ?? r.last_error.code}</div>}
                  </td>
                  <td>
                    <Time iso={r.started_at} />
                  </td>
                  <td>
                    {['pending', 'active', 'waiting'].includes(r.status) && (
                      <ActionButton
                        label="Cancel"
                        name={`Cancel ${r.run_id}`}
                        kind="danger"
                        confirm={{
                          title: `Cancel run ${r.run_id}?`,
                          body: 'Every step not yet done is closed as canceled, then the run itself; it cannot be resumed.',
                          action: 'Cancel run',
                          keep: 'Keep running',
                        }}
                        done="Canceled"
                        run={() =>
                          must(
                            api.POST('/v0/city/{cityName}/runs/{run_id}/cancel', {
                              params: { path: { cityName: city, run_id: r.run_id }, header: CSRF },
                            }),
                          )
                        }
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <section aria-labelledby="formulas-h">
        <h2 id="formulas-h">Formulas</h2>
        <ErrorNote error={formulas.error} />
        {formulas.data && formulas.data.items.length === 0 && <Empty>No formulas.</Empty>}
        <ul>
          {formulas.data?.items.map((f) => (
            <li key={(f as { name: string }).name}>
              <strong>{(f as { name: string }).name}</strong>{' '}
              <span class="muted">{(f as { description?: string }).description ?? ''}</span>
            </li>
          ))}
        </ul>
      </section>
    </Page>
  );
}
