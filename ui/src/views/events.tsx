import { useEffect, useRef, useState } from 'preact/hooks';
import { api, must, type LiveEvent } from '../api.js';
import { ErrorNote, Page, Time } from '../components.js';
import { useQueryParam, useStream } from '../hooks.js';

const KEEP = 1000;

function matches(e: LiveEvent, f: { type: string; city: string; actor: string; subject: string }): boolean {
  return (
    (!f.type || e.type.startsWith(f.type)) &&
    (!f.city || e.city === f.city) &&
    (!f.actor || e.actor.includes(f.actor)) &&
    (!f.subject || (e.subject ?? '').includes(f.subject))
  );
}

/**
 * Every log's events, merged, as they happen. Frames are collected as they come and drawn once per animation
 * frame, so hundreds a second cost a few renders, not hundreds. Paused, the stream is closed and its cursor kept:
 * resuming reopens it there, so nothing in between is lost.
 */
export function EventsView() {
  const [type, setType] = useQueryParam('type');
  const [city, setCity] = useQueryParam('city');
  const [actor, setActor] = useQueryParam('actor');
  const [subject, setSubject] = useQueryParam('subject');
  const [paused, setPaused] = useState(false);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);
  const incoming = useRef<LiveEvent[]>([]);
  const frame = useRef(0);
  const lastId = useRef<string | undefined>(undefined);

  useEffect(() => {
    // The recent past first, then live from the cursor the list returned (no gap, no duplicate).
    must(api.GET('/v0/events', { params: { query: { limit: 100 } } })).then(
      (page) => {
        setEvents((page.items as LiveEvent[]).slice().reverse());
        setCursor(page.event_cursor);
      },
      (err: Error) => {
        setError(err.message);
        setCursor('');
      },
    );
    return () => cancelAnimationFrame(frame.current);
  }, []);

  const flush = () => {
    frame.current = 0;
    const batch = incoming.current;
    incoming.current = [];
    setEvents((all) => [...batch.reverse(), ...all].slice(0, KEEP));
  };
  const live = useStream(
    cursor === undefined || paused
      ? undefined
      : {
          path: '/v0/events/stream',
          resumeParam: 'after_cursor',
          after: cursor || undefined,
          on: {
            tagged_event: (data, id) => {
              lastId.current = id;
              incoming.current.push(data as LiveEvent);
              if (!frame.current) frame.current = requestAnimationFrame(flush);
            },
          },
        },
    [cursor, paused],
  );
  const filter = { type, city, actor, subject };
  const shown = events.filter((e) => matches(e, filter));
  return (
    <Page
      title="Events"
      live={paused ? { state: 'refused', detail: 'paused' } : live}
      actions={
        <button
          type="button"
          aria-pressed={paused}
          onClick={() => {
            if (!paused) setCursor(lastId.current ?? cursor);
            setPaused(!paused);
          }}
        >
          {paused ? 'Resume' : 'Pause'}
        </button>
      }
    >
      <ErrorNote error={error} />
      <form class="filters" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <label>
          Type starts with
          <input value={type} onInput={(e) => setType(e.currentTarget.value.trim())} />
        </label>
        <label>
          City
          <input value={city} onInput={(e) => setCity(e.currentTarget.value.trim())} />
        </label>
        <label>
          Actor
          <input value={actor} onInput={(e) => setActor(e.currentTarget.value.trim())} />
        </label>
        <label>
          Subject
          <input value={subject} onInput={(e) => setSubject(e.currentTarget.value.trim())} />
        </label>
      </form>
      <p class="muted small">
        {shown.length} of the {events.length} latest events{paused ? ' (paused)' : ''}.
      </p>
      <div class="table-wrap">
        <table class="events">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Type</th>
              <th scope="col">City</th>
              <th scope="col">Actor</th>
              <th scope="col">Subject</th>
            </tr>
          </thead>
          <tbody>
            {shown.slice(0, 300).map((e) => (
              <tr key={`${e.city}:${e.seq}`}>
                <td>
                  <Time iso={e.ts} />
                </td>
                <td>
                  <code>{e.type}</code>
                </td>
                <td>{e.city === '__supervisor__' ? 'supervisor' : e.city}</td>
                <td>{e.actor}</td>
                <td>{e.subject ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Page>
  );
}
