import { api, cityPath, CSRF, must, type Schemas } from '../api.js';
import { ActionButton, Empty, ErrorNote, Loading, Page, StateBadge } from '../components.js';
import { useLoad, useReloadOn } from '../hooks.js';
import { beadUrl } from './beads.js';

type Convoy = Schemas['ConvoyGetResponse'];

/**
 * The city's convoys (beads tracking a batch of others), each with its progress (closed of total) and its members,
 * live on the bead and convoy events that change them.
 */
export function ConvoysView({ city }: { city: string }) {
  const convoys = useLoad(async () => {
    const page = await must(
      api.GET('/v0/city/{cityName}/convoys', { params: { path: cityPath(city), query: { limit: 100 } } }),
    );
    // Each convoy's members and progress; the requests go together, not one after another.
    const each = await Promise.all(
      page.items.map((c) =>
        must(api.GET('/v0/city/{cityName}/convoy/{id}', { params: { path: { cityName: city, id: c.id } } })),
      ),
    );
    return { total: page.total, items: each };
  }, [city]);
  const live = useReloadOn(city, (e) => e.type.startsWith('convoy.') || e.type.startsWith('bead.'), convoys);
  return (
    <Page title={`Convoys of ${city}`} live={live}>
      <ErrorNote error={convoys.error} />
      {convoys.loading && !convoys.data && <Loading what="convoys" />}
      {convoys.data && convoys.data.items.length === 0 && (
        <Empty>No convoys. `ctl convoy create` starts one tracking a batch of beads.</Empty>
      )}
      <ul class="feed convoys">
        {(convoys.data?.items ?? []).map((c) => (
          <ConvoyItem key={c.convoy.id} city={city} convoy={c} />
        ))}
      </ul>
    </Page>
  );
}

function ConvoyItem({ city, convoy: c }: { city: string; convoy: Convoy }) {
  const { closed, total } = c.progress;
  const pct = total === 0 ? 0 : Math.round((100 * closed) / total);
  return (
    <li>
      <h2 class="convoy-title">
        <a href={beadUrl(city, c.convoy.id)}>{c.convoy.id}</a> {c.convoy.title} <StateBadge state={c.convoy.status} />
      </h2>
      <div class="progress">
        <meter min={0} max={total || 1} value={closed} aria-label={`Progress of ${c.convoy.id}`}>
          {pct}%
        </meter>
        <span>
          {closed} of {total} closed ({pct}%)
        </span>
        {c.convoy.status !== 'closed' && (
          <ActionButton
            label="Close"
            name={`Close convoy ${c.convoy.id}`}
            done={`Closed ${c.convoy.id}`}
            run={() =>
              must(
                api.POST('/v0/city/{cityName}/convoy/{id}/close', {
                  params: { path: { cityName: city, id: c.convoy.id }, header: CSRF },
                }),
              )
            }
          />
        )}
      </div>
      {c.children.length > 0 && (
        <details>
          <summary>
            {c.children.length} {c.children.length === 1 ? 'bead' : 'beads'}
          </summary>
          <ul>
            {c.children.map((b) => (
              <li key={b.id}>
                <a href={beadUrl(city, b.id)}>{b.id}</a> {b.title} <StateBadge state={b.status} />
                {b.assignee && <span class="muted small"> · {b.assignee}</span>}
              </li>
            ))}
          </ul>
        </details>
      )}
    </li>
  );
}
