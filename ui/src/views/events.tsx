import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, must, type LiveEvent } from '../api.js';
import { ErrorNote, Page } from '../components.js';
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
      <EventTable events={shown} />
    </Page>
  );
}

/** Every row is this tall (styles.css `.events td`), so which rows are in view is arithmetic. */
const ROW_PX = 30;
/** Rows drawn beyond the visible ones, above and below, so a scroll shows no blank before the next frame. */
const OVERSCAN = 8;

const clock = (iso: string) => {
  const d = new Date(iso);
  return `${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`;
};

/**
 * The feed, windowed: only the rows in view (and a few more) are in the document, between two spacers of the
 * right height, so a thousand events cost the same to draw as thirty.
 */
function EventTable({ events }: { events: LiveEvent[] }) {
  const box = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight });
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  const first = Math.max(0, Math.floor(view.top / ROW_PX) - OVERSCAN);
  const last = Math.min(events.length, Math.ceil((view.top + view.height) / ROW_PX) + OVERSCAN);
  return (
    <div
      class="events-scroll"
      ref={box}
      tabIndex={0}
      role="region"
      aria-label="Event feed"
      onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
    >
      <table class="events" aria-rowcount={events.length + 1}>
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
          {first > 0 && <tr aria-hidden="true" style={{ height: `${first * ROW_PX}px` }} />}
          {events.slice(first, last).map((e, i) => (
            <tr key={`${e.city}:${e.seq}`} aria-rowindex={first + i + 2}>
              <td>
                <time dateTime={e.ts}>{clock(e.ts)}</time>
              </td>
              <td>
                <code>{e.type}</code>
              </td>
              <td>{e.city === '__supervisor__' ? 'supervisor' : e.city}</td>
              <td>{e.actor}</td>
              <td>{e.subject ?? ''}</td>
            </tr>
          ))}
          {last < events.length && <tr aria-hidden="true" style={{ height: `${(events.length - last) * ROW_PX}px` }} />}
        </tbody>
      </table>
    </div>
  );
}
