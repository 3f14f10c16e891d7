import { api, CSRF, must } from '../api.js';
import { ActionButton, announce, Empty, ErrorNote, Loading, Page, Time } from '../components.js';
import { changesHosts, HOST_STATE_WORDS, rttText, slotsText, toolsText, withHost, type Host } from '../host-rows.js';
import { useCityEvents, useLoad } from '../hooks.js';

/** Hosts are few (a city's `[[host]]` tables); the list is read whole, a page of the API's largest at a time. */
const PAGE = 1000;

async function loadHosts(city: string): Promise<Host[]> {
  const hosts: Host[] = [];
  let cursor: string | undefined;
  do {
    const page = await must(
      api.GET('/v0/city/{cityName}/hosts', {
        params: { path: { cityName: city }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
      }),
    );
    hosts.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return hosts;
}

export function HostsView({ city }: { city: string }) {
  const hosts = useLoad(() => loadHosts(city), [city]);
  const live = useCityEvents(
    city,
    (e) => {
      if (changesHosts(e.type)) hosts.reload();
    },
    (resumed) => {
      if (resumed) hosts.reload();
    },
  );
  return (
    <Page title={`Hosts of ${city}`} live={live}>
      <p class="muted">
        Where the city’s sessions run: this machine (<code>local</code>) and each <code>[[host]]</code> of its
        configuration, as last checked (every 30 seconds, and when you check one).
      </p>
      <ErrorNote error={hosts.error} />
      {hosts.loading && !hosts.data && <Loading what="hosts" />}
      {hosts.data && hosts.data.length === 0 && <Empty>No hosts.</Empty>}
      {hosts.data && hosts.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">State</th>
                <th scope="col">Slots used</th>
                <th scope="col">Round trip</th>
                <th scope="col">Node</th>
                <th scope="col">ctl</th>
                <th scope="col">git, tmux</th>
                <th scope="col">Last error</th>
                <th scope="col">Checked</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {hosts.data.map((h) => (
                <tr key={h.name} id={`host-${h.name}`}>
                  <th scope="row">
                    {h.name}
                    <div class="muted small">{h.address}</div>
                    {h.labels.length > 0 && <div class="muted small">labels: {h.labels.join(', ')}</div>}
                  </th>
                  <td>
                    <span class={`badge badge-host-${h.state}`}>{HOST_STATE_WORDS[h.state]}</span>
                  </td>
                  <td>{slotsText(h)}</td>
                  <td>{rttText(h)}</td>
                  <td>{h.node_version ?? '—'}</td>
                  <td>{h.ctl_version ?? '—'}</td>
                  <td>{toolsText(h)}</td>
                  <td class={h.last_error ? 'error' : undefined}>{h.last_error ?? '—'}</td>
                  <td>{h.checked_at ? <Time iso={h.checked_at} /> : '—'}</td>
                  <td class="actions">
                    <ActionButton
                      label="Check now"
                      name={`Check now: ${h.name}`}
                      run={async () => {
                        const checked = await must(
                          api.POST('/v0/city/{cityName}/hosts/{name}/check', {
                            params: { path: { cityName: city, name: h.name }, header: CSRF },
                          }),
                        );
                        hosts.set((list) => withHost(list, checked));
                        announce(`${h.name} is ${HOST_STATE_WORDS[checked.state]}`);
                      }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}
