import { useMemo, useRef, useState } from 'preact/hooks';
import { api, CSRF, must, type Schemas } from '../api.js';
import { ActionButton, announce, cityUrl, ErrorNote, Loading, Page, Time } from '../components.js';
import { ConfirmDialog } from '../confirm-dialog.js';
import { parseFileDiff } from '../diff-rows.js';
import { useCityEvents, useLoad, useQueryParam } from '../hooks.js';
import { allowedDecisions, queueWords, REVIEW_STATE_WORDS, rigOfAgent, statTotals } from '../review-rows.js';
import { CommentList, ReviewDiff, type DiffMode } from './review-diff.js';
import { ReviewBadge, useBeadTitles } from './reviews.js';
import { CheckResult, QueueStatus } from './review-check.js';
import { changesOverlaps, RigOverlaps } from './rig-overlaps.js';

type Detail = Schemas['ReviewDetail'];
type Summary = Schemas['ReviewSummary'];
type Comment = Schemas['ReviewComment'];

const STORED_MODE = 'ctl.review.diff';
const beadUrl = (city: string, id: string) => cityUrl(city, `/bead/${encodeURIComponent(id)}`);
const GENERAL_BOX = 'review-comment';

function storedMode(): DiffMode {
  try {
    return localStorage.getItem(STORED_MODE) === 'split' ? 'split' : 'unified';
  } catch {
    return 'unified';
  }
}

function keepMode(mode: DiffMode): void {
  try {
    localStorage.setItem(STORED_MODE, mode);
  } catch {
    // storage refused (a private window): the choice lasts for this page only
  }
}

/** What an approval's answer says, in words: merged at once, queued behind others, or refused by a conflict. */
function approvedWords(r: Summary): string {
  if (r.state === 'merged' && r.pushed_ref) return `Pushed to ${r.pushed_remote ?? 'its remote'} ${r.pushed_ref}`;
  if (r.state === 'merged') return `Merged into ${r.base}`;
  if (r.state === 'conflicted') return `Not merged: ${r.conflict ?? 'it conflicts with its base'}`;
  if (r.state === 'approved') return `Approved. ${queueWords(r.queue_position, r.queue_step)}`;
  return `Approved: ${REVIEW_STATE_WORDS[r.state]}`;
}

export function ReviewView({ city, bead }: { city: string; bead: string }) {
  const path = { cityName: city, bead };
  const review = useLoad(() => must(api.GET('/v0/city/{cityName}/reviews/{bead}', { params: { path } })), [city, bead]);
  const r: Detail | undefined = review.data;
  const rig = r ? (r.rig ?? rigOfAgent(r.agent)) : undefined;
  const [overlapChanges, setOverlapChanges] = useState(0);
  const live = useCityEvents(
    city,
    (e) => {
      if (e.type.startsWith('review.') && e.payload?.bead === bead) review.reload();
      if (rig && changesOverlaps(e, rig)) setOverlapChanges((n) => n + 1);
    },
    (resumed) => {
      if (!resumed) return;
      review.reload();
      setOverlapChanges((n) => n + 1);
    },
  );
  const title = useBeadTitles(city, [bead]).get(bead);
  const [mode, setMode] = useState<DiffMode>(storedMode);
  const [which, setWhich] = useQueryParam('diff');
  const since = r?.diff_since_previous;
  const showSince = since !== undefined && which !== 'whole';
  const commentable = useMemo(() => {
    const lines = new Map<string, Set<number>>();
    if (!r || r.state === 'merged' || r.state === 'abandoned') return lines;
    for (const f of r.diff) {
      const numbers = new Set<number>();
      for (const h of parseFileDiff(f.diff).hunks) for (const l of h.lines) if (l.new !== undefined) numbers.add(l.new);
      lines.set(f.path, numbers);
    }
    return lines;
  }, [r?.diff, r?.state]);

  const addComment = (c: Comment) =>
    review.set((d) => (d && !d.comments.some((x) => x.id === c.id) ? { ...d, comments: [...d.comments, c] } : d));
  const postComment = async (body: { text: string; path?: string; line?: number }) => {
    const c = await must(
      api.POST('/v0/city/{cityName}/reviews/{bead}/comments', { params: { path, header: CSRF }, body }),
    );
    addComment(c);
  };
  const decided = async (call: Promise<Summary>): Promise<Summary> => {
    const answer = await call;
    review.reload();
    return answer;
  };
  const may = r ? allowedDecisions(r.state) : undefined;
  const totals = r ? statTotals(r.files) : undefined;
  const general = r?.comments.filter((c) => c.path === undefined) ?? [];
  const unplaced = r?.comments.filter((c) => c.path !== undefined && !r.diff.some((f) => f.path === c.path)) ?? [];
  const leftOut = r ? r.files.filter((f) => !r.diff.some((d) => d.path === f.path)) : [];

  return (
    <Page title={`Review of ${bead}`} live={live}>
      <ErrorNote error={review.error} />
      {review.loading && !r && <Loading what="the review" />}
      {r && (
        <>
          <p>
            <a href={beadUrl(city, bead)}>{title ?? `Bead ${bead}`}</a>
          </p>
          <dl class="facts">
            <div>
              <dt>State</dt>
              <dd>
                <ReviewBadge state={r.state} />
              </dd>
            </div>
            <div>
              <dt>Agent</dt>
              <dd>{r.agent}</dd>
            </div>
            <div>
              <dt>Session</dt>
              <dd>
                <a href={cityUrl(city, `/session/${encodeURIComponent(r.session)}`)}>{r.session}</a>
              </dd>
            </div>
            <div>
              <dt>Branch</dt>
              <dd>
                <code>{r.branch}</code> → <code>{r.base}</code>
              </dd>
            </div>
            <div>
              <dt>Round</dt>
              <dd>{r.round}</dd>
            </div>
            <div>
              <dt>Changes</dt>
              <dd>
                {totals!.files} files <span class="diff-plus">+{totals!.insertions}</span>{' '}
                <span class="diff-minus">−{totals!.deletions}</span>
              </dd>
            </div>
            <div>
              <dt>Requested</dt>
              <dd>
                <Time iso={r.created_at} />
              </dd>
            </div>
            {r.decided_by && (
              <div>
                <dt>Decided</dt>
                <dd>
                  {r.decided_by}, <Time iso={r.decided_at} />
                </dd>
              </div>
            )}
            {r.pushed_ref && (
              <div>
                <dt>Pushed</dt>
                <dd>
                  Pushed to {r.pushed_remote} <code>{r.pushed_ref}</code>
                  {r.pushed_commit && (
                    <>
                      {' '}
                      at <code>{r.pushed_commit.slice(0, 12)}</code>
                    </>
                  )}
                </dd>
              </div>
            )}
            {r.merged && (
              <div>
                <dt>Merged at</dt>
                <dd>
                  <code>{r.merged.slice(0, 12)}</code>
                </dd>
              </div>
            )}
          </dl>
          <QueueStatus review={r} />
          <CheckResult review={r} />
          {r.state === 'conflicted' && (
            <section class="conflict" aria-labelledby="conflict-h">
              <h2 id="conflict-h">Why it did not merge</h2>
              <p>{r.conflict ?? 'It conflicts with its base.'}</p>
              {r.conflict_files && r.conflict_files.length > 0 && (
                <ul>
                  {r.conflict_files.map((f) => (
                    <li key={f}>
                      <code>{f}</code>
                    </li>
                  ))}
                </ul>
              )}
            </section>
          )}
          {may && (may.approve || may.requestChanges || may.abandon) && (
            <div class="toolbar" role="toolbar" aria-label="Review decisions">
              {may.approve && (
                <ActionButton
                  label="Approve"
                  kind="primary"
                  confirm={{
                    title: `Approve ${bead} and merge it?`,
                    body: `Its branch ${r.branch} goes into ${r.base}: rebased when ${r.base} moved on, then fast-forwarded. A conflict is never forced.`,
                  }}
                  run={async () => {
                    const answer = await decided(
                      must(api.POST('/v0/city/{cityName}/reviews/{bead}/approve', { params: { path, header: CSRF } })),
                    );
                    announce(approvedWords(answer));
                  }}
                />
              )}
              {may.requestChanges && (
                <RequestChanges
                  agent={r.agent}
                  comments={r.comments.length}
                  send={async (text) => {
                    await decided(
                      must(
                        api.POST('/v0/city/{cityName}/reviews/{bead}/request-changes', {
                          params: { path, header: CSRF },
                          body: { text },
                        }),
                      ),
                    );
                    announce(`Sent back to ${r.agent}`);
                  }}
                />
              )}
              {may.abandon && (
                <ActionButton
                  label="Abandon"
                  kind="danger"
                  confirm={{
                    title: `Abandon the review of ${bead}?`,
                    body: `It ends without merging; the branch ${r.branch} stays as it is.`,
                    action: 'Abandon review',
                    keep: 'Keep the review',
                  }}
                  done="Abandoned"
                  run={() =>
                    decided(
                      must(api.POST('/v0/city/{cityName}/reviews/{bead}/abandon', { params: { path, header: CSRF } })),
                    )
                  }
                />
              )}
            </div>
          )}
          <section aria-labelledby="commits-h">
            <h2 id="commits-h">Commits ({r.commits.length})</h2>
            <ol class="commits">
              {r.commits.map((c) => (
                <li key={c.sha}>
                  <code>{c.sha.slice(0, 10)}</code> {c.subject}
                </li>
              ))}
            </ol>
          </section>
          <section aria-labelledby="diff-h">
            <h2 id="diff-h">Diff</h2>
            <div class="toolbar">
              <div role="group" aria-label="Diff layout">
                {(['unified', 'split'] as const).map((m) => (
                  <button
                    key={m}
                    type="button"
                    aria-pressed={mode === m}
                    onClick={() => {
                      setMode(m);
                      keepMode(m);
                    }}
                  >
                    {m === 'unified' ? 'Unified' : 'Side by side'}
                  </button>
                ))}
              </div>
              {since !== undefined && (
                <div role="group" aria-label="Diff of">
                  <button type="button" aria-pressed={showSince} onClick={() => setWhich('')}>
                    Since last round
                  </button>
                  <button type="button" aria-pressed={!showSince} onClick={() => setWhich('whole')}>
                    Whole
                  </button>
                </div>
              )}
            </div>
            <p class="muted small" id="diff-keys">
              Keys: <kbd>j</kbd> or <kbd>n</kbd> next file, <kbd>k</kbd> or <kbd>p</kbd> previous file; in a file,{' '}
              <kbd>↑</kbd> <kbd>↓</kbd> move between line numbers and <kbd>Enter</kbd> or <kbd>c</kbd> comments on the
              line (<kbd>c</kbd> elsewhere goes to the general comment box).
            </p>
            {showSince && (
              <p class="muted">
                What changed since round {r.round - 1} (<code>{r.previous_commit?.slice(0, 10)}</code> to{' '}
                <code>{r.commit.slice(0, 10)}</code>).
              </p>
            )}
            {(r.truncated || leftOut.length > 0) && (
              <p class="notice-inline" role="note">
                The diff is over its size bound: {leftOut.length} of {r.files.length} files are left out (
                {leftOut
                  .slice(0, 5)
                  .map((f) => f.path)
                  .join(', ')}
                {leftOut.length > 5 ? ', …' : ''}). <code>ctl review show {bead}</code> or git has the rest.
              </p>
            )}
            <ReviewDiff
              files={showSince ? since : r.diff}
              comments={r.comments}
              commentable={commentable}
              mode={mode}
              generalBox={GENERAL_BOX}
              comment={(p, line, text) => postComment({ path: p, line, text })}
            />
          </section>
          <section aria-labelledby="comments-h">
            <h2 id="comments-h">Comments on the whole</h2>
            {general.length === 0 && unplaced.length === 0 && <p class="muted">None yet.</p>}
            <CommentList comments={general} />
            {unplaced.length > 0 && (
              <>
                <p class="muted small">On files not in the diff shown:</p>
                <ul class="review-comments">
                  {unplaced.map((c) => (
                    <li key={c.id}>
                      <code>
                        {c.path}:{c.line}
                      </code>{' '}
                      {c.text}
                    </li>
                  ))}
                </ul>
              </>
            )}
            {r.state !== 'merged' && r.state !== 'abandoned' && (
              <GeneralComment send={(text) => postComment({ text })} />
            )}
          </section>
          {rig && <RigOverlaps city={city} rig={rig} self={{ bead, session_id: r.session }} changes={overlapChanges} />}
        </>
      )}
    </Page>
  );
}

/** Request changes: the text asked in the page's dialog, sent with every comment to the agent. */
function RequestChanges(props: { agent: string; comments: number; send: (text: string) => Promise<void> }) {
  const [asking, setAsking] = useState(false);
  const [text, setText] = useState('');
  const button = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button ref={button} type="button" aria-haspopup="dialog" onClick={() => setAsking(true)}>
        Request changes
      </button>
      {asking && (
        <ConfirmDialog
          title="Send it back with changes to make?"
          confirm="Request changes"
          run={() => props.send(text)}
          onClose={() => setAsking(false)}
          returnFocusTo={button}
        >
          <p>
            The bead reopens for {props.agent}, told what you write here
            {props.comments > 0 ? ` and the ${props.comments} comments with their file:line` : ''}.
          </p>
          <label class="stack">
            What to change
            <textarea rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </label>
        </ConfirmDialog>
      )}
    </>
  );
}

function GeneralComment({ send }: { send: (text: string) => Promise<void> }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const go = async () => {
    if (!text.trim()) return;
    setBusy(true);
    try {
      await send(text);
      setText('');
      announce('Commented');
    } catch (err) {
      announce(`Comment failed: ${(err as Error).message}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="message-box"
      onSubmit={(e) => {
        e.preventDefault();
        void go();
      }}
    >
      <label class="grow">
        Comment on the whole
        <textarea
          id={GENERAL_BOX}
          rows={3}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void go();
            }
          }}
          aria-describedby="review-comment-hint"
        />
      </label>
      <span id="review-comment-hint" class="muted small">
        Ctrl+Enter sends.
      </span>
      <button type="submit" class="primary" disabled={busy || !text.trim()}>
        Comment
      </button>
    </form>
  );
}
