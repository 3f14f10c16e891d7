import { useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type Schemas } from '../api.js';
import { ActionButton, cityUrl, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useLoad, useQueryParam, useReloadOn } from '../hooks.js';

type Firing = Schemas['OrderHistoryEntry'];
const HISTORY_SHOWN = 100;

export function OrdersView({ city }: { city: string }) {
  const p = { params: { path: cityPath(city) } };
  const orders = useLoad(() => must(api.GET('/v0/city/{cityName}/orders', p)), [city]);
  const checks = useLoad(() => must(api.GET('/v0/city/{cityName}/orders/check', p)), [city]);
  const history = useLoad(() => must(api.GET('/v0/city/{cityName}/orders/history', p)), [city]);
  const live = useReloadOn(city, (e) => e.type.startsWith('order.'), orders, checks, history);
  const [only, setOnly] = useQueryParam('order');
  const firings = (history.data?.entries ?? []).filter((h) => !only || h.scoped_name === only);
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
        <form class="filters" aria-label="Whose history" onSubmit={(e) => e.preventDefault()}>
          <label>
            Order
            <select value={only} onChange={(e) => setOnly(e.currentTarget.value)}>
              <option value="">every order</option>
              {(orders.data?.orders ?? []).map((o) => (
                <option key={o.scoped_name} value={o.scoped_name}>
                  {o.scoped_name}
                </option>
              ))}
            </select>
          </label>
        </form>
        <ErrorNote error={history.error} />
        {history.data && firings.length === 0 && (
          <Empty>{only ? `${only} has not run yet.` : 'No order has run yet.'}</Empty>
        )}
        <ol class="feed">
          {firings.slice(0, HISTORY_SHOWN).map((h) => (
            <FiringItem key={h.bead_id} city={city} firing={h} />
          ))}
        </ol>
      </section>
    </Page>
  );
}

/** One firing of an order: when, why, how it ended; opened, the output its command wrote. */
function FiringItem({ city, firing: h }: { city: string; firing: Firing }) {
  const [open, setOpen] = useState(false);
  return (
    <li>
      <details onToggle={(e) => setOpen(e.currentTarget.open)}>
        <summary>
          <Time iso={h.created_at} /> <strong>{h.scoped_name}</strong> <StateBadge state={h.status} />{' '}
          {h.trigger && <span class="muted small">{h.trigger}</span>}{' '}
          {h.exit_code !== undefined && <span class="muted small">exit {h.exit_code}</span>}{' '}
          {h.duration_ms !== undefined && <span class="muted small">{h.duration_ms} ms</span>}{' '}
          {h.error && <span class="error">{h.error}</span>}
        </summary>
        {h.wisp_root_id && (
          <p>
            Started the run <a href={cityUrl(city, `/runs/${encodeURIComponent(h.wisp_root_id)}`)}>{h.wisp_root_id}</a>.
          </p>
        )}
        {open && <FiringOutput city={city} firing={h} />}
      </details>
    </li>
  );
}

function FiringOutput({ city, firing }: { city: string; firing: Firing }) {
  const detail = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/order/history/{bead_id}', {
          params: { path: { cityName: city, bead_id: firing.bead_id } },
        }),
      ),
    [city, firing.bead_id, firing.status],
  );
  if (!firing.capture_output) return <p class="muted small">This order does not keep its output.</p>;
  return (
    <>
      <ErrorNote error={detail.error} />
      {detail.loading && !detail.data && <Loading what="the output" />}
      {detail.data && (
        <pre class="screen output" tabIndex={0} role="region" aria-label={`Output of ${firing.scoped_name}`}>
          {detail.data.output || '(no output)'}
        </pre>
      )}
    </>
  );
}
