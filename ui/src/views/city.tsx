import { useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type LiveEvent, type Schemas } from '../api.js';
import {
  ActionButton,
  announce,
  cityUrl,
  Empty,
  ErrorNote,
  HostBadge,
  Loading,
  Page,
  StateBadge,
  Time,
} from '../components.js';
import { useCityEvents, useFrameBatch, useLoad } from '../hooks.js';

type Agent = Schemas['AgentResponse'];
type Session = Schemas['SessionResponse'];

const agentUrl = (city: string, name: string) =>
  cityUrl(city, `/agent/${name.split('/').map(encodeURIComponent).join('/')}`);
export const sessionUrl = (city: string, id: string) => cityUrl(city, `/session/${encodeURIComponent(id)}`);

function agentState(a: Agent): string {
  if (a.suspended) return 'suspended';
  if (a.state === 'quarantined') return 'quarantined';
  if (a.wait_reason) return 'waiting';
  if (a.activity === 'in-turn') return 'working';
  return a.running ? (a.activity ?? a.state) : a.state;
}

export function CityView({ city }: { city: string }) {
  const p = { params: { path: cityPath(city) } };
  const status = useLoad(() => must(api.GET('/v0/city/{cityName}/status', p)), [city]);
  const agents = useLoad(() => must(api.GET('/v0/city/{cityName}/agents', p)), [city]);
  const sessions = useLoad(
    () => must(api.GET('/v0/city/{cityName}/sessions', { params: { path: cityPath(city), query: { limit: 200 } } })),
    [city],
  );
  const ready = useLoad(
    () => must(api.GET('/v0/city/{cityName}/beads/ready', { params: { path: cityPath(city), query: { limit: 50 } } })),
    [city],
  );
  const readiness = useLoad(() => must(api.GET('/v0/city/{cityName}/provider-readiness', p)), [city]);
  const initial = useLoad(
    () => must(api.GET('/v0/city/{cityName}/events', { params: { path: cityPath(city), query: { limit: 20 } } })),
    [city],
  );
  const [recent, setRecent] = useState<LiveEvent[]>([]);
  const addRecent = useFrameBatch<LiveEvent>((batch) => setRecent((all) => [...batch.reverse(), ...all].slice(0, 20)));
  const live = useCityEvents(
    city,
    (e) => {
      addRecent(e);
      if (e.type.startsWith('session.') || e.type.startsWith('request.result.session')) sessions.reload();
      if (e.type.startsWith('agent.') || e.type.startsWith('session.')) agents.reload();
      if (e.type.startsWith('bead.')) ready.reload();
      // What the counts are made of; a program's own events (any type it likes) change none of them.
      if (/^(agent|session|bead|mail|rig|city|config|controller|order|molecule)\./.test(e.type)) status.reload();
    },
    (resumed) => {
      if (resumed) for (const l of [status, agents, sessions, ready]) l.reload();
    },
  );
  const events = [...recent, ...((initial.data?.items as LiveEvent[] | undefined) ?? [])]
    .filter((e, i, all) => all.findIndex((x) => x.seq === e.seq) === i)
    .slice(0, 20);
  const problems = Object.entries(readiness.data?.providers ?? {}).filter(
    ([, r]) => (r as { status?: string }).status !== 'configured' && (r as { status?: string }).status !== 'ready',
  );
  const s = status.data;
  return (
    <Page title={`City ${city}`} live={live}>
      <ErrorNote error={status.error} />
      {s && (
        <dl class="facts">
          <div>
            <dt>Agents running</dt>
            <dd>
              {s.agents.running} of {s.agents.total}
              {s.agents.quarantined ? `, ${s.agents.quarantined} quarantined` : ''}
              {s.agents.suspended ? `, ${s.agents.suspended} suspended` : ''}
            </dd>
          </div>
          <div>
            <dt>Work</dt>
            <dd>{s.work ? `${s.work.open} open, ${s.work.ready} ready, ${s.work.in_progress} in progress` : '—'}</dd>
          </div>
          <div>
            <dt>Mail</dt>
            <dd>{s.mail ? `${s.mail.unread} unread` : '—'}</dd>
          </div>
          <div>
            <dt>Up</dt>
            <dd>{Math.round(s.uptime_sec / 60)} min</dd>
          </div>
          {s.config_reload_error && (
            <div>
              <dt>Config</dt>
              <dd class="error">{s.config_reload_error}</dd>
            </div>
          )}
        </dl>
      )}
      {problems.length > 0 && (
        <section aria-labelledby="ready-h">
          <h2 id="ready-h">Provider problems</h2>
          <ul>
            {problems.map(([name, r]) => (
              <li key={name}>
                <strong>{name}</strong>: {JSON.stringify(r)}
              </li>
            ))}
          </ul>
        </section>
      )}
      <section aria-labelledby="agents-h">
        <h2 id="agents-h">Agents</h2>
        {agents.loading && !agents.data && <Loading what="agents" />}
        <ErrorNote error={agents.error} />
        {agents.data && agents.data.items.length === 0 && <Empty>No agents.</Empty>}
        {agents.data && agents.data.items.length > 0 && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  <th scope="col">State</th>
                  <th scope="col">Holds</th>
                  <th scope="col">Last output</th>
                </tr>
              </thead>
              <tbody>
                {agents.data.items.map((a) => (
                  <tr key={a.name}>
                    <th scope="row">
                      <a href={agentUrl(city, a.name)}>{a.display_name ?? a.name}</a>
                    </th>
                    <td>
                      <StateBadge state={agentState(a)} />
                      {a.wait_reason && <div class="small">{a.wait_reason}</div>}
                    </td>
                    <td>
                      {a.active_bead ? (
                        <a href={cityUrl(city, `/bead/${encodeURIComponent(a.active_bead)}`)}>{a.active_bead}</a>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td class="clip">{a.last_output ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="sessions-h">
        <h2 id="sessions-h">Sessions</h2>
        <ErrorNote error={sessions.error} />
        {sessions.data && sessions.data.items.length === 0 && <Empty>No sessions.</Empty>}
        {sessions.data && sessions.data.items.length > 0 && <SessionTable city={city} sessions={sessions.data.items} />}
        <NewSession city={city} templates={(agents.data?.items ?? []).map((a) => a.name)} onDone={sessions.reload} />
      </section>
      <div class="columns">
        <section aria-labelledby="work-h">
          <h2 id="work-h">Ready work</h2>
          {ready.data && ready.data.items.length === 0 && <Empty>Nothing is ready.</Empty>}
          <ul>
            {ready.data?.items.map((b) => (
              <li key={b.id}>
                <a href={cityUrl(city, `/bead/${encodeURIComponent(b.id)}`)}>{b.id}</a> {b.title}
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="events-h">
          <h2 id="events-h">Recent events</h2>
          <ol class="feed">
            {events.map((e) => (
              <li key={e.seq}>
                <Time iso={e.ts} /> <code>{e.type}</code> <span class="muted">{e.subject}</span>
              </li>
            ))}
          </ol>
        </section>
      </div>
    </Page>
  );
}

function SessionTable({ city, sessions }: { city: string; sessions: Session[] }) {
  // Sessions waiting on a person first: they are what someone opening the page is most likely here for.
  const sorted = [...sessions].sort((a, b) => Number(!!b.pending) - Number(!!a.pending));
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Agent</th>
            <th scope="col">State</th>
            <th scope="col">Host</th>
            <th scope="col">Last output</th>
          </tr>
        </thead>
        <tbody>
          {sorted.map((s) => (
            <tr key={s.id}>
              <th scope="row">
                <a href={sessionUrl(city, s.id)}>{s.alias ?? s.title ?? s.id}</a>
                <div class="muted small">{s.id}</div>
              </th>
              <td>{s.template}</td>
              <td>
                <StateBadge state={s.pending ? 'waiting' : s.state} />{' '}
                {s.activity === 'in-turn' && <StateBadge state="working" />}
                {s.pending && <div class="small">asks: {s.pending.prompt ?? s.pending.kind}</div>}
                {s.state === 'lost' && s.reason && <div class="small">{s.reason}</div>}
              </td>
              <td>
                <HostBadge city={city} host={s.host} />
              </td>
              <td class="clip">{s.last_output ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function NewSession({ city, templates, onDone }: { city: string; templates: string[]; onDone: () => void }) {
  const [template, setTemplate] = useState('');
  const [message, setMessage] = useState('');
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
      }}
    >
      <label>
        Agent
        <select value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
          <option value="">(the city's default)</option>
          {templates.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <label>
        First message (optional)
        <input value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
      </label>
      <ActionButton
        label="Start session"
        kind="primary"
        run={async () => {
          const accepted = await must(
            api.POST('/v0/city/{cityName}/sessions', {
              params: { path: cityPath(city), header: CSRF },
              body: { ...(template ? { name: template } : {}), ...(message ? { message } : {}) },
            }),
          );
          announce(`Starting session ${(accepted as { session_id?: string }).session_id ?? ''}`);
          setMessage('');
          onDone();
        }}
      />
    </form>
  );
}
