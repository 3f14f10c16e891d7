import { useRef, useState } from 'preact/hooks';
import { api, cityPath, CSRF, must, type Schemas } from '../api.js';
import { ActionButton, announce, Empty, ErrorNote, Loading, Page, Time } from '../components.js';
import { useLoad, useQueryParam, useReloadOn } from '../hooks.js';

type Message = Schemas['Message'];

/**
 * The city's mail: an inbox per recipient (`?to=` in the URL; everyone's when empty), all but archived or unread only, each message
 * opened to read it (marking it read), mark unread, archive, reply; and a form to send a new one. Live on the
 * city's `mail.*` events.
 */
export function MailView({ city }: { city: string }) {
  const [to, setTo] = useQueryParam('to');
  const [show, setShow] = useQueryParam('show');
  const agents = useLoad(
    () => must(api.GET('/v0/city/{cityName}/agents', { params: { path: cityPath(city) } })),
    [city],
  );
  const mail = useLoad(
    () =>
      must(
        api.GET('/v0/city/{cityName}/mail', {
          params: {
            path: cityPath(city),
            query: { limit: 200, status: show === 'unread' ? 'unread' : 'all', ...(to ? { agent: to } : {}) },
          },
        }),
      ),
    [city, to, show],
  );
  const live = useReloadOn(city, (e) => e.type.startsWith('mail.'), mail);
  const names = (agents.data?.items ?? []).map((a) => a.name);
  // Mail goes to anyone, not only agents: every recipient seen so far gets an inbox to pick.
  const seen = useRef(new Set<string>(['human']));
  for (const m of mail.data?.items ?? []) seen.current.add(m.to);
  if (to) seen.current.add(to);
  const inboxes = [...new Set([...names, ...seen.current])];
  return (
    <Page title={`Mail of ${city}`} live={live}>
      <form class="filters" aria-label="Which inbox" onSubmit={(e) => e.preventDefault()}>
        <label>
          Inbox of
          <select value={to} onChange={(e) => setTo(e.currentTarget.value)}>
            <option value="">everyone</option>
            {inboxes.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label>
          Show
          <select value={show} onChange={(e) => setShow(e.currentTarget.value)}>
            <option value="">all but archived</option>
            <option value="unread">unread only</option>
          </select>
        </label>
      </form>
      <ErrorNote error={mail.error} />
      {mail.loading && !mail.data && <Loading what="mail" />}
      {mail.data && (
        <p class="muted small">
          {mail.data.total} {show === 'unread' ? 'unread' : 'messages'}
          {to ? ` for ${to}` : ''}.
        </p>
      )}
      {mail.data && mail.data.items.length === 0 && <Empty>No mail here.</Empty>}
      <ul class="mail-list">
        {(mail.data?.items ?? []).map((m) => (
          <MessageItem key={m.id} city={city} message={m} />
        ))}
      </ul>
      <SendMail city={city} to={to} recipients={inboxes} />
    </Page>
  );
}

function MessageItem({ city, message: m }: { city: string; message: Message }) {
  const [reply, setReply] = useState('');
  const path = { cityName: city, id: m.id };
  const open = (e: Event) => {
    if (!(e.currentTarget as HTMLDetailsElement).open || m.read) return;
    must(api.POST('/v0/city/{cityName}/mail/{id}/read', { params: { path, header: CSRF } })).catch((err: Error) =>
      announce(`Marking ${m.id} read failed: ${err.message}`, 'error'),
    );
  };
  return (
    <li class={m.read ? 'mail' : 'mail unread'}>
      <details onToggle={open}>
        <summary>
          <strong>{m.subject}</strong> <span class="muted small">from {m.from}</span>{' '}
          <span class="muted small">to {m.to}</span> <Time iso={m.created_at} />
          {!m.read && <span class="badge badge-unread">unread</span>}
        </summary>
        <p class="mail-body">{m.body || <span class="muted">(no text)</span>}</p>
        <div class="toolbar" role="toolbar" aria-label={`Actions on “${m.subject}”`}>
          {m.read && (
            <ActionButton
              label="Mark unread"
              done="Marked unread"
              run={() =>
                must(api.POST('/v0/city/{cityName}/mail/{id}/mark-unread', { params: { path, header: CSRF } }))
              }
            />
          )}
          <ActionButton
            label="Archive"
            done="Archived"
            run={() => must(api.POST('/v0/city/{cityName}/mail/{id}/archive', { params: { path, header: CSRF } }))}
          />
        </div>
        <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
          <label class="grow">
            Reply
            <input value={reply} onInput={(e) => setReply(e.currentTarget.value)} />
          </label>
          <ActionButton
            label="Send reply"
            done="Replied"
            disabled={!reply.trim()}
            run={async () => {
              await must(
                api.POST('/v0/city/{cityName}/mail/{id}/reply', {
                  params: { path, header: CSRF },
                  body: { body: reply },
                }),
              );
              setReply('');
            }}
          />
        </form>
      </details>
    </li>
  );
}

function SendMail({ city, to: inbox, recipients }: { city: string; to: string; recipients: string[] }) {
  const [to, setTo] = useState(inbox);
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    try {
      const sent = await must(
        api.POST('/v0/city/{cityName}/mail', {
          params: { path: cityPath(city), header: CSRF },
          body: { to, subject, ...(body ? { body } : {}) },
        }),
      );
      announce(`Sent ${sent.id} to ${sent.to}`);
      setSubject('');
      setBody('');
    } catch (err) {
      announce(`Sending failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="send-mail-h">
      <h2 id="send-mail-h">Send mail</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <label>
          To
          <input required list="mail-recipients" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
        </label>
        <datalist id="mail-recipients">
          {recipients.map((n) => (
            <option key={n} value={n} />
          ))}
        </datalist>
        <label class="grow">
          Subject
          <input required value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
        </label>
        <label class="grow">
          Text
          <textarea rows={3} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Send mail
        </button>
      </form>
    </section>
  );
}
