import { setTimeout as sleep } from 'node:timers/promises';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { CityInfo } from '../shared/dto/cities.js';
import { formatCursor, parseCursor } from '../shared/events/cursor.js';
import { call, CSRF, failureText } from './_api.js';
import { CliError } from './_errors.js';
import { listCities } from './_scope.js';
import type { Api } from './_types.js';

// Reading an event stream (`GET /v0/city/{name}/events/stream`, `GET /v0/events/stream`): for `ctl events
// --watch/--follow`, and for commands that wait for an outcome (`ctl init`, `register`, `unregister`).

const BACKOFF_START_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

export interface StreamOptions {
  /** The city's stream; the supervisor's (every log, events tagged with their city) when undefined. */
  city?: CityInfo;
  /** Read the events after this position: a seq (city stream) or a composite cursor (supervisor stream). */
  after: string;
  /** After a break (the stream ended, a restart, a 5xx), connect again from the last position; else it ends. */
  reconnect: boolean;
  /** Stops the reading (a deadline). */
  signal?: AbortSignal;
  /** What a reconnect has to say, for a person. */
  note(text: string): void;
  /** The stream is open (again): a view that said it was reconnecting can say it is live. */
  opened?(): void;
  /** Another stream of the city (a session's, `/session/{id}/stream`) and the frame names to read from it. */
  other?: { path: string; frames: string[] };
}

/** How reading ended: `visit` had what it wanted, the signal aborted it, or (without reconnect) the stream ended. */
export type StreamEnd = 'done' | 'aborted' | 'ended';

/**
 * Reads the events after `o.after`, handing each envelope (parsed, and its text) to `visit` until it returns true.
 * Heartbeats and frames of other names are skipped; every frame's `id:` is remembered, printed or not, so a
 * reconnect (with `Last-Event-ID`, backing off 1 s doubling to 30 s) neither loses nor repeats an event. A
 * setup problem (404, 503 `no_providers:`), a frame that does not decode, or a failure without `reconnect` is a
 * CliError.
 */
export async function readEvents(
  api: Api,
  o: StreamOptions,
  visit: (envelope: Record<string, unknown>, data: string, frame: string) => boolean,
): Promise<StreamEnd> {
  const frameName = o.city ? 'event' : 'tagged_event';
  const names = o.other?.frames ?? [frameName];
  const cityBase = o.city ? `${api.base}/v0/city/${encodeURIComponent(o.city.name)}` : undefined;
  const url =
    cityBase === undefined ? `${api.base}/v0/events/stream` : `${cityBase}${o.other?.path ?? '/events/stream'}`;
  let position = o.after;
  let backoff = BACKOFF_START_MS;
  /** Once a stream was open, a 404 means the city is restarting (worth waiting for); before, it is not there. */
  let connectedOnce = false;
  const retry = async (note: string, waitMs = backoff): Promise<boolean> => {
    o.note(note);
    try {
      await sleep(waitMs, undefined, { signal: o.signal });
    } catch {
      return false; // aborted
    }
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    if (!o.city) position = await withNewCities(api, position);
    return true;
  };
  for (;;) {
    const abort = new AbortController();
    const signal = o.signal ? AbortSignal.any([abort.signal, o.signal]) : abort.signal;
    let connection: Connection;
    try {
      connection = await openStream(api.streamFetch, url, { 'Last-Event-ID': position, ...CSRF }, signal);
    } catch (err) {
      if (o.signal?.aborted) return 'aborted';
      if (!o.reconnect) throw new CliError(await failureText(err, api));
      if (!(await retry(`connect failed, retrying: ${describeFetchError(err)}`))) return 'aborted';
      continue;
    }
    if (!connection.frames) {
      const detail =
        connection.problem?.detail ?? connection.problem?.title ?? `API returned HTTP ${connection.status}`;
      // A city that is restarting, or a supervisor that is busy, is worth waiting for; a stream that cannot
      // exist (no city registered at all) is not.
      const transient =
        !detail.startsWith('no_providers:') &&
        (connection.status === 429 || connection.status >= 500 || (connection.status === 404 && connectedOnce));
      if (!o.reconnect || !transient) throw new CliError(detail);
      const note = `transient HTTP ${connection.status}, reconnecting: ${detail}`;
      if (!(await retry(note, connection.retryAfterMs ?? backoff))) return 'aborted';
      continue;
    }
    connectedOnce = true;
    o.opened?.();
    let advanced = false;
    try {
      for await (const frame of connection.frames) {
        // A frame without an `event:` line is a data frame too; heartbeats and other names are not ours.
        const name = frame.event ?? frameName;
        if (!names.includes(name)) continue;
        if (frame.id !== undefined) {
          position = frame.id;
          advanced = true;
        }
        if (frame.data === '') continue;
        let envelope: unknown;
        try {
          envelope = JSON.parse(frame.data);
        } catch (err) {
          throw new CliError(`decode: ${(err as Error).message}`);
        }
        if (typeof envelope !== 'object' || envelope === null)
          throw new CliError('decode: frame data is not an object');
        if (visit(envelope as Record<string, unknown>, frame.data, name)) {
          abort.abort();
          return 'done';
        }
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
      if (o.signal?.aborted) return 'aborted';
      if (!o.reconnect) throw new CliError(`stream failed: ${describeFetchError(err)}`);
    }
    if (!o.reconnect) return 'ended';
    if (advanced) backoff = BACKOFF_START_MS;
    if (!(await retry('stream ended, reconnecting'))) return 'aborted';
  }
}

/** Where "now" is: the city's head seq, or the supervisor's composite cursor of every log's head. */
export async function currentPosition(api: Api, city: CityInfo | undefined): Promise<string> {
  if (city) {
    const { response } = await call(
      api,
      api.client.GET('/v0/city/{cityName}/events', { params: { path: { cityName: city.name }, query: { limit: 1 } } }),
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
  try {
    const cursor = parseCursor(position);
    if (cursor === '0') return position;
    for (const city of await listCities(api)) if (!cursor.has(city.name)) cursor.set(city.name, 0);
    return formatCursor(cursor);
  } catch {
    return position; // the supervisor is not back yet; the next try asks again
  }
}

function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

interface Connection {
  status: number;
  /** The problem body of a non-200 answer. */
  problem?: { detail?: string; title?: string };
  retryAfterMs?: number;
  /** Frames until the stream ends (or the signal aborts); only for a 200. */
  frames?: AsyncGenerator<EventSourceMessage>;
}

/**
 * Opens an SSE stream with `fetchImpl` (the API's stream fetch: bounded to connect, not to run); frames are
 * parsed by eventsource-parser (line endings, split chunks and comments as the standard says).
 */
async function openStream(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Connection> {
  const response = await fetchImpl(url, { headers: { Accept: 'text/event-stream', ...headers }, signal });
  if (response.status !== 200 || !response.body) {
    let problem: Connection['problem'];
    try {
      problem = (await response.json()) as Connection['problem'];
    } catch {
      problem = undefined;
    }
    const retryAfter = Number(response.headers.get('retry-after'));
    return {
      status: response.status,
      problem,
      retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 120) * 1000 : undefined,
    };
  }
  return { status: 200, frames: frames(response.body) };
}

async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length) yield queue.shift()!;
  }
}
