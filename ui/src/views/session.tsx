import { useEffect, useState } from 'preact/hooks';
import { api, CSRF, must, type Schemas } from '../api.js';
import {
  ActionButton,
  announce,
  cityUrl,
  ErrorNote,
  HostBadge,
  Page,
  StateBadge,
  type Confirmation,
} from '../components.js';
import { useCityEvents, useLoad, useStream, type Loaded } from '../hooks.js';
import { rigOfAgent } from '../review-rows.js';
import { changesOverlaps, RigOverlaps } from './rig-overlaps.js';
import { Transcript, type Entry } from './transcript.js';

type Pending = Schemas['PendingInteraction'];
/**
 * The session view, with the fields a newer controller adds (its model and how full its context is) read when
 * present: shown when the view has them, never guessed.
 */
type SessionWithModel = Schemas['SessionResponse'] & { model?: string; context_pct?: number };
/** How many lines of a terminal session's screen the page shows. */
const SCREEN_LINES = 40;
type Intent = Schemas['SubmitIntent'];
const ACTIONS = ['stop', 'kill', 'suspend', 'wake', 'close'] as const;
type Action = (typeof ACTIONS)[number];
const ACTION_WORDS: Record<Action, { label: string; done: string; confirm?: Confirmation }> = {
  stop: { label: 'Stop', done: 'Stopping the session' },
  kill: {
    label: 'Kill',
    done: 'Killed the program',
    confirm: {
      title: 'Kill the program now?',
      body: 'Its turn is lost. The session sleeps until a message or Wake starts its program again.',
    },
  },
  suspend: { label: 'Suspend', done: 'Suspended the session' },
  wake: { label: 'Wake', done: 'Waking the session' },
  close: {
    label: 'Close',
    done: 'Closed the session',
    confirm: {
      title: 'Close this session for good?',
      body: 'Its program ends and it takes no more messages; its transcript stays readable.',
    },
  },
};

export function SessionView({ city, id }: { city: string; id: string }) {
  const path = { cityName: city, id };
  const session = useLoad(() => must(api.GET('/v0/city/{cityName}/session/{id}', { params: { path } })), [city, id]);
  const usage = useLoad(
    () => must(api.GET('/v0/city/{cityName}/usage', { params: { path: { cityName: city } } })),
    [city],
  );
  const [entries, setEntries] = useState<Entry[]>([]);
  const [pending, setPending] = useState<Pending | null | undefined>(undefined);
  const [activity, setActivity] = useState<string | undefined>(undefined);
  // Bumped on every frame of the session's stream: its output changed, so a terminal's screen is read again.
  const [outputs, setOutputs] = useState(0);
  const changed = () => setOutputs((n) => n + 1);
  const live = useStream(
    {
      path: `/v0/city/${encodeURIComponent(city)}/session/${encodeURIComponent(id)}/stream?format=raw`,
      resumeParam: 'after_seq',
      on: {
        message: (data) => {
          const entry = data as Entry;
          setEntries((all) => (all.length && all[all.length - 1]!.seq >= entry.seq ? all : [...all, entry]));
          changed();
        },
        activity: (data) => {
          setActivity((data as { activity: string }).activity);
          changed();
        },
        pending: (data) => {
          setPending(data as Pending);
          changed();
        },
        pending_cleared: () => {
          setPending(null);
          changed();
        },
      },
      onOpen: (resumed) => resumed && session.reload(),
    },
    [city, id],
  );
  const s: SessionWithModel | undefined = session.data;
  // A session in a worktree of a rig: what else of the rig changed its files (the rig is its agent's prefix).
  const rig = s?.worktree ? rigOfAgent(s.template) : undefined;
  const [overlapChanges, setOverlapChanges] = useState(0);
  useCityEvents(
    city,
    (e) => {
      if (e.payload?.session_id === id) {
        session.reload();
        if (e.type.startsWith('session.usage') || e.type.startsWith('session.turn')) usage.reload();
      }
      if (rig && changesOverlaps(e, rig)) setOverlapChanges((n) => n + 1);
    },
    (resumed) => resumed && setOverlapChanges((n) => n + 1),
  );
  const shownPending = pending === undefined ? s?.pending : (pending ?? undefined);
  const mine = usage.data?.by_session?.find((g) => g.name === id);
  return (
    <Page title={s ? `Session ${s.alias ?? s.title ?? id}` : `Session ${id}`} live={live}>
      <ErrorNote error={session.error} />
      {s && (
        <dl class="facts">
          <div>
            <dt>State</dt>
            <dd>
              <StateBadge state={s.state} /> {(activity ?? s.activity) === 'in-turn' && <StateBadge state="working" />}
            </dd>
          </div>
          <div>
            <dt>Agent</dt>
            <dd>{s.template}</dd>
          </div>
          <div>
            <dt>Provider</dt>
            <dd>{s.provider}</dd>
          </div>
          <div>
            <dt>Host</dt>
            <dd>
              <HostBadge city={city} host={s.host} />
            </dd>
          </div>
          {s.model && (
            <div>
              <dt>Model</dt>
              <dd>{s.model}</dd>
            </div>
          )}
          {s.context_pct !== undefined && (
            <div>
              <dt>Context used</dt>
              <dd>
                <meter min={0} max={100} low={70} high={90} optimum={0} value={s.context_pct} aria-label="Context used">
                  {s.context_pct}%
                </meter>{' '}
                {Math.round(s.context_pct)}%
              </dd>
            </div>
          )}
          {s.permission_mode && (
            <div>
              <dt>Permissions</dt>
              <dd>{s.permission_mode}</dd>
            </div>
          )}
          {mine && (
            <div>
              <dt>Tokens</dt>
              <dd>
                {mine.input_tokens} in, {mine.output_tokens} out, {mine.cache_read_tokens} cached
              </dd>
            </div>
          )}
          {s.queued > 0 && (
            <div>
              <dt>Queued</dt>
              <dd>{s.queued}</dd>
            </div>
          )}
          {s.reason && (
            <div>
              <dt>Why</dt>
              <dd>{s.reason}</dd>
            </div>
          )}
        </dl>
      )}
      <div class="toolbar" role="toolbar" aria-label="Session actions">
        {ACTIONS.map((action) => (
          <ActionButton
            key={action}
            label={ACTION_WORDS[action].label}
            done={ACTION_WORDS[action].done}
            confirm={ACTION_WORDS[action].confirm}
            kind={action === 'kill' || action === 'close' ? 'danger' : undefined}
            run={async () => {
              await must(api.POST(`/v0/city/{cityName}/session/{id}/${action}`, { params: { path, header: CSRF } }));
              session.reload();
            }}
          />
        ))}
        <a href={cityUrl(city)}>Back to {city}</a>
      </div>
      {shownPending && <PendingPanel city={city} id={id} pending={shownPending} onAnswered={() => setPending(null)} />}
      {s?.attach && <ScreenPeek city={city} id={id} outputs={outputs} running={s.running} />}
      {rig && <RigOverlaps city={city} rig={rig} self={{ session_id: id }} changes={overlapChanges} />}
      <Transcript entries={entries} />
      <MessageBox city={city} id={id} capabilities={s?.submission_capabilities} />
    </Page>
  );
}

function PendingPanel(props: { city: string; id: string; pending: Pending; onAnswered: () => void }) {
  const { pending } = props;
  const [reason, setReason] = useState('');
  const [answer, setAnswer] = useState('');
  const respond = async (action: string, text?: string) => {
    await must(
      api.POST('/v0/city/{cityName}/session/{id}/respond', {
        params: { path: { cityName: props.city, id: props.id }, header: CSRF },
        body: { action, request_id: pending.request_id, ...(text ? { text } : {}) },
      }),
    );
    props.onAnswered();
  };
  const isQuestion = pending.kind !== 'tool-approval' && pending.kind !== 'permission';
  return (
    <section class="pending" aria-labelledby="pending-h">
      <h2 id="pending-h">Waiting for you: {isQuestion ? 'a question' : 'a permission'}</h2>
      <p class="prompt">{pending.prompt ?? pending.kind}</p>
      {isQuestion ? (
        <div class="inline-form">
          <label>
            Answer
            <input value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
          </label>
          <ActionButton label="Answer" kind="primary" done="Answered" run={() => respond('answer', answer)} />
        </div>
      ) : (
        <div class="inline-form">
          <ActionButton label="Allow" kind="primary" done="Allowed" run={() => respond('allow')} />
          <label>
            Reason for a denial
            <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          </label>
          <ActionButton label="Deny" kind="danger" done="Denied" run={() => respond('deny', reason)} />
        </div>
      )}
    </section>
  );
}

function MessageBox(props: { city: string; id: string; capabilities?: Schemas['SubmissionCapabilities'] }) {
  const [message, setMessage] = useState('');
  const [intent, setIntent] = useState<Intent>('default');
  const [busy, setBusy] = useState(false);
  const send = async () => {
    if (!message.trim()) return;
    setBusy(true);
    try {
      await must(
        api.POST('/v0/city/{cityName}/session/{id}/submit', {
          params: { path: { cityName: props.city, id: props.id }, header: CSRF },
          body: { message, intent },
        }),
      );
      setMessage('');
      announce('Message sent');
    } catch (err) {
      announce(`Sending failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="message-box"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label class="grow">
        Message
        <textarea
          rows={3}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void send();
            }
          }}
          aria-describedby="message-hint"
        />
      </label>
      <span id="message-hint" class="muted small">
        Ctrl+Enter sends.
      </span>
      <label>
        Deliver
        <select value={intent} onChange={(e) => setIntent(e.currentTarget.value as Intent)}>
          <option value="default">now</option>
          <option value="follow_up" disabled={props.capabilities?.supports_follow_up === false}>
            after the current turn (follow up)
          </option>
          <option value="interrupt_now" disabled={props.capabilities?.supports_interrupt_now === false}>
            interrupting the current turn
          </option>
        </select>
      </label>
      <button type="submit" class="primary" disabled={busy || !message.trim()}>
        Send
      </button>
    </form>
  );
}

/**
 * A terminal (tmux) session's screen as the program shows it now (`GET …/session/{id}?peek=true`), read again
 * whenever the session's stream says its output changed — a message, a turn starting or ending, a question — and
 * never on a timer.
 */
function ScreenPeek(props: { city: string; id: string; outputs: number; running: boolean }) {
  const screen: Loaded<string> = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/session/{id}', {
          params: {
            path: { cityName: props.city, id: props.id },
            query: { peek: true, peek_lines: SCREEN_LINES },
          },
        }),
      ).then((view) => view.last_output ?? ''),
    [props.city, props.id],
  );
  useEffect(() => {
    if (props.outputs > 0) screen.reload();
  }, [props.outputs, props.running]);
  return (
    <section aria-labelledby="screen-h">
      <h2 id="screen-h">Screen</h2>
      <ErrorNote error={screen.error} />
      {screen.data !== undefined && (
        <pre class="screen" tabIndex={0} role="region" aria-label="The program's screen">
          {screen.data || (props.running ? '(blank)' : '(the program is not running)')}
        </pre>
      )}
    </section>
  );
}
