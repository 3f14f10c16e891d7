import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { announce } from './components.js';
import { LiveStream } from './live.js';
import { noticeOf, type TaggedEvent } from './notices.js';

// Browser notifications, for a person who turns them on: a session waiting on them (a permission or a question),
// a failed run, a quarantined agent — the kinds `[notify]` of supervisor.toml sends, read from the supervisor
// stream (every city). The browser's permission is asked only when the person clicks the button; once granted,
// the choice is remembered here (localStorage), and a later visit follows again without asking.

const STORED = 'ctl.notifications';

const supported = () => typeof window !== 'undefined' && 'Notification' in window;

function storedOn(): boolean {
  try {
    return localStorage.getItem(STORED) === 'on';
  } catch {
    return false;
  }
}

function store(on: boolean): void {
  try {
    if (on) localStorage.setItem(STORED, 'on');
    else localStorage.removeItem(STORED);
  } catch {
    // storage refused (a private window): the choice lasts for this page only
  }
}

/** The header's button: turns notifications on (asking the browser, on this click only) and off. */
export function NotificationsToggle() {
  const { route } = useLocation();
  const [on, setOn] = useState(() => supported() && storedOn() && Notification.permission === 'granted');

  useEffect(() => {
    if (!on) return;
    const stream = new LiveStream({
      path: '/v0/events/stream',
      resumeParam: 'after_cursor',
      on: {
        tagged_event: (data) => {
          const e = data as TaggedEvent;
          const notice = noticeOf(e);
          if (!notice || Notification.permission !== 'granted') return;
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
      store(false);
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
    store(true);
    setOn(true);
    announce('Notifications are on: a session waiting for you, a failed run, a quarantined agent.');
  };
  return (
    <button
      type="button"
      class="notify-toggle"
      aria-pressed={on}
      title="Browser notifications: a session waiting for you, a failed run, a quarantined agent"
      onClick={() => void toggle()}
    >
      Notifications
    </button>
  );
}
