import { api, cityPath, must } from '../api.js';
import { Empty, ErrorNote, Loading, Page, StateBadge } from '../components.js';
import { useLoad, useReloadOn } from '../hooks.js';

export function ConfigView({ city }: { city: string }) {
  const p = { params: { path: cityPath(city) } };
  const explain = useLoad(() => must(api.GET('/v0/city/{cityName}/config/explain', p)), [city]);
  const validate = useLoad(() => must(api.GET('/v0/city/{cityName}/config/validate', p)), [city]);
  const rigs = useLoad(
    () => must(api.GET('/v0/city/{cityName}/rigs', { params: { path: cityPath(city), query: { git: true } } })),
    [city],
  );
  const services = useLoad(() => must(api.GET('/v0/city/{cityName}/services', p)), [city]);
  const live = useReloadOn(
    city,
    (e) => /^(config\.|city\.config|rig\.|service\.|pack\.|provider\.|agent\.)/.test(e.type),
    explain,
    validate,
    rigs,
    services,
  );
  const v = validate.data;
  return (
    <Page title={`Config of ${city}`} live={live}>
      <section aria-labelledby="valid-h">
        <h2 id="valid-h">Validation</h2>
        <ErrorNote error={validate.error} />
        {v && (v.valid && v.warnings.length === 0 ? <p>The configuration is valid.</p> : null)}
        {v && (
          <ul>
            {[
              ...v.errors.map((i) => ({ ...i, level: 'error' })),
              ...v.warnings.map((i) => ({ ...i, level: 'warning' })),
            ].map((i, n) => (
              <li key={n} class={i.level === 'error' ? 'error' : ''}>
                <strong>{i.level}</strong> {i.file}
                {i.line ? `:${i.line}` : ''} {i.key && <code>{i.key}</code>} {i.message}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="agents-h">
        <h2 id="agents-h">Agents and where they come from</h2>
        <ErrorNote error={explain.error} />
        {explain.loading && !explain.data && <Loading what="the configuration" />}
        {explain.data && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  <th scope="col">Provider</th>
                  <th scope="col">From</th>
                </tr>
              </thead>
              <tbody>
                {explain.data.agents.map((a) => (
                  <tr key={`${a.dir ?? ''}/${a.name}`}>
                    <th scope="row">{a.dir ? `${a.dir}/${a.name}` : a.name}</th>
                    <td>{a.provider ?? ''}</td>
                    <td>
                      {a.origin ?? ''} {a.source && <span class="muted small">{a.source}</span>}
                      {a.patched && ' (patched)'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {explain.data && (
        <section aria-labelledby="providers-h">
          <h2 id="providers-h">Providers</h2>
          <ul>
            {Object.entries(explain.data.providers).map(([name, pr]) => (
              <li key={name}>
                <strong>{name}</strong> {pr.protocol && <span>({pr.protocol})</span>}{' '}
                <span class="muted">from {pr.origin ?? 'the city'}</span>
                {pr.patched && ' (patched)'}
              </li>
            ))}
          </ul>
          <h2>Packs</h2>
          {explain.data.packs.length === 0 ? (
            <Empty>No packs.</Empty>
          ) : (
            <ul>
              {explain.data.packs.map((pk) => (
                <li key={pk.source ?? pk.binding}>
                  {pk.binding ?? pk.source} {pk.version && <span>{pk.version}</span>}{' '}
                  {pk.error && <span class="error">{pk.error}</span>}
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
      <section aria-labelledby="rigs-h">
        <h2 id="rigs-h">Rigs</h2>
        <ErrorNote error={rigs.error} />
        {rigs.data && rigs.data.items.length === 0 && <Empty>No rigs.</Empty>}
        <ul>
          {rigs.data?.items.map((r) => (
            <li key={r.name}>
              <strong>{r.name}</strong> <span class="muted small">{r.path}</span>{' '}
              {r.suspended && <StateBadge state="suspended" />}
              {r.git && (
                <span>
                  {' '}
                  {r.git.branch} {r.git.clean ? 'clean' : `${r.git.changed_files?.length ?? 0} changed`}
                  {r.git.ahead ? `, ${r.git.ahead} ahead` : ''}
                  {r.git.behind ? `, ${r.git.behind} behind` : ''}
                </span>
              )}
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="services-h">
        <h2 id="services-h">Services</h2>
        <ErrorNote error={services.error} />
        {services.data && services.data.items.length === 0 && <Empty>No services.</Empty>}
        <ul>
          {services.data?.items.map((s) => (
            <li key={s.service_name}>
              <a href={`${s.mount_path ?? `/v0/city/${encodeURIComponent(city)}/svc/${s.service_name}`}/`}>
                {s.service_name}
              </a>{' '}
              <StateBadge state={s.local_state ?? s.state} /> {s.reason && <span class="muted">{s.reason}</span>}
            </li>
          ))}
        </ul>
      </section>
    </Page>
  );
}
