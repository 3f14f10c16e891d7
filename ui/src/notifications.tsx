import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { announce } from './components.js';
import { LiveStream } from './live.js';
import {
  KIND_LABELS,
  kindsOff,
  NOTICE_KINDS,
  noticeOf,
  storedKindsOff,
  type NoticeKind,
  type TaggedEvent,
} from './notices.js';

// Browser notifications, for a person who turns them on: a session waiting on them (a permission or a question),
// a failed run, a quarantined agent, a review waiting — the kinds `[notify]` of supervisor.toml sends, read from the supervisor
// stream (every city), each kind chosen apart. The browser's permission is asked only when the person clicks the
// button; once granted, the choice (on, and the kinds turned off) is remembered here (localStorage), so a later
// visit follows again without asking, and another tab of the page follows a change at once.

const STORED = 'ctl.notifications';
const STORED_OFF = 'ctl.notifications.off';

const supported = () => typeof window !== 'undefined' && 'Notification' in window;

function read(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // storage refused (a private window): the choice lasts for this page only
  }
}

const grantedAnd = (stored: string | null) => supported() && stored === 'on' && Notification.permission === 'granted';

/** The header's button, which turns notifications on (asking the browser, on this click only) and off, and the kinds. */
export function NotificationsToggle() {
  const { route } = useLocation();
  const [on, setOn] = useState(() => grantedAnd(read(STORED)));
  const [off, setOff] = useState(() => kindsOff(read(STORED_OFF)));
  // The stream's handler reads the kinds as they are now, without reopening the stream when they change.
  const offNow = useRef(off);
  offNow.current = off;

  useEffect(() => {
    const changed = (e: StorageEvent) => {
      if (e.key === STORED) setOn(grantedAnd(e.newValue));
      else if (e.key === STORED_OFF) setOff(kindsOff(e.newValue));
    };
    window.addEventListener('storage', changed);
    return () => window.removeEventListener('storage', changed);
  }, []);

  useEffect(() => {
    if (!on) return;
    const stream = new LiveStream({
      path: '/v0/events/stream',
      resumeParam: 'after_cursor',
      on: {
        tagged_event: (data) => {
          const e = data as TaggedEvent;
          const notice = noticeOf(e);
          if (!notice || offNow.current.has(notice.kind) || Notification.permission !== 'granted') return;
          const shown = new Notification(notice.title, { body: notice.body, tag: `${e.city}:${e.seq}` });
          shown.onclick = () => {
            window.focus();
            route(notice.path);
            shown.close();
          };
        },
      },
    });
    return () => stream.close();
  }, [on]);

  if (!supported()) return null;
  const toggle = async () => {
    if (on) {
      write(STORED, null);
      setOn(false);
      announce('Notifications are off.');
      return;
    }
    const permission =
      Notification.permission === 'default' ? await Notification.requestPermission() : Notification.permission;
    if (permission !== 'granted') {
      announce('This browser blocks notifications from this page; allow them in its site settings.', 'error');
      return;
    }
    write(STORED, 'on');
    setOn(true);
    const kinds = NOTICE_KINDS.filter((kind) => !off.has(kind));
    announce(
      kinds.length
        ? `Notifications are on: ${kinds.map((kind) => KIND_LABELS[kind].toLowerCase()).join('; ')}.`
        : 'Notifications are on, but every kind is turned off: choose some under Kinds.',
    );
  };
  const choose = (kind: NoticeKind, wanted: boolean) => {
    const next = new Set(off);
    if (wanted) next.delete(kind);
    else next.add(kind);
    write(STORED_OFF, storedKindsOff(next));
    setOff(next);
  };
  return (
    <div class="notify">
      <button
        type="button"
        aria-pressed={on}
        title="Browser notifications: a session waiting for you, a failed run, a quarantined agent, a review to decide"
        onClick={() => void toggle()}
      >
        Notifications
      </button>
      <KindsChooser off={off} on={on} choose={choose} />
    </div>
  );
}

/** A disclosure under the button: a checkbox per kind. Escape or a click elsewhere folds it. */
function KindsChooser(props: {
  off: Set<NoticeKind>;
  on: boolean;
  choose: (kind: NoticeKind, wanted: boolean) => void;
}) {
  const [open, setOpen] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLFieldSetElement>(null);
  useEffect(() => {
    if (!open) return;
    const away = (e: PointerEvent) => {
      const target = e.target as Node;
      if (!panel.current?.contains(target) && !opener.current?.contains(target)) setOpen(false);
    };
    document.addEventListener('pointerdown', away);
    return () => document.removeEventListener('pointerdown', away);
  }, [open]);
  return (
    <>
      <button
        type="button"
        ref={opener}
        aria-label="Notification kinds"
        aria-expanded={open}
        aria-controls="notify-kinds"
        onClick={() => setOpen(!open)}
      >
        Kinds
      </button>
      <fieldset
        id="notify-kinds"
        class="notify-kinds"
        ref={panel}
        hidden={!open}
        onKeyDown={(e) => {
          if (e.key !== 'Escape') return;
          setOpen(false);
          opener.current?.focus();
        }}
      >
        <legend>Notify me when</legend>
        {NOTICE_KINDS.map((kind) => (
          <label key={kind}>
            <input
              type="checkbox"
              checked={!props.off.has(kind)}
              onChange={(e) => props.choose(kind, e.currentTarget.checked)}
            />
            {KIND_LABELS[kind]}
          </label>
        ))}
        {!props.on && <p class="muted">Nothing is shown until Notifications is on.</p>}
      </fieldset>
    </>
  );
}
