import { setTimeout as sleep } from 'node:timers/promises';
import { defineCommand } from 'citty';
import type { CityInfo } from '../../shared/dto/cities.js';
import type { WireEvent, WireTaggedEvent } from '../../shared/dto/events.js';
import { parseDuration } from '../../shared/duration.js';
import { parseCursor } from '../../shared/events/cursor.js';
import { apiArg, call, connect, CSRF, failureText, patient, type Api } from '../_api.js';
import { CliError, leafCommand } from '../_command.js';
import { parsePayloadMatchers, payloadMatches, type PayloadMatchers } from '../_payload-match.js';
import { repeated } from '../_work.js';
import { allPages } from '../_pages.js';
import { listCities, resolveCity } from '../_scope.js';
import { openSse } from '../_sse.js';

const BACKOFF_START_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
const ROTATE_WAIT_MS = 30_000;

const args = {
  type: { type: 'string', description: 'Only events of this type' },
  since: { type: 'string', description: 'Only events at most this old (5m, 1h30m)' },
  'payload-match': {
    type: 'string',
    description: 'Only events whose payload has key=value (dotted paths into objects; repeat a key for OR)',
    valueHint: 'KEY=VALUE',
  },
  watch: { type: 'boolean', description: 'Wait for the first matching event, print it and exit' },
  follow: { type: 'boolean', description: 'Print matching events as they happen, reconnecting as needed' },
  seq: { type: 'boolean', description: 'Print the current position (city head seq, or supervisor cursor)' },
  timeout: { type: 'string', description: '--watch: give up after this long, printing nothing (default 30s)' },
  after: { type: 'string', description: 'City scope, --watch/--follow: start after this seq', valueHint: 'SEQ' },
  'after-cursor': {
    type: 'string',
    description: 'Supervisor scope, --watch/--follow: start after this composite cursor',
    valueHint: 'CURSOR',
  },
  city: { type: 'string', description: 'City name or directory (default: CTL_CITY, or the city you are in)' },
  ...apiArg,
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

function write(line: string): void {
  process.stdout.write(`${line}\n`);
}

const eventsDef = defineCommand({
  meta: { name: 'events', description: 'List, watch or follow events (JSON Lines), or print the current position' },
  args,
  async run({ args: a, rawArgs }) {
    // citty runs a command's own `run` after its subcommand's: `ctl events rotate` is done by then.
    if (rawArgs[0] === 'rotate') return;
    // Flag combinations first, then local values: they fail the same way with or without a supervisor.
    const hasAfter = a.after !== undefined;
    const hasAfterCursor = a['after-cursor'] !== undefined && a['after-cursor'].trim() !== '';
    if (hasAfter && hasAfterCursor) throw new CliError('--after and --after-cursor are mutually exclusive');
    const mode = a.seq ? 'seq' : a.follow ? 'follow' : a.watch ? 'watch' : 'list';
    if ((hasAfter || hasAfterCursor) && mode !== 'follow' && mode !== 'watch') {
      throw new CliError(
        '--after/--after-cursor require --follow or --watch (they resume a stream); use --since to bound a list by time',
      );
    }
    if (hasAfter && !/^\d+$/.test(a.after.trim())) {
      throw new CliError(`invalid --after ${JSON.stringify(a.after)}: expected a non-negative integer`);
    }
    if (hasAfterCursor && a['after-cursor'].trim() !== '0') {
      try {
        parseCursor(a['after-cursor']);
      } catch {
        throw new CliError(`invalid --after-cursor ${JSON.stringify(a['after-cursor'])}: expected name:seq entries`);
      }
    }
    let sinceMs: number | undefined;
    if (a.since !== undefined) {
      try {
        sinceMs = parseDuration(a.since);
      } catch (err) {
        throw new CliError(`invalid --since ${JSON.stringify(a.since)}: ${(err as Error).message}`);
      }
    }
    let timeoutMs = 30_000;
    if (mode === 'watch' && a.timeout !== undefined) {
      try {
        timeoutMs = parseDuration(a.timeout);
      } catch (err) {
        throw new CliError(`invalid --timeout ${JSON.stringify(a.timeout)}: ${(err as Error).message}`);
      }
      if (!(timeoutMs > 0)) throw new CliError(`invalid --timeout ${JSON.stringify(a.timeout)}: must be positive`);
    }
    const filters: Filters = { type: a.type, payload: parsePayloadMatchers(repeated(rawArgs, '--payload-match')) };
    if (sinceMs !== undefined && mode !== 'list') filters.notBefore = Date.now() - sinceMs;

    const deadline = mode === 'watch' ? AbortSignal.timeout(timeoutMs) : undefined;
    // Whatever it is waiting for then (finding the city, the position, the stream), a watch that runs out of
    // time prints nothing and succeeds.
    if (mode === 'watch') setTimeout(() => process.exit(0), timeoutMs).unref();
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

    if (mode === 'seq') return write(await currentPosition(api, city));
    if (mode === 'list') return list(api, city, filters, a.since);
    await stream(api, city, filters, {
      follow: mode === 'follow',
      deadline,
      after: hasAfter ? a.after.trim() : undefined,
      afterCursor: hasAfterCursor ? a['after-cursor'].trim() : undefined,
    });
  },
});

async function list(api: Api, city: CityInfo | undefined, filters: Filters, since: string | undefined): Promise<void> {
  const server = { ...(filters.type !== undefined ? { type: filters.type } : {}), ...(since ? { since } : {}) };
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
    for (const event of byTimeCitySeq(pages.reverse().flat())) {
      if (matches(event, filters)) write(JSON.stringify(event));
    }
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
    for (const event of page.reverse()) if (matches(event, filters)) write(JSON.stringify(event));
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

/**
 * `--watch` and `--follow`: reads the stream from an explicit position (never the server's head-start, so
 * a reconnect cannot skip anything) and remembers the `id:` of every frame, printed or not; `--follow`
 * reconnects after any break from the last id, backing off 1 s doubling to 30 s.
 */
async function stream(
  api: Api,
  city: CityInfo | undefined,
  filters: Filters,
  o: { follow: boolean; deadline: AbortSignal | undefined; after?: string; afterCursor?: string },
): Promise<void> {
  const frameName = city ? 'event' : 'tagged_event';
  const url = city
    ? `${api.base}/v0/city/${encodeURIComponent(city.name)}/events/stream`
    : `${api.base}/v0/events/stream`;
  let position: string;
  try {
    position = o.after ?? o.afterCursor ?? (await currentPosition(api, city));
  } catch (err) {
    if (o.deadline?.aborted) return;
    throw err;
  }
  let backoff = BACKOFF_START_MS;
  /** Once a stream was open, a 404 means the city is restarting (worth waiting for); before, it is not there. */
  let connectedOnce = false;
  const retry = async (note: string, waitMs = backoff) => {
    process.stderr.write(`ctl events: ${note}\n`);
    await sleep(waitMs);
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    if (!city) position = await withNewCities(api, position);
  };
  for (;;) {
    const abort = new AbortController();
    const signal = o.deadline ? AbortSignal.any([abort.signal, o.deadline]) : abort.signal;
    let connection;
    try {
      connection = await openSse(api.streamFetch, url, { 'Last-Event-ID': position, ...CSRF }, signal);
    } catch (err) {
      if (o.deadline?.aborted) return;
      if (!o.follow) throw new CliError(await failureText(err, api));
      const reason = describeFetchError(err);
      await retry(`connect failed, retrying: ${reason}`);
      continue;
    }
    if (connection.status !== 200 || !connection.frames) {
      const detail =
        connection.problem?.detail ?? connection.problem?.title ?? `API returned HTTP ${connection.status}`;
      // Following a city that is restarting, or a supervisor that is busy, is worth waiting for; a stream
      // that cannot exist (no city registered at all) is not.
      const transient =
        !detail.startsWith('no_providers:') &&
        (connection.status === 429 || connection.status >= 500 || (connection.status === 404 && connectedOnce));
      if (!o.follow || !transient) throw new CliError(detail);
      await retry(`transient HTTP ${connection.status}, reconnecting: ${detail}`, connection.retryAfterMs ?? backoff);
      continue;
    }
    connectedOnce = true;
    let advanced = false;
    let printed = false;
    try {
      for await (const frame of connection.frames) {
        // A frame without an `event:` line is a data frame too; heartbeats and other names are not ours.
        if ((frame.event ?? frameName) !== frameName) continue;
        if (frame.id !== undefined) {
          position = frame.id;
          advanced = true;
        }
        if (frame.data === '') continue;
        let envelope: { type?: unknown; payload?: unknown };
        try {
          envelope = JSON.parse(frame.data) as typeof envelope;
        } catch (err) {
          throw new CliError(`decode: ${(err as Error).message}`);
        }
        if (typeof envelope !== 'object' || envelope === null)
          throw new CliError('decode: frame data is not an object');
        if (!matches(envelope, filters)) continue;
        write(frame.data);
        if (!o.follow) {
          printed = true;
          break;
        }
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
      if (abort.signal.aborted) return;
      if (o.deadline?.aborted) return;
      if (!o.follow) throw new CliError(`stream failed: ${describeFetchError(err)}`);
    }
    if (!o.follow) {
      // --watch: done after one line; an end before any match is a failure (a timeout is not).
      abort.abort();
      if (printed || o.deadline?.aborted) return;
      throw new CliError('stream ended before a matching event arrived');
    }
    if (advanced) backoff = BACKOFF_START_MS;
    await retry('stream ended, reconnecting');
  }
}

/** Where "now" is: the city's head seq, or the supervisor's composite cursor of every log's head. */
async function currentPosition(api: Api, city: CityInfo | undefined): Promise<string> {
  if (city) {
    const { response } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/events', {
        params: { path: { cityName: city.name }, query: { limit: 1 } },
      }),
    );
    const index = response.headers.get('X-CTL-Index');
    if (index === null) throw new CliError('missing X-CTL-Index header');
    return index;
  }
  const { data } = await call(api, api.client.GET('/v0/events', { params: { query: { limit: 1 } } }));
  return data.event_cursor;
}

/**
 * Before resuming the supervisor stream: cities that appeared while we were disconnected are not in our
 * cursor, and the server would start them at their head; name them at 0 so their first events reach us.
 */
async function withNewCities(api: Api, position: string): Promise<string> {
  if (position.trim() === '0') return position;
  try {
    const cursor = parseCursor(position);
    if (cursor === '0') return position;
    for (const city of await listCities(api)) if (!cursor.has(city.name)) cursor.set(city.name, 0);
    return [...cursor.entries()]
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([name, seq]) => `${name}:${seq}`)
      .join(',');
  } catch {
    return position; // the supervisor is not back yet; the next try asks again
  }
}

function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

// Its errors say `ctl events:`, as the events command's own do.
const rotate = leafCommand('events', {
  meta: { name: 'rotate', description: "Rotate the city's event log (prints the result as one JSON line)" },
  args: {
    wait: { type: 'boolean', description: 'Wait (up to 30 s) for the archive to be compressed' },
    city: { type: 'string', description: 'City name or directory (default: CTL_CITY, or the city you are in)' },
    ...apiArg,
  },
  async run({ args: a }) {
    const api = connect(a.api);
    const city = await resolveCity(api, a.city);
    if (!city) throw new CliError('rotate requires a city in scope; run from a city directory or pass --city');
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
    write(JSON.stringify(data));
  },
});

export const eventsCommand = leafCommand('events', { ...eventsDef, subCommands: { rotate } });
