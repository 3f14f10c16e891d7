import { api, cityPath, CSRF, must } from '../api.js';
import { ActionButton, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useLoad, useReloadOn } from '../hooks.js';

export function OrdersView({ city }: { city: string }) {
  const p = { params: { path: cityPath(city) } };
  const orders = useLoad(() => must(api.GET('/v0/city/{cityName}/orders', p)), [city]);
  const checks = useLoad(() => must(api.GET('/v0/city/{cityName}/orders/check', p)), [city]);
  const history = useLoad(() => must(api.GET('/v0/city/{cityName}/orders/history', p)), [city]);
  const live = useReloadOn(city, (e) => e.type.startsWith('order.'), orders, checks, history);
  const due = new Map((checks.data?.checks ?? []).map((c) => [c.scoped_name, c]));
  return (
    <Page title={`Orders of ${city}`} live={live}>
      <ErrorNote error={orders.error} />
      {orders.loading && !orders.data && <Loading what="orders" />}
      {orders.data && orders.data.orders.length === 0 && <Empty>No orders.</Empty>}
      {orders.data && orders.data.orders.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Order</th>
                <th scope="col">Trigger</th>
                <th scope="col">Next due</th>
                <th scope="col">Last run</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {orders.data.orders.map((o) => {
                const c = due.get(o.scoped_name);
                return (
                  <tr key={o.scoped_name}>
                    <th scope="row">
                      {o.scoped_name}
                      {!o.enabled && <StateBadge state="disabled" />}
                      <div class="muted small">{o.description ?? ''}</div>
                    </th>
                    <td>
                      {o.trigger ?? o.type} {o.interval ?? o.schedule ?? o.on ?? ''}
                    </td>
                    <td>
                      {c?.due ? 'now' : <Time iso={c?.next_due} />} <span class="muted small">{c?.reason}</span>
                    </td>
                    <td>
                      <Time iso={c?.last_run} /> {c?.last_run_outcome && <StateBadge state={c.last_run_outcome} />}
                    </td>
                    <td class="actions">
                      <ActionButton
                        label="Run now"
                        name={`Run ${o.scoped_name} now`}
                        done={`Started ${o.scoped_name}`}
                        run={() =>
                          must(
                            api.POST('/v0/city/{cityName}/order/{name}/run', {
                              params: { path: { cityName: city, name: o.scoped_name }, header: CSRF },
                              body: {},
                            }),
                          )
                        }
                      />
                      <ActionButton
                        label={o.enabled ? 'Disable' : 'Enable'}
                        name={`${o.enabled ? 'Disable' : 'Enable'} ${o.scoped_name}`}
                        run={async () => {
                          await must(
                            api.POST(`/v0/city/{cityName}/order/{name}/${o.enabled ? 'disable' : 'enable'}`, {
                              params: { path: { cityName: city, name: o.scoped_name }, header: CSRF },
                            }),
                          );
                          orders.reload();
                        }}
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ErrorNote error={history.error} />
        {history.data && history.data.entries.length === 0 && <Empty>No order has run yet.</Empty>}
        <ol class="feed">
          {history.data?.entries.slice(0, 50).map((h) => (
            <li key={h.bead_id}>
              <Time iso={h.created_at} /> <strong>{h.scoped_name}</strong> <StateBadge state={h.status} />{' '}
              {h.exit_code !== undefined && <span class="muted">exit {h.exit_code}</span>}{' '}
              {h.error && <span class="error">{h.error}</span>}
            </li>
          ))}
        </ol>
      </section>
    </Page>
  );
}
