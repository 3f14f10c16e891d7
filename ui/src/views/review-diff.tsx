import { Fragment, type ComponentChildren } from 'preact';
import '../review.css';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Schemas } from '../api.js';
import { announce, ErrorNote, Time } from '../components.js';
import { drawnLines, parseFileDiff, sideBySide, type DiffLine, type ParsedFileDiff } from '../diff-rows.js';
import { highlightLines, languageOf } from '../highlight.js';

type FileDiff = Schemas['ReviewFileDiff'];
type Comment = Schemas['ReviewComment'];
export type DiffMode = 'unified' | 'split';

/** A file drawing more lines than this starts folded: a lock file or a generated one does not hold the page up. */
const FOLD_LINES = 400;
/** Past this many lines drawn at first across files, the rest start folded too (each opens with a click). */
const OPEN_BUDGET = 1500;

interface ShownFile {
  path: string;
  truncated: boolean;
  parsed: ParsedFileDiff;
  lines: number;
}

/** Where a line comment is being written: a file and a line of its new side. */
interface FormAt {
  path: string;
  line: number;
}

/**
 * A review's diff: every file with its hunks, unified or side by side, syntax-coloured, each comment under the
 * line it is on; a line's number (where the API takes a comment on it) opens a form under the line. Keys while
 * focus is not in a field: j or n the next file, k or p the previous one, c a comment on the line whose number has
 * focus (else the general comment box); ↑ and ↓ move between a file's line numbers.
 */
export function ReviewDiff(props: {
  files: FileDiff[];
  comments: Comment[];
  /** Each file's new-side lines the API takes a comment on; none when the review takes no more comments. */
  commentable: Map<string, Set<number>>;
  mode: DiffMode;
  comment: (path: string, line: number, text: string) => Promise<void>;
  /** Where `c` goes when no line number has focus. */
  generalBox: string;
}) {
  const files = useMemo<ShownFile[]>(
    () =>
      props.files.map((f) => {
        const parsed = parseFileDiff(f.diff);
        return { path: f.path, truncated: f.truncated, parsed, lines: drawnLines(parsed) };
      }),
    [props.files],
  );
  const [folded, setFolded] = useState(() => initiallyFolded(files));
  useEffect(() => setFolded(initiallyFolded(files)), [files]);
  const [formAt, setFormAt] = useState<FormAt>();
  const root = useRef<HTMLDivElement>(null);
  const current = useRef(-1);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      const target = e.target instanceof HTMLElement ? e.target : undefined;
      if (target?.closest('input, textarea, select, [contenteditable]') || document.querySelector('dialog[open]'))
        return;
      const sections = [...(root.current?.querySelectorAll<HTMLElement>('section.diff-file') ?? [])];
      if (e.key === 'c') {
        e.preventDefault();
        if (target?.matches('button.line-no')) target.click();
        else document.getElementById(props.generalBox)?.focus();
        return;
      }
      const step = e.key === 'j' || e.key === 'n' ? 1 : e.key === 'k' || e.key === 'p' ? -1 : 0;
      if (!step || sections.length === 0) return;
      e.preventDefault();
      const holding = sections.findIndex((s) => s.contains(document.activeElement));
      const from = holding >= 0 ? holding : current.current;
      const to = Math.min(sections.length - 1, Math.max(0, from + step));
      current.current = to;
      const heading = sections[to]!.querySelector<HTMLElement>('h3');
      heading?.focus();
      heading?.scrollIntoView({ block: 'start' });
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [props.generalBox]);

  const byLine = useMemo(() => commentsByLine(props.comments), [props.comments]);
  const focusFile = (i: number) => {
    current.current = i;
    root.current?.querySelectorAll<HTMLElement>('section.diff-file h3')[i]?.focus();
  };
  return (
    <div ref={root}>
      <nav aria-label="Files in this diff">
        <ol class="diff-files">
          {files.map((f, i) => (
            <li key={f.path}>
              <a
                href={`#file-${i}`}
                onClick={(e) => {
                  e.preventDefault();
                  focusFile(i);
                }}
              >
                {f.path}
              </a>
            </li>
          ))}
        </ol>
      </nav>
      {files.map((f, i) => (
        <DiffFile
          key={f.path}
          index={i}
          file={f}
          mode={props.mode}
          folded={folded.has(f.path)}
          setOpen={(open) =>
            setFolded((all) => {
              const next = new Set(all);
              if (open) next.delete(f.path);
              else next.add(f.path);
              return next;
            })
          }
          comments={byLine.get(f.path) ?? new Map()}
          commentable={props.commentable.get(f.path) ?? new Set()}
          formAt={formAt?.path === f.path ? formAt.line : undefined}
          openForm={(line) => setFormAt({ path: f.path, line })}
          closeForm={() => setFormAt(undefined)}
          comment={(line, text) => props.comment(f.path, line, text)}
        />
      ))}
    </div>
  );
}

/** Files too long to draw at once, or past the budget of lines drawn at first, start folded. */
function initiallyFolded(files: ShownFile[]): Set<string> {
  const folded = new Set<string>();
  let drawn = 0;
  for (const f of files) {
    if (f.lines > FOLD_LINES || drawn + f.lines > OPEN_BUDGET) folded.add(f.path);
    else drawn += f.lines;
  }
  return folded;
}

function commentsByLine(comments: Comment[]): Map<string, Map<number, Comment[]>> {
  const byPath = new Map<string, Map<number, Comment[]>>();
  for (const c of comments) {
    if (c.path === undefined || c.line === undefined) continue;
    const lines = byPath.get(c.path) ?? new Map<number, Comment[]>();
    lines.set(c.line, [...(lines.get(c.line) ?? []), c]);
    byPath.set(c.path, lines);
  }
  return byPath;
}

/** Each line's markup, coloured per hunk side: the old side's lines together, the new side's together. */
function highlighted(parsed: ParsedFileDiff, language: string | undefined): Map<DiffLine, string> {
  const html = new Map<DiffLine, string>();
  for (const hunk of parsed.hunks) {
    for (const side of ['old', 'new'] as const) {
      const lines = hunk.lines.filter((l) => (side === 'old' ? l.kind !== 'add' : l.kind !== 'del'));
      const marked = highlightLines(
        lines.map((l) => l.text),
        language,
      );
      lines.forEach((l, i) => {
        // A context line is on both sides: its new side's colours are the ones drawn.
        if (side === 'new' || l.kind === 'del') html.set(l, marked[i] ?? '');
      });
    }
  }
  return html;
}

function DiffFile(props: {
  index: number;
  file: ShownFile;
  mode: DiffMode;
  folded: boolean;
  setOpen: (open: boolean) => void;
  comments: Map<number, Comment[]>;
  commentable: Set<number>;
  formAt: number | undefined;
  openForm: (line: number) => void;
  closeForm: () => void;
  comment: (line: number, text: string) => Promise<void>;
}) {
  const { file, mode } = props;
  const html = useMemo(
    () => (props.folded ? undefined : highlighted(file.parsed, languageOf(file.path))),
    [file, props.folded],
  );
  const id = `file-${props.index}`;
  const shownLines = new Set(file.parsed.hunks.flatMap((h) => h.lines.map((l) => l.new)));
  const elsewhere = [...props.comments.entries()].filter(([line]) => !shownLines.has(line));
  const columns = mode === 'unified' ? 4 : 6;
  let firstButton = true;
  const lineNo = (line: DiffLine | undefined) => {
    if (line?.new === undefined) return line?.old ?? '';
    if (!props.commentable.has(line.new)) return line.new;
    const tabIndex = firstButton ? 0 : -1;
    firstButton = false;
    return (
      <button
        type="button"
        class="line-no"
        tabIndex={tabIndex}
        aria-label={`Comment on ${file.path} line ${line.new}`}
        aria-expanded={props.formAt === line.new}
        onClick={() => props.openForm(line.new!)}
        onKeyDown={roveLines}
      >
        {line.new}
      </button>
    );
  };
  const code = (line: DiffLine | undefined) =>
    line ? <code dangerouslySetInnerHTML={{ __html: html?.get(line) ?? '' }} /> : null;
  const after = (line: DiffLine | undefined): ComponentChildren => {
    if (line?.new === undefined) return null;
    const here = props.comments.get(line.new);
    const form = props.formAt === line.new;
    return (
      <>
        {here && (
          <tr class="line-comments">
            <td colSpan={columns}>
              <CommentList comments={here} />
            </td>
          </tr>
        )}
        {form && (
          <tr class="line-form">
            <td colSpan={columns}>
              <LineCommentForm
                path={file.path}
                line={line.new}
                close={props.closeForm}
                send={(text) => props.comment(line.new!, text)}
              />
            </td>
          </tr>
        )}
      </>
    );
  };
  return (
    <section class="diff-file" id={id} aria-labelledby={`${id}-h`}>
      <div class="diff-file-head">
        <h3 id={`${id}-h`} tabIndex={-1}>
          {file.path}
        </h3>
        {file.parsed.notes.map((n) => (
          <span key={n} class="muted small">
            {n}
          </span>
        ))}
        {file.truncated && <span class="badge badge-review-truncated">cut at 64 KiB: the rest is in git</span>}
        {file.lines > 0 && (
          <button
            type="button"
            aria-expanded={!props.folded}
            aria-controls={`${id}-lines`}
            onClick={() => props.setOpen(props.folded)}
          >
            {props.folded ? `Show ${file.lines} lines` : 'Fold'}
            <span class="sr-only"> of {file.path}</span>
          </button>
        )}
      </div>
      {elsewhere.length > 0 && (
        <div class="comments-elsewhere">
          {elsewhere.map(([line, comments]) => (
            <div key={line}>
              <p class="muted small">On line {line}, not in this diff:</p>
              <CommentList comments={comments} />
            </div>
          ))}
        </div>
      )}
      {!props.folded && file.parsed.hunks.length > 0 && (
        <div class="table-wrap" id={`${id}-lines`}>
          <table class={`diff diff-${mode}`}>
            <caption class="sr-only">
              {file.path}, {mode === 'unified' ? 'unified' : 'side by side'}
            </caption>
            {mode === 'split' && (
              // A fixed layout takes its columns' widths from here: numbers and marks narrow, the two sides halves.
              <colgroup>
                <col class="no" />
                <col class="mark" />
                <col />
                <col class="no" />
                <col class="mark" />
                <col />
              </colgroup>
            )}
            <thead class="sr-only">
              {mode === 'unified' ? (
                <tr>
                  <th scope="col">Old line</th>
                  <th scope="col">New line</th>
                  <th scope="col">Change</th>
                  <th scope="col">Code</th>
                </tr>
              ) : (
                <tr>
                  <th scope="col">Old line</th>
                  <th scope="col">Change</th>
                  <th scope="col">Old code</th>
                  <th scope="col">New line</th>
                  <th scope="col">Change</th>
                  <th scope="col">New code</th>
                </tr>
              )}
            </thead>
            {file.parsed.hunks.map((hunk, h) => (
              <tbody key={h}>
                <tr class="hunk">
                  <td colSpan={columns}>{hunk.header}</td>
                </tr>
                {mode === 'unified'
                  ? hunk.lines.map((line, n) => (
                      <Fragment key={n}>
                        <tr class={`line line-${line.kind}`}>
                          <td class="no">{line.kind === 'add' ? '' : line.old}</td>
                          <td class="no">{line.kind === 'del' ? '' : lineNo(line)}</td>
                          <Mark line={line} />
                          <td class="code">{code(line)}</td>
                        </tr>
                        {after(line)}
                      </Fragment>
                    ))
                  : sideBySide(hunk.lines).map((row, n) => (
                      <Fragment key={n}>
                        <tr class="line">
                          <td class={`no side-${row.left?.kind ?? 'none'}`}>{row.left?.old ?? ''}</td>
                          <Mark line={row.left} />
                          <td class={`code side-${row.left?.kind ?? 'none'}`}>{code(row.left)}</td>
                          <td class={`no side-${row.right?.kind ?? 'none'}`}>{lineNo(row.right)}</td>
                          <Mark line={row.right} />
                          <td class={`code side-${row.right?.kind ?? 'none'}`}>{code(row.right)}</td>
                        </tr>
                        {after(row.right)}
                      </Fragment>
                    ))}
              </tbody>
            ))}
          </table>
        </div>
      )}
    </section>
  );
}

/** The `+` or `−` of a line, said as a word to a screen reader (the colour only helps). */
function Mark({ line }: { line: DiffLine | undefined }) {
  const kind = line?.kind;
  return (
    <td class={`mark side-${kind ?? 'none'}`}>
      {kind === 'add' && (
        <>
          <span aria-hidden="true">+</span>
          <span class="sr-only">added</span>
        </>
      )}
      {kind === 'del' && (
        <>
          <span aria-hidden="true">−</span>
          <span class="sr-only">removed</span>
        </>
      )}
    </td>
  );
}

/** ↑ and ↓ between a file's line numbers: the file is one Tab stop, its lines reached from it. */
function roveLines(e: KeyboardEvent) {
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
  const here = e.currentTarget as HTMLButtonElement;
  const all = [...(here.closest('table')?.querySelectorAll<HTMLButtonElement>('button.line-no') ?? [])];
  const next = all[all.indexOf(here) + (e.key === 'ArrowDown' ? 1 : -1)];
  if (!next) return;
  e.preventDefault();
  for (const b of all) b.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

export function CommentList({ comments }: { comments: Comment[] }) {
  return (
    <ul class="review-comments">
      {comments.map((c) => (
        <li key={c.id} id={`comment-${c.id}`}>
          <span class="muted small">
            #{c.id} {c.author}, <Time iso={c.at} />
          </span>
          <p>{c.text}</p>
        </li>
      ))}
    </ul>
  );
}

function LineCommentForm(props: {
  path: string;
  line: number;
  close: () => void;
  send: (text: string) => Promise<void>;
}) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const box = useRef<HTMLTextAreaElement>(null);
  const opener = useRef<Element | null>(null);
  useEffect(() => {
    opener.current = document.activeElement;
    box.current?.focus();
  }, []);
  const close = () => {
    props.close();
    if (opener.current instanceof HTMLElement) opener.current.focus();
  };
  const send = async () => {
    if (!text.trim()) return;
    setBusy(true);
    setProblem(undefined);
    try {
      await props.send(text);
      announce(`Commented on ${props.path}:${props.line}`);
      close();
    } catch (err) {
      setProblem((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label class="grow">
        Comment on {props.path} line {props.line}
        <textarea
          ref={box}
          rows={3}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.preventDefault();
              close();
            } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void send();
            }
          }}
        />
      </label>
      <button type="submit" class="primary" disabled={busy || !text.trim()} aria-busy={busy}>
        Comment
      </button>
      <button type="button" onClick={close}>
        Cancel
      </button>
      <ErrorNote error={problem} />
    </form>
  );
}
