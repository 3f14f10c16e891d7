import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, CSRF, must, problemText, type LiveEvent, type Schemas } from '../api.js';
import { announce, ErrorNote, Loading, Time } from '../components.js';
import { ConfirmDialog } from '../confirm-dialog.js';
import { mayDelete, type Whoami } from '../authorship.js';
import { whoami } from '../whoami.js';

type Comment = Schemas['BeadComment'];

const PAGE = 50;
/** What the API keeps at most (BeadCommentInputBody). */
const MAX_CHARS = 10_000;

/** How the bead page hands its city stream's events to the comments (one stream per page, not one per part). */
export interface CommentFeed {
  take: (event: LiveEvent) => void;
  /** The stream reopened after a drop: what was missed is read again. */
  reopened: () => void;
}

/**
 * A bead's comments, live: the newest page when it opens, earlier ones on demand, and then each comment as its
 * `bead.commented` event arrives on the city's stream (a deleted one goes with `bead.comment_deleted`) — no
 * polling; the newest page is read again whenever the stream had to reconnect. A form adds one as the person;
 * a comment the person wrote (its author is who `GET /v0/whoami` says the page is) can be deleted, once confirmed.
 */
export function BeadComments({
  city,
  id,
  feed,
}: {
  city: string;
  id: string;
  feed: RefObject<CommentFeed | undefined>;
}) {
  const [comments, setComments] = useState<Comment[]>([]);
  // Earlier comments not shown yet: how many, and the cursor to their newest page.
  const [earlier, setEarlier] = useState<{ cursor?: string; hidden: number }>({ hidden: 0 });
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [me, setMe] = useState<Whoami>();
  // The comment whose deletion is being confirmed, and whether focus should go to the heading once it is gone.
  const [deleting, setDeleting] = useState<Comment>();
  const refocus = useRef(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const path = { cityName: city, id };

  const page = (cursor?: string) =>
    must(
      api.GET('/v0/city/{cityName}/bead/{id}/comments', {
        params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
      }),
    );
  const loadNewest = () => {
    // Who the page is (to offer deleting one's own comments): asked with the comments, and again on a reopened
    // stream if it failed. Without an answer no delete button shows; the comments still do.
    whoami().then(setMe, (err: Error) => console.warn(`who the page is signed in as is unknown: ${err.message}`));
    return page().then(
      (body) => {
        // The page as it is now, and any comment that arrived since it was read.
        const last = body.items.at(-1)?.id ?? 0;
        setComments((shown) =>
          merge(
            body.items,
            shown.filter((c) => c.id > last),
          ),
        );
        setEarlier({ cursor: body.next_cursor, hidden: body.total - body.items.length });
        setLoading(false);
        setError(undefined);
      },
      (err: Error) => {
        setError(err.message);
        setLoading(false);
      },
    );
  };
  useEffect(() => {
    setComments([]);
    setLoading(true);
    void loadNewest();
  }, [city, id]);
  feed.current = {
    take: (e: LiveEvent) => {
      if (e.subject !== id) return;
      const comment = (e.payload as { comment?: Comment } | undefined)?.comment;
      if (!comment || comment.issue_id !== id) return;
      if (e.type === 'bead.commented') setComments((shown) => merge(shown, [comment]));
      else if (e.type === 'bead.comment_deleted') setComments((shown) => shown.filter((c) => c.id !== comment.id));
    },
    reopened: () => void loadNewest(),
  };
  const more = async () => {
    if (!earlier.cursor) return;
    try {
      const body = await page(earlier.cursor);
      setComments((shown) => merge(body.items, shown));
      setEarlier((s) => ({ cursor: body.next_cursor, hidden: Math.max(0, s.hidden - body.items.length) }));
    } catch (err) {
      announce(`Loading earlier comments failed: ${(err as Error).message}`, 'error');
    }
  };

  useEffect(() => {
    if (deleting || !refocus.current) return;
    // The deleted comment's button went with it: the person goes on from the list's heading.
    refocus.current = false;
    heading.current?.focus();
  }, [deleting]);
  const remove = async (comment: Comment) => {
    await must(
      api.DELETE('/v0/city/{cityName}/bead/{id}/comments/{commentId}', {
        params: { path: { ...path, commentId: comment.id }, header: CSRF },
      }),
    );
    // Its event removes it too; gone now in case the stream is reconnecting.
    setComments((shown) => shown.filter((c) => c.id !== comment.id));
    refocus.current = true;
    announce('Comment deleted');
  };

  const total = earlier.hidden + comments.length;
  return (
    <section aria-labelledby="comments-h">
      <h2 id="comments-h" tabIndex={-1} ref={heading}>
        Comments{total ? ` (${total})` : ''}
      </h2>
      <ErrorNote error={error} />
      {loading && <Loading what="the comments" />}
      {earlier.cursor && (
        <button type="button" onClick={() => void more()}>
          Show earlier comments
        </button>
      )}
      <ol class="comments" aria-label="Comments, oldest first">
        {comments.map((c) => (
          <li key={c.id} class="comment">
            <p class="comment-head">
              <strong>{c.author}</strong> <Time iso={c.created_at} /> <span class="muted">#{c.id}</span>
              {mayDelete(me, c.author) && (
                <button
                  type="button"
                  class="comment-delete"
                  aria-label={`Delete comment #${c.id}`}
                  aria-haspopup="dialog"
                  onClick={() => setDeleting(c)}
                >
                  Delete
                </button>
              )}
            </p>
            <p class="comment-text">{c.text}</p>
          </li>
        ))}
        {!loading && comments.length === 0 && <li class="muted">No comments yet.</li>}
      </ol>
      <CommentForm city={city} id={id} onAdded={(c) => setComments((shown) => merge(shown, [c]))} />
      {deleting && (
        <ConfirmDialog
          title={`Delete comment #${deleting.id}?`}
          confirm="Delete comment"
          run={() => remove(deleting)}
          onClose={() => setDeleting(undefined)}
        >
          <blockquote class="comment-text">{excerpt(deleting.text)}</blockquote>
          <p>It goes for everyone who reads this bead; it cannot be brought back.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** The start of a comment, enough to recognise it by. */
function excerpt(text: string): string {
  return text.length > 280 ? `${text.slice(0, 280)}…` : text;
}

/** Comments in id order without repeats (an event and a page can both bring one). */
function merge(a: Comment[], b: Comment[]): Comment[] {
  const byId = new Map([...a, ...b].map((c) => [c.id, c]));
  return [...byId.values()].sort((x, y) => x.id - y.id);
}

function CommentForm({ city, id, onAdded }: { city: string; id: string; onAdded: (comment: Comment) => void }) {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  const send = async (e: Event) => {
    e.preventDefault();
    if (text.trim() === '') {
      setProblem('Write something first.');
      return;
    }
    setBusy(true);
    try {
      const { data, error, response } = await api.POST('/v0/city/{cityName}/bead/{id}/comments', {
        params: { path: { cityName: city, id }, header: CSRF },
        body: { text },
      });
      if (!response.ok) {
        setProblem(problemText(error, response));
        return;
      }
      // Its event brings it too (and everyone else's); shown now in case the stream is reconnecting.
      if (data) onAdded(data);
      setText('');
      setProblem(undefined);
      announce('Comment added');
    } catch (err) {
      setProblem(`cannot reach the supervisor: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="comment-form" onSubmit={(e) => void send(e)} noValidate>
      <label for="new-comment">Add a comment</label>
      <textarea
        id="new-comment"
        rows={3}
        maxLength={MAX_CHARS}
        value={text}
        aria-invalid={problem ? 'true' : undefined}
        aria-describedby={problem ? 'new-comment-error' : undefined}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          // Ctrl+Enter (⌘+Enter) sends, as in most comment boxes; Enter alone is a new line.
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send(e);
        }}
      />
      {problem && (
        <span id="new-comment-error" class="field-error">
          {problem}
        </span>
      )}
      <button type="submit" disabled={busy} aria-busy={busy}>
        Comment
      </button>
    </form>
  );
}
