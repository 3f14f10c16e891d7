import type { CityInfo } from '../../shared/dto/cities.js';
import type { WireEvent, WireTaggedEvent } from '../../shared/dto/events.js';
import { parseCursor } from '../../shared/events/cursor.js';
import { call, connect, CSRF, patient } from '../_api.js';
import { command, withCommands } from '../_command.js';
import { CliError } from '../_errors.js';
import { apiFlag, cityFlag, given, jsonFlag, pointInTime, refuseTogether, timeout, timeoutFlag } from '../_flags.js';
import { cut, exitWhenReaderLeaves, json, line, paint, type Colour } from '../_output.js';
import { allPages } from '../_pages.js';
import { parsePayloadMatchers, payloadMatches, type PayloadMatchers } from '../_payload-match.js';
import { inCity, resolveCity } from '../_scope.js';
import { currentPosition, readEvents } from '../_stream.js';
import type { Api } from '../_types.js';

// `ctl events`: the spec's output contract (control-plane.md, "Command-line client `ctl events`"): JSON Lines,
// one envelope per line, when stdout is not a terminal or with --json; a person at a terminal reads one line per
// event instead. `--seq` prints a position as plain text.

const ROTATE_WAIT_MS = 30_000;

const args = {
  type: { type: 'string', description: 'Only events of this type' },
  since: {
    type: 'string',
    description: 'Only events since then: a duration back from now (5m, 1h30m, 1d) or an RFC 3339 time',
    valueHint: 'WHEN',
  },
  'payload-match': {
    type: 'string',
    description: 'Only events whose payload has key=value (dotted paths into objects; repeat a key for OR)',
    valueHint: 'KEY=VALUE',
    repeatable: true,
  },
  watch: { type: 'boolean', description: 'Wait for the first matching event, print it and exit' },
  follow: { type: 'boolean', description: 'Print matching events as they happen, reconnecting as needed' },
  seq: { type: 'boolean', description: 'Print the current position (city head seq, or supervisor cursor)' },
  ...timeoutFlag('--watch: give up after this long, printing nothing (default 30s)'),
  after: { type: 'string', description: 'City scope, --watch/--follow: start after this seq', valueHint: 'SEQ' },
  'after-cursor': {
    type: 'string',
    description: 'Supervisor scope, --watch/--follow: start after this composite cursor',
    valueHint: 'CURSOR',
  },
  ...cityFlag,
  json: { type: 'boolean', description: 'JSON Lines even on a terminal (always when piped)' },
  ...apiFlag,
} as const;

interface Filters {
  type: string | undefined;
  payload: PayloadMatchers;
  /** Streams: only events stamped at or after this (ms since the epoch); lists leave `since` to the API. */
  notBefore?: number;
}

function matches(envelope: { type?: unknown; ts?: unknown; payload?: unknown }, filters: Filters): boolean {
  if (filters.type !== undefined && envelope.type !== filters.type) return false;
  if (
    filters.notBefore !== undefined &&
    !(typeof envelope.ts === 'string' && Date.parse(envelope.ts) >= filters.notBefore)
  )
    return false;
  return payloadMatches(envelope.payload, filters.payload);
}

/** The colour of an event type on a terminal: failures red, beginnings green, endings yellow. */
function typeColour(type: string): Colour {
  if (/(failed|crashed|missing)$/.test(type)) return 'red';
  if (/^request\.result\.|\.(started|created|registered|sent)$/.test(type)) return 'green';
  if (/\.(stopped|closed|deleted|archived|unregister_requested|shutdown_requested|rotated)$/.test(type))
    return 'yellow';
  return 'cyan';
}

/** What an event without a message is about, from its payload: a bead's title, a message's subject, … */
function summary(payload: unknown): string | undefined {
  const p = (payload ?? {}) as {
    bead?: { title?: unknown };
    message?: { subject?: unknown };
    error_message?: unknown;
    path?: unknown;
  };
  const text = p.bead?.title ?? p.message?.subject ?? p.error_message ?? p.path;
  return typeof text === 'string' ? text : undefined;
}

/**
 * How an event is printed: its JSON text as the API gave it (JSON Lines), or, for a person at a terminal, one
 * line: local time, city (supervisor scope), type, subject, message, cut to the terminal's width.
 */
function printer(
  human: boolean,
  supervisorScope: boolean,
): (event: WireEvent | WireTaggedEvent, data?: string) => void {
  if (!human) return (event, data) => line(data ?? JSON.stringify(event));
  let cityWidth = 8;
  return (event) => {
    const time = new Date(event.ts).toTimeString().slice(0, 8);
    const city = 'city' in event ? event.city : '';
    cityWidth = Math.max(cityWidth, city.length);
    const type = event.type.padEnd(24);
    const tail = [event.subject, event.message ?? summary(event.payload)].filter((t) => t).join('  ');
    const head = [time, ...(supervisorScope ? [city.padEnd(cityWidth)] : []), type].join('  ');
    const room = process.stdout.columns > 0 ? process.stdout.columns - head.length - 2 : Infinity;
    const coloured = [
      paint(time, 'dim'),
      ...(supervisorScope ? [city.padEnd(cityWidth)] : []),
      paint(type, typeColour(event.type)),
    ].join('  ');
    line(tail === '' ? coloured.trimEnd() : `${coloured}  ${cut(tail.replace(/\s*\n\s*/g, ' '), Math.max(room, 10))}`);
  };
}

const eventsDef = command({
  name: 'events',
  description: 'List, watch or follow events (JSON Lines; one readable line each on a terminal)',
  examples: [
    'ctl events                                    # every log, merged, oldest first',
    'ctl events --follow --type controller.crashed',
    'ctl events --city alpha --payload-match bead.issue_type=bug --since 1h',
    'C=$(ctl events --seq); ctl events --watch --after-cursor "$C" --timeout 1m --type request.result.city.create',
  ],
  args,
  async run({ args: a, all }) {
    // Flag combinations first, then local values: they fail the same way with or without a supervisor.
    refuseTogether(a, [
      ['after', 'after-cursor'],
      ['follow', 'watch'],
      ['seq', 'follow'],
      ['seq', 'watch'],
    ]);
    const hasAfter = given(a.after);
    const hasAfterCursor = given(a['after-cursor']);
    const mode = a.seq ? 'seq' : a.follow ? 'follow' : a.watch ? 'watch' : 'list';
    if ((hasAfter || hasAfterCursor) && mode !== 'follow' && mode !== 'watch') {
      throw new CliError(
        '--after/--after-cursor require --follow or --watch (they resume a stream); use --since to bound a list by time',
      );
    }
    if (hasAfter && !/^\d+$/.test(a.after!.trim())) {
      throw new CliError(`invalid --after ${JSON.stringify(a.after)}: expected a non-negative integer`);
    }
    if (hasAfterCursor && a['after-cursor']!.trim() !== '0') {
      try {
        parseCursor(a['after-cursor']!);
      } catch {
        throw new CliError(`invalid --after-cursor ${JSON.stringify(a['after-cursor'])}: expected name:seq entries`);
      }
    }
    const since = pointInTime(a.since, 'since', 'ago');
    const timeoutMs = mode === 'watch' ? timeout(a.timeout, 30_000) : 0;
    const filters: Filters = { type: a.type, payload: parsePayloadMatchers(all('payload-match')) };
    if (since !== undefined && mode !== 'list') filters.notBefore = since;

    const deadline = mode === 'watch' ? AbortSignal.timeout(timeoutMs) : undefined;
    // Whatever it is waiting for then (finding the city, the position, the stream), a watch that runs out of
    // time prints nothing and succeeds.
    if (mode === 'watch') setTimeout(() => process.exit(0), timeoutMs).unref();
    if (mode === 'watch' || mode === 'follow') exitWhenReaderLeaves();
    const api = connect(a.api);
    let city: CityInfo | undefined;
    try {
      city = await resolveCity(api, a.city);
    } catch (err) {
      if (deadline?.aborted) return; // --watch ran out of time while looking: nothing to print
      throw err;
    }
    if (mode === 'watch' || mode === 'follow') {
      if (hasAfter && !city) {
        throw new CliError('--after is only valid when a city is in scope; use --after-cursor for supervisor events');
      }
      if (hasAfterCursor && city) throw new CliError('--after-cursor is only valid in supervisor scope');
    }

    if (mode === 'seq') return line(await currentPosition(api, city));
    const print = printer(!a.json && process.stdout.isTTY === true, !city);
    if (mode === 'list') return list(api, city, filters, since, print);

    let position: string;
    try {
      position = hasAfter
        ? a.after!.trim()
        : hasAfterCursor
          ? a['after-cursor']!.trim()
          : await currentPosition(api, city);
    } catch (err) {
      if (deadline?.aborted) return;
      throw err;
    }
    const follow = mode === 'follow';
    const note = (text: string) => process.stderr.write(`ctl events: ${text}\n`);
    const end = await readEvents(
      api,
      { city, after: position, reconnect: follow, signal: deadline, note },
      (envelope, data) => {
        if (!matches(envelope, filters)) return false;
        print(envelope as unknown as WireEvent, data);
        return !follow; // --watch: done after one
      },
    );
    // --watch: an end before any match is a failure (running out of time is not).
    if (end === 'ended') throw new CliError('stream ended before a matching event arrived');
  },
});

async function list(
  api: Api,
  city: CityInfo | undefined,
  filters: Filters,
  since: number | undefined,
  print: (event: WireEvent | WireTaggedEvent) => void,
): Promise<void> {
  const server = {
    ...(filters.type !== undefined ? { type: filters.type } : {}),
    // The API takes a Go duration back from now.
    ...(since !== undefined ? { since: `${Math.max(0, Date.now() - since)}ms` } : {}),
  };
  if (!city) {
    const pages: WireTaggedEvent[][] = [];
    await allPages(async (size, cursor) => {
      const { data } = await call(
        api,
        api.client.GET('/v0/events', { params: { query: { ...server, limit: size, ...(cursor ? { cursor } : {}) } } }),
      );
      pages.push(data.items);
      return data;
    });
    // Pages come newest first, each oldest first. The server pages each log in seq order, which is not always
    // the merged order (a clock that went back; events of one millisecond tagged with different cities), so
    // pages can overlap there: one sort, of runs already in order, gives the order of one whole list.
    for (const event of byTimeCitySeq(pages.reverse().flat())) if (matches(event, filters)) print(event);
    return;
  }
  // The API pages newest first, each page newest first; print oldest first.
  const pages: WireEvent[][] = [];
  await allPages(async (size, cursor) => {
    const { data } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/events', {
        params: { path: { cityName: city.name }, query: { ...server, limit: size, ...(cursor ? { cursor } : {}) } },
      }),
    );
    pages.push(data.items);
    return data;
  });
  for (const page of pages.reverse()) {
    for (const event of page.reverse()) if (matches(event, filters)) print(event);
  }
}

/** Events in the supervisor list's order: by time, then city, then seq. */
function byTimeCitySeq(events: WireTaggedEvent[]): WireTaggedEvent[] {
  const keyed = events.map((event) => ({ ms: Date.parse(event.ts), event }));
  keyed.sort((a, b) => {
    if (a.ms !== b.ms) return a.ms - b.ms;
    if (a.event.city !== b.event.city) return a.event.city < b.event.city ? -1 : 1;
    return a.event.seq - b.event.seq;
  });
  return keyed.map((k) => k.event);
}

const rotate = command({
  name: 'rotate',
  description: "Rotate the city's event log (prints the result: JSON, or a line on a terminal)",
  examples: ['ctl events rotate --city alpha', 'ctl events rotate --wait   # until the archive is compressed'],
  args: {
    wait: { type: 'boolean', description: 'Wait (up to 30 s) for the archive to be compressed' },
    ...cityFlag,
    ...jsonFlag,
    ...apiFlag,
  },
  async run({ args: a }) {
    let scope;
    try {
      scope = await inCity(a);
    } catch (err) {
      if (err instanceof CliError && err.message.startsWith('no city in scope')) {
        throw new CliError('rotate requires a city in scope; run from a city directory or pass --city');
      }
      throw err;
    }
    const { api, city } = scope;
    // With --wait the server waits up to 30 s for the compression before it answers.
    const rotating = a.wait ? patient(api, ROTATE_WAIT_MS) : api;
    const { data } = await call(
      rotating,
      rotating.client.POST('/v0/city/{cityName}/events/rotate', {
        params: { header: CSRF, path: { cityName: city.name }, query: a.wait ? { wait: true } : {} },
      }),
    );
    if (a.wait && data.archive?.compression_status === 'pending') {
      throw new CliError(
        `rotation succeeded but compression did not complete within 30s; archive_path=${data.archive.path}`,
      );
    }
    if (a.json || !process.stdout.isTTY) return json(data);
    if (!data.rotated) return line(`Nothing to rotate: ${data.reason ?? 'the log is empty'}`);
    line(
      `Rotated ${city.name}'s event log: events ${data.archive?.first_seq}–${data.archive?.last_seq} are in ` +
        `${data.archive?.path} (compression ${data.archive?.compression_status})`,
    );
  },
});

export const eventsCommand = withCommands(eventsDef, { rotate });
