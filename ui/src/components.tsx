import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConfirmDialog } from './confirm-dialog.js';
import { hostBadge } from './host-rows.js';
import { cityUrl } from './urls.js';
import type { StreamStatus } from './live.js';

/** Messages for everyone, screen readers included (one polite live region for the whole page). */
const announceListeners = new Set<(m: Notice) => void>();
interface Notice {
  id: number;
  text: string;
  kind: 'ok' | 'error';
}
let noticeId = 0;
export function announce(text: string, kind: Notice['kind'] = 'ok'): void {
  const notice = { id: ++noticeId, text, kind };
  for (const l of announceListeners) l(notice);
}

export function Notices() {
  const [notices, setNotices] = useState<Notice[]>([]);
  useEffect(() => {
    const listener = (n: Notice) => {
      setNotices((all) => [...all.slice(-3), n]);
      setTimeout(() => setNotices((all) => all.filter((x) => x.id !== n.id)), n.kind === 'error' ? 12_000 : 5_000);
    };
    announceListeners.add(listener);
    return () => announceListeners.delete(listener);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {notices.map((n) => (
        <p key={n.id} class={`notice notice-${n.kind}`}>
          {n.text}
        </p>
      ))}
    </div>
  );
}

/** A view's heading and title; focus moves to the heading when the view opens, so a screen reader hears it. */
export function Page(props: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
  live?: StreamStatus;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · ctl`;
  }, [props.title]);
  useEffect(() => {
    if (document.activeElement === document.body || document.activeElement === null) heading.current?.focus();
  }, []);
  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1} ref={heading}>
          {props.title}
        </h1>
        {props.live && <LiveBadge status={props.live} />}
        {props.actions && <div class="actions">{props.actions}</div>}
      </div>
      {props.children}
    </>
  );
}

export function LiveBadge({ status }: { status: StreamStatus }) {
  const text =
    status.state === 'live'
      ? 'Live'
      : status.state === 'refused'
        ? `Not live: ${status.detail ?? 'refused'}`
        : status.state === 'down'
          ? 'Offline'
          : status.state === 'reconnecting'
            ? 'Reconnecting…'
            : 'Connecting…';
  return <span class={`live live-${status.state}`}>{text}</span>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}

export function ErrorNote({ error }: { error: string | undefined }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

/** What a confirming button asks before its request goes (shown in a `ConfirmDialog`). */
export interface Confirmation {
  /** The question, and the dialog's accessible name: "Kill the program now?". */
  title: string;
  /** What follows if they go ahead. */
  body: string;
  /** The button that goes ahead; the button's own label when absent. */
  action?: string;
  /** The button that leaves things as they are; "Cancel" when absent. */
  keep?: string;
}

/**
 * A button whose action is a request: disabled while it runs, the outcome announced. With `confirm` it first asks
 * in a `ConfirmDialog`; a refusal is then shown in that dialog, which stays open, rather than announced.
 */
export function ActionButton(props: {
  label: string;
  /** The accessible name when the visible label alone is ambiguous (a row's "Stop" says whose). */
  name?: string;
  run: () => Promise<unknown>;
  done?: string;
  confirm?: Confirmation;
  kind?: 'danger' | 'primary';
  disabled?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [asking, setAsking] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const click = async () => {
    setBusy(true);
    try {
      await props.run();
      if (props.done) announce(props.done);
    } catch (err) {
      announce(`${props.name ?? props.label} failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  const confirm = props.confirm;
  return (
    <>
      <button
        ref={button}
        type="button"
        class={props.kind ?? ''}
        aria-label={props.name}
        aria-haspopup={confirm ? 'dialog' : undefined}
        disabled={busy || props.disabled}
        aria-busy={busy}
        onClick={() => (confirm ? setAsking(true) : void click())}
      >
        {props.label}
      </button>
      {confirm && asking && (
        <ConfirmDialog
          title={confirm.title}
          confirm={confirm.action ?? props.label}
          keep={confirm.keep}
          run={async () => {
            await props.run();
            if (props.done) announce(props.done);
          }}
          onClose={() => setAsking(false)}
          returnFocusTo={button}
        >
          <p>{confirm.body}</p>
        </ConfirmDialog>
      )}
    </>
  );
}

/** A state word as a badge (colour and text: the word carries the meaning, the colour only helps). */
export function StateBadge({ state }: { state: string | undefined }) {
  if (!state) return null;
  return <span class={`badge badge-${state.replace(/[^a-z_-]/gi, '')}`}>{state}</span>;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
export function Time({ iso }: { iso: string | undefined }) {
  if (!iso) return null;
  const when = new Date(iso);
  const seconds = Math.round((when.getTime() - Date.now()) / 1000);
  const abs = Math.abs(seconds);
  const text =
    abs < 60
      ? relative.format(seconds, 'second')
      : abs < 3600
        ? relative.format(Math.round(seconds / 60), 'minute')
        : abs < 86400
          ? relative.format(Math.round(seconds / 3600), 'hour')
          : when.toLocaleString();
  return (
    <time dateTime={iso} title={when.toLocaleString()}>
      {text}
    </time>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="muted">{children}</p>;
}

export { cityUrl };

/**
 * Where a session's programs run: `local`, or a remote `[[host]]` — drawn apart (its own colour and a mark) and
 * said apart ("remote host"), linking to the city's Hosts view, where its state is.
 */
export function HostBadge({ city, host }: { city: string; host: string | undefined }) {
  const badge = hostBadge(host);
  if (!badge.remote) return <span class="host-badge host-local">{badge.text}</span>;
  return (
    <a class="host-badge host-remote" href={cityUrl(city, '/hosts')}>
      <span aria-hidden="true">⇄ </span>
      {badge.text}
      <span class="sr-only"> ({badge.said})</span>
    </a>
  );
}
