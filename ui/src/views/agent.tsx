import { useState } from 'preact/hooks';
import { api, CSRF, must } from '../api.js';
import { ActionButton, ErrorNote, Page, StateBadge } from '../components.js';
import { useLoad, useReloadOn, useStream } from '../hooks.js';
import { sessionUrl } from './city.js';

interface Turn {
  seq: number;
  role: string;
  text: string;
}

export function AgentView({ city, agent }: { city: string; agent: string }) {
  const [dir, base] = agent.includes('/')
    ? [agent.slice(0, agent.lastIndexOf('/')), agent.slice(agent.lastIndexOf('/') + 1)]
    : [undefined, agent];
  const load = () =>
    dir
      ? must(api.GET('/v0/city/{cityName}/agent/{dir}/{base}', { params: { path: { cityName: city, dir, base } } }))
      : must(api.GET('/v0/city/{cityName}/agent/{base}', { params: { path: { cityName: city, base } } }));
  const info = useLoad(load, [city, agent]);
  const live = useReloadOn(city, (e) => e.payload?.agent === agent || e.subject === agent, info);
  const [turns, setTurns] = useState<(Turn & { key: string })[]>([]);
  const agentPath = agent.split('/').map(encodeURIComponent).join('/');
  useStream(
    {
      path: `/v0/city/${encodeURIComponent(city)}/agent/${agentPath}/output/stream`,
      on: {
        turn: (data, id) => {
          const body = data as { turns: Turn[] };
          setTurns((all) => [...all, ...body.turns.map((t, i) => ({ ...t, key: `${id}:${i}` }))].slice(-500));
        },
      },
    },
    [city, agent],
  );
  const a = info.data;
  const action = (name: 'suspend' | 'resume') => () =>
    dir
      ? must(
          api.POST('/v0/city/{cityName}/agent/{dir}/{base}/{action}', {
            params: { path: { cityName: city, dir, base, action: name }, header: CSRF },
          }),
        )
      : must(
          api.POST('/v0/city/{cityName}/agent/{base}/{action}', {
            params: { path: { cityName: city, base, action: name }, header: CSRF },
          }),
        );
  return (
    <Page title={`Agent ${agent}`} live={live}>
      <ErrorNote error={info.error} />
      {a && (
        <p>
          <StateBadge state={a.suspended ? 'suspended' : a.state} /> {a.provider && <span>{a.provider}</span>}{' '}
          {a.session && <a href={sessionUrl(city, a.session.name)}>its session</a>}{' '}
          {a.wait_reason && <span class="muted">waiting: {a.wait_reason}</span>}
        </p>
      )}
      <div class="toolbar" role="toolbar" aria-label="Agent actions">
        <ActionButton label="Suspend" done="Suspended" run={action('suspend')} />
        <ActionButton label="Resume" done="Resumed" run={action('resume')} />
      </div>
      <h2>Output</h2>
      <div role="log" aria-label="Agent output">
        <ol class="transcript" tabIndex={0} aria-label="Agent output turns">
          {turns.length === 0 && <li class="muted">No output yet.</li>}
          {turns.map((t) => (
            <li key={t.key} class={`turn turn-${t.role}`}>
              <span class="who">{t.role}</span>
              <div class="text">{t.text}</div>
            </li>
          ))}
        </ol>
      </div>
    </Page>
  );
}
