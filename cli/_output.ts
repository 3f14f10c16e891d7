import { spawn } from 'node:child_process';
import { fstatSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Column } from './_types.js';

// What commands print. The contract: data on stdout (a line, a table or fields for people; with --json one JSON
// value per line for programs), nothing else; progress and notes for people on stderr only when it is a
// terminal; colour only on a terminal, never with NO_COLOR (FORCE_COLOR forces it); a failure is one stderr line,
// printed by main.ts.

export function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function json(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Progress for people: on stderr, only when it is a terminal, so scripts see data or one error. */
export function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`${text}\n`);
}

/** Under a list cut at `--limit`: tells a person (progress) that more exist. */
export function noteMore(shown: number, total: number): void {
  if (total > shown) progress(`(${shown} of ${total} shown; pass --limit for more)`);
}

/** Whether to colour what goes to `stream`: a terminal, unless NO_COLOR; anything, with FORCE_COLOR. */
export function colourOn(stream: NodeJS.WriteStream = process.stdout): boolean {
  const { NO_COLOR, FORCE_COLOR, TERM } = process.env;
  if (NO_COLOR !== undefined && NO_COLOR !== '') return false;
  if (FORCE_COLOR !== undefined) return FORCE_COLOR !== '0' && FORCE_COLOR !== 'false';
  return stream.isTTY === true && TERM !== 'dumb';
}

const SGR = { red: 31, green: 32, yellow: 33, blue: 34, cyan: 36, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof SGR;

/** `text` in `colour` when `stream` takes colour. */
export function paint(text: string, colour: Colour | undefined, stream: NodeJS.WriteStream = process.stdout): string {
  return colour === undefined || !colourOn(stream) ? text : sgr(text, colour);
}

/** `text` in `colour`, whatever the stream (a command whose `--color` decided already). */
export function sgr(text: string, colour: Colour): string {
  const reset = colour === 'dim' || colour === 'bold' ? 22 : 39;
  return `\u001b[${SGR[colour]}m${text}\u001b[${reset}m`;
}

/** What `--color=auto|always|never` says for `stream`: auto is `colourOn`'s answer (a terminal, NO_COLOR). */
export function colourChosen(choice: string | undefined, stream: NodeJS.WriteStream = process.stdout): boolean {
  return choice === 'always' ? true : choice === 'never' ? false : colourOn(stream);
}

const STATUS_COLOURS: Record<string, Colour> = {
  running: 'green',
  up: 'green',
  down: 'red',
  unknown: 'dim',
  reachable: 'green',
  unreachable: 'red',
  ready: 'green',
  ok: 'green',
  complete: 'green',
  closed: 'green',
  stopped: 'red',
  failed: 'red',
  crashed: 'red',
  init_failed: 'red',
  directory_missing: 'red',
  locked: 'red',
  blocked: 'red',
  starting: 'yellow',
  stopping: 'yellow',
  restarting: 'yellow',
  in_progress: 'yellow',
  pending: 'yellow',
  degraded: 'yellow',
  unread: 'bold',
  active: 'green',
  idle: 'green',
  creating: 'yellow',
  'start-pending': 'yellow',
  'in-turn': 'yellow',
  waiting: 'yellow',
  asleep: 'dim',
  suspended: 'dim',
  quarantined: 'red',
  'failed-create': 'red',
  configured: 'green',
  needs_auth: 'yellow',
  not_installed: 'red',
  invalid_configuration: 'red',
  probe_error: 'red',
};

/** The colour of a state word: running green, stopped red, starting yellow, … (startup phases yellow). */
export function statusColour(word: string): Colour | undefined {
  return STATUS_COLOURS[word] ?? (/^(starting|loading|opening)_/.test(word) ? 'yellow' : undefined);
}

/** A cell's text: `''` for no value. */
function cellText(value: string | number | undefined | null): string {
  return value === undefined || value === null ? '' : String(value).replace(/\s*\n\s*/g, ' ');
}

/** `text` cut to `width` characters, its end replaced by `…` when cut. */
export function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Widths that fit `room`: the widest free-text column is narrowed first, then the next, never below its
 * header (or 6); identifying columns are never narrowed. What still does not fit wraps, as it must.
 */
function fitWidths<R>(columns: Column<R>[], widths: number[], room: number): number[] {
  const fitted = [...widths];
  const total = () => fitted.reduce((sum, w) => sum + w, 0) + 2 * (fitted.length - 1);
  const floor = (i: number) => Math.max(columns[i]!.header.length, 6);
  while (total() > room) {
    let widest = -1;
    for (let i = 0; i < columns.length; i++) {
      if (columns[i]!.kind === 'text' && fitted[i]! > floor(i) && (widest < 0 || fitted[i]! > fitted[widest]!))
        widest = i;
    }
    if (widest < 0) break;
    fitted[widest]! -= 1;
  }
  return fitted;
}

/**
 * A table on stdout: headers in capitals, columns two spaces apart, `-` for no value. Columns with no value in
 * any row are left out. On a terminal it fits the width (free text cut with `…`, never an id or a name) and
 * state words are coloured.
 */
export function table<R>(columns: Column<R>[], rows: R[]): void {
  const all = rows.map((row) => columns.map((column) => cellText(column.value(row))));
  const kept = columns.map((_, i) => all.some((cells) => cells[i] !== ''));
  const shown = columns.filter((_, i) => kept[i]);
  const cells = all.map((row) => row.filter((_, i) => kept[i]).map((text) => (text === '' ? '-' : text)));
  let widths = shown.map((column, i) => Math.max(column.header.length, ...cells.map((row) => row[i]!.length)));
  const out = process.stdout;
  if (out.isTTY && out.columns > 0) widths = fitWidths(shown, widths, out.columns);
  const render = (row: string[], header: boolean) =>
    row
      .map((text, i) => {
        const fitted = cut(text, widths[i]!);
        const padded = i === row.length - 1 ? fitted : fitted.padEnd(widths[i]!);
        return !header && shown[i]!.kind === 'status' ? paint(padded, statusColour(text)) : padded;
      })
      .join('  ')
      .trimEnd();
  out.write(
    [
      render(
        shown.map((c) => c.header),
        true,
      ),
      ...cells.map((row) => render(row, false)),
    ].join('\n') + '\n',
  );
}

/** `Key: value` lines on stdout, values aligned; pairs without a value are left out. */
export function fields(pairs: [string, string | number | undefined][]): void {
  process.stdout.write(fieldLines(pairs).join('\n') + '\n');
}

/** The lines `fields` prints. */
export function fieldLines(pairs: [string, string | number | undefined][]): string[] {
  const present = pairs.filter(([, v]) => v !== undefined && v !== '') as [string, string | number][];
  const width = Math.max(0, ...present.map(([k]) => k.length + 1));
  return present.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v}`);
}

// poll(2) on our stdout for POLLERR, and on stdin (a pipe from us) for its end when we are gone.
const READER_WATCH = `
my $poll = IO::Poll->new;
$poll->mask(\\*STDIN => POLLIN);
$poll->mask(\\*STDOUT => POLLERR);
while (1) { $poll->poll; exit 0 if $poll->events(\\*STDOUT); exit 1 if $poll->events(\\*STDIN); }
`;

/**
 * Exits (0) as soon as whoever reads our stdout, a pipe, goes away (`ctl events --follow | head -1`), even while
 * nothing is printed. Node learns of a closed pipe only when it writes (EPIPE, handled in main.ts), and poll(2),
 * which sees it at once, is not in its API: a tiny perl child polls our stdout for it, and ends when we do
 * (its stdin, from us, closes). Without perl, the next write finds out instead.
 */
export function exitWhenReaderLeaves(): void {
  try {
    const stat = fstatSync(1);
    if (!stat.isFIFO() && !stat.isSocket()) return;
  } catch {
    return;
  }
  const watcher = spawn('perl', ['-MIO::Poll=POLLIN,POLLERR', '-e', READER_WATCH], {
    stdio: ['pipe', 'inherit', 'ignore'],
  });
  watcher.on('error', () => undefined);
  watcher.on('exit', (code) => {
    if (code === 0) process.exit(0);
  });
  watcher.unref();
  (watcher.stdin as Socket | null)?.unref();
}
