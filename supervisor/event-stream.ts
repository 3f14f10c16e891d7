import type { Middleware } from 'koa';
import { parseCursor, REPLAY_ALL, StreamPositions } from '../shared/events/cursor.js';
import type { EventRecord } from '../shared/events/record.js';
import type { StreamSettings } from '../shared/events/stream-settings.js';
import { Problem } from '../shared/http/problem.js';
import { SharedFrames, sseFrame, sseRoute, SseStream } from '../shared/http/sse.js';
import { SUPERVISOR_SCOPE } from '../shared/paths.js';
import type { EventHub, HubSubscriber } from './event-hub.js';
import { mergeOrder, tagEvent, timed, type EventSource, type TimedEvent } from './event-view.js';

const REPLAY_BATCH = 500;

/** Each record's frame data, serialised once however many subscribers it goes to. */
const frameData = new WeakMap<EventRecord, string>();

/**
 * One fan-out's frames of a log's batch, keyed by the batch (the hub hands every subscriber the same array): a
 * stream at the same cursor before it writes the same text, so it is made and encoded once for all of them.
 */
interface BatchFrames {
  scope: string;
  cursorBefore: string;
  cursorAfter: number | undefined;
  frames: SharedFrames;
}
const batchFrames = new WeakMap<EventRecord[], BatchFrames>();

function dataOf(scope: string, record: EventRecord): string {
  let data = frameData.get(record);
  if (data === undefined) {
    data = JSON.stringify(tagEvent(scope, record));
    frameData.set(record, data);
  }
  return data;
}

/**
 * `GET /v0/events/stream`: every log merged as SSE (`event: tagged_event`), each frame's `id:` the whole
 * composite cursor after it. Resumes after `Last-Event-ID` (wins) or `after_cursor`: a log the cursor names
 * resumes after its seq, a log it does not name starts at its head, `0` replays everything; a city
 * registered while the stream is open joins it from its first event. History is replayed merged by time,
 * then events flow live as the hub reads them.
 */
export function supervisorEventStream(hub: EventHub, settings: StreamSettings): Middleware {
  return sseRoute('/v0/events/stream', async (ctx) => {
    hub.sync();
    const sources = hub.sources();
    if (!sources.some((s) => s.scope !== SUPERVISOR_SCOPE)) {
      throw new Problem(
        'service-unavailable',
        'no_providers: no city is registered, so no event provider is available; create one with POST /v0/city',
      );
    }
    const header = ctx.get('Last-Event-ID');
    const query = ctx.query.after_cursor;
    if (Array.isArray(query)) throw new Problem('invalid-cursor', 'invalid_cursor: after_cursor given more than once');
    const given = header.trim() !== '' ? header : (query ?? '');
    const cursor =
      given.trim() === '' ? undefined : parseCursor(given, header.trim() !== '' ? 'Last-Event-ID' : 'after_cursor');

    const positions = new StreamPositions();
    if (cursor instanceof Map) for (const [scope, seq] of cursor) positions.set(scope, seq);
    for (const source of sources) {
      if (cursor === REPLAY_ALL) positions.set(source.scope, 0);
      else if (!positions.has(source.scope)) positions.set(source.scope, source.log.head());
    }

    const stream = new SseStream(ctx, settings);
    const frame = (scope: string, record: EventRecord) => {
      positions.set(scope, record.seq);
      return sseFrame('tagged_event', dataOf(scope, record), positions.cursor());
    };
    const emit = (scope: string, record: EventRecord) => stream.sendFrames([frame(scope, record)]);
    // A batch of one log's records goes out in one write: the fan-out's cost is per batch and stream, and a
    // batch grows the busier the hub is (its tails read whatever arrived since their last read).
    const deliver = (scope: string, records: EventRecord[]) => {
      const cursorBefore = positions.cursor();
      const made = batchFrames.get(records);
      if (made && made.scope === scope && made.cursorBefore === cursorBefore) {
        if (made.cursorAfter !== undefined) positions.set(scope, made.cursorAfter);
        stream.sendShared(made.frames);
        return;
      }
      const frames: string[] = [];
      for (const record of records) if (record.seq > (positions.get(scope) ?? 0)) frames.push(frame(scope, record));
      const shared = new SharedFrames(frames.join(''));
      if (!made) batchFrames.set(records, { scope, cursorBefore, cursorAfter: positions.get(scope), frames: shared });
      stream.sendShared(shared);
    };
    // While history replays, live records wait here (bounded), so nothing overtakes the replay.
    let queue: [string, EventRecord[]][] | undefined = [];
    let queued = 0;
    const subscriber: HubSubscriber = {
      records(scope, records) {
        if (!queue) {
          if (stream.keepingUp()) deliver(scope, records);
          return;
        }
        queue.push([scope, records]);
        queued += records.length;
        if (queued > settings.maxQueuedEvents) stream.close();
      },
      sourceAdded(source) {
        // A city registered while we stream: from its first event, unless the cursor said otherwise.
        if (!positions.has(source.scope)) positions.set(source.scope, 0);
        const backlog = source.log.after(positions.get(source.scope)!);
        if (queue) queue.push([source.scope, backlog]);
        else deliver(source.scope, backlog);
      },
    };
    const unsubscribe = hub.subscribe(subscriber);
    stream.onClose(unsubscribe);

    await replay(sources, positions, stream, emit);
    while (queue.length && !stream.isClosed) {
      const [scope, records] = queue.shift()!;
      deliver(scope, records);
      await stream.paced();
    }
    queue = undefined;
  });
}

/** History after each log's position, merged in `mergeOrder`, in batches paced by the client. */
async function replay(
  sources: EventSource[],
  positions: Map<string, number>,
  stream: SseStream,
  emit: (scope: string, record: EventRecord) => boolean,
): Promise<void> {
  interface Buffer {
    source: EventSource;
    records: EventRecord[];
    next: number;
    done: boolean;
    head?: TimedEvent;
  }
  const buffers = new Map<string, Buffer>();
  for (const source of sources) buffers.set(source.scope, { source, records: [], next: 0, done: false });
  while (!stream.isClosed) {
    let best: { scope: string; buffer: Buffer; head: TimedEvent } | undefined;
    for (const [scope, buffer] of buffers) {
      if (buffer.next === buffer.records.length && !buffer.done) {
        const from = positions.get(scope) ?? 0;
        // A log at its head has nothing to replay (the common open, with no cursor): its head is a cheap read,
        // a read after a seq is not (it looks for the seq's place in the file, and lists the archives).
        buffer.records = from >= buffer.source.log.head() ? [] : buffer.source.log.after(from, REPLAY_BATCH);
        buffer.next = 0;
        if (buffer.records.length === 0) buffer.done = true;
      }
      const record = buffer.records[buffer.next];
      if (!record) continue;
      buffer.head ??= timed(scope, record);
      if (!best || mergeOrder(buffer.head, best.head) < 0) best = { scope, buffer, head: buffer.head };
    }
    if (!best) return;
    const record = best.buffer.records[best.buffer.next++]!;
    best.buffer.head = undefined;
    if (!emit(best.scope, record)) return;
    await stream.paced();
  }
}
