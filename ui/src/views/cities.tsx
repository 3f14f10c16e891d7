import { useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type LiveEvent, type Schemas } from '../api.js';
import { ActionButton, announce, cityUrl, Empty, ErrorNote, Loading, Page, StateBadge, Time } from '../components.js';
import { useLoad, useStream } from '../hooks.js';

type City = Schemas['CityInfo'];
type Status = Schemas['StatusBody'];

interface CityRow {
  city: City;
  status?: Status;
  pending?: number;
  /** Why its counts could not be read. */
  unavailable?: string;
}

async function loadCities(): Promise<CityRow[]> {
  const { items } = await must(api.GET('/v0/cities', { params: { query: { limit: 1000 } } }));
  // Each running city's counts, side by side (a stopped city has no controller to ask).
  return Promise.all(
    items.map(async (city): Promise<CityRow> => {
      if (!city.running) return { city };
      // One city that cannot answer (restarting, say) still leaves the others' rows; its row says why.
      let unavailable: string | undefined;
      const noted = (err: unknown): undefined => {
        unavailable = err instanceof Error ? err.message : String(err);
        return undefined;
      };
      const [status, pending] = await Promise.all([
        must(api.GET('/v0/city/{cityName}/status', { params: { path: cityPath(city.name) } })).catch(noted),
        must(api.GET('/v0/city/{cityName}/pending', { params: { path: cityPath(city.name) } })).catch(noted),
      ]);
      return { city, status, pending: pending?.total, unavailable };
    }),
  );
}

const RECENT = 30;

export function CitiesView() {
  const cities = useLoad(loadCities, []);
  const [recent, setRecent] = useState<LiveEvent[]>([]);
  const live = useStream(
    {
      path: '/v0/events/stream',
      resumeParam: 'after_cursor',
      on: {
        tagged_event: (data) => {
          const event = data as LiveEvent;
          setRecent((all) => [event, ...all].slice(0, RECENT));
          if (/^(city\.|controller\.|request\.result\.city|session\.|bead\.|agent\.)/.test(event.type)) cities.reload();
        },
      },
      onOpen: (resumed) => resumed && cities.reload(),
    },
    [],
  );
  return (
    <Page title="Cities" live={live}>
      <ErrorNote error={cities.error} />
      {cities.loading && !cities.data ? <Loading what="cities" /> : null}
      {cities.data && cities.data.length === 0 && <Empty>No city yet: create or register one below.</Empty>}
      {cities.data && cities.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Registered cities</caption>
            <thead>
              <tr>
                <th scope="col">City</th>
                <th scope="col">Status</th>
                <th scope="col">Agents running</th>
                <th scope="col">Waiting on a person</th>
                <th scope="col">Work open / ready / in progress</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {cities.data.map(({ city, status, pending, unavailable }) => (
                <tr key={city.name}>
                  <th scope="row">
                    <a href={cityUrl(city.name)}>{city.name}</a>
                    <div class="muted small">{city.path}</div>
                  </th>
                  <td>
                    <StateBadge state={city.status ?? (city.running ? 'running' : 'stopped')} />
                    {city.error && <div class="error small">{city.error}</div>}
                    {unavailable && <div class="muted small">counts unavailable: {unavailable}</div>}
                  </td>
                  <td>{status ? `${status.agents.running} of ${status.agents.total}` : '—'}</td>
                  <td>{pending ?? '—'}</td>
                  <td>
                    {status?.work ? `${status.work.open} / ${status.work.ready} / ${status.work.in_progress}` : '—'}
                  </td>
                  <td class="actions">
                    {city.running ? (
                      <ActionButton
                        label="Stop"
                        name={`Stop ${city.name}`}
                        confirm={{
                          title: `Stop city ${city.name}?`,
                          body: 'Its controller stops, and every agent and session program with it. Start brings it back.',
                          action: 'Stop city',
                        }}
                        done={`Stopping ${city.name}`}
                        run={async () => {
                          await must(
                            api.POST('/v0/city/{cityName}/stop', {
                              params: { path: cityPath(city.name), header: CSRF },
                            }),
                          );
                          cities.reload();
                        }}
                      />
                    ) : (
                      <ActionButton
                        label="Start"
                        name={`Start ${city.name}`}
                        done={`Starting ${city.name}`}
                        run={async () => {
                          await must(
                            api.POST('/v0/city/{cityName}/start', {
                              params: { path: cityPath(city.name), header: CSRF },
                            }),
                          );
                          cities.reload();
                        }}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="columns">
        <NewCity onDone={cities.reload} />
        <section aria-labelledby="recent-h">
          <h2 id="recent-h">Events as they happen</h2>
          {recent.length === 0 ? (
            <Empty>Nothing has happened since this page opened.</Empty>
          ) : (
            <ol class="feed">
              {recent.map((e) => (
                <li key={`${e.city}:${e.seq}`}>
                  <Time iso={e.ts} /> <code>{e.type}</code>{' '}
                  {e.city && e.city !== '__supervisor__' && <span>in {e.city}</span>}{' '}
                  {e.subject && <span class="muted">{e.subject}</span>}
                </li>
              ))}
            </ol>
          )}
        </section>
      </div>
    </Page>
  );
}

function NewCity({ onDone }: { onDone: () => void }) {
  const [mode, setMode] = useState<'create' | 'register'>('create');
  const [dir, setDir] = useState('');
  const [provider, setProvider] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      if (mode === 'create') {
        await must(
          api.POST('/v0/city', { params: { header: CSRF }, body: { dir, ...(provider ? { provider } : {}) } }),
        );
        announce(`Creating a city in ${dir}`);
      } else {
        await must(api.POST('/v0/cities/register', { params: { header: CSRF }, body: { path: dir } }));
        announce(`Registered ${dir}`);
      }
      setDir('');
      onDone();
    } catch (err) {
      announce(`${mode === 'create' ? 'Create' : 'Register'} failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="new-city-h">
      <h2 id="new-city-h">Add a city</h2>
      <form onSubmit={(e) => void submit(e)} class="stack">
        <fieldset>
          <legend>What to do</legend>
          <label>
            <input type="radio" name="mode" checked={mode === 'create'} onChange={() => setMode('create')} /> Create a
            new city
          </label>
          <label>
            <input type="radio" name="mode" checked={mode === 'register'} onChange={() => setMode('register')} />{' '}
            Register an existing city
          </label>
        </fieldset>
        <label>
          Directory
          <input
            required
            value={dir}
            onInput={(e) => setDir(e.currentTarget.value)}
            placeholder="/home/me/cities/alpha"
          />
        </label>
        {mode === 'create' && (
          <label>
            Provider (optional)
            <input value={provider} onInput={(e) => setProvider(e.currentTarget.value)} placeholder="claude" />
          </label>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {mode === 'create' ? 'Create city' : 'Register city'}
        </button>
      </form>
    </section>
  );
}
