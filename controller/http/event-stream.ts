import type { Middleware } from 'koa';
import { parseSeq } from '../../shared/events/cursor.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { StreamSettings } from '../../shared/events/stream-settings.js';
import { toWireEvent } from '../../shared/events/wire.js';
import { Problem } from '../../shared/http/problem.js';
import { sseRoute, SseStream } from '../../shared/http/sse.js';
import type { CityRuntime } from '../city-runtime.js';

const REPLAY_BATCH = 1000;

/** Each record's frame data, serialised once however many subscribers it goes to. */
const frameData = new WeakMap<EventRecord, string>();

function dataOf(record: EventRecord): string {
  let data = frameData.get(record);
  if (data === undefined) {
    data = JSON.stringify(toWireEvent(record));
    frameData.set(record, data);
  }
  return data;
}

/** Where a city stream starts: after `Last-Event-ID` (wins), else after `after_seq`, else at the head. */
export function streamStart(lastEventId: string, afterSeq: unknown, head: () => number): number {
  if (lastEventId.trim() !== '') return parseSeq(lastEventId, 'Last-Event-ID');
  if (Array.isArray(afterSeq)) throw new Problem('invalid-cursor', 'invalid_cursor: after_seq given more than once');
  if (typeof afterSeq === 'string' && afterSeq.trim() !== '') return parseSeq(afterSeq, 'after_seq');
  return head();
}

/**
 * `GET /v0/city/{cityName}/events/stream`: the city's events as SSE (`id: <seq>`, `event: event`), resuming
 * exclusively after a position, then live. Replay reads the log in batches, pausing while the client is
 * behind; live events that arrive meanwhile wait in a bounded queue.
 */
export function cityEventStream(city: CityRuntime, settings: StreamSettings): Middleware {
  const path = `/v0/city/${encodeURIComponent(city.name)}/events/stream`;
  return sseRoute(path, async (ctx) => {
    // Everything that can fail happens before the 200 is committed.
    const after = streamStart(ctx.get('Last-Event-ID'), ctx.query.after_seq, () => city.log.head());
    const stream = new SseStream(ctx, settings);
    let last = after;
    let queue: EventRecord[] | undefined = [];
    const deliver = (records: EventRecord[]) => {
      for (const record of records) {
        if (record.seq <= last) continue;
        last = record.seq;
        if (!stream.send('event', dataOf(record), String(record.seq))) return;
      }
    };
    const unsubscribe = city.tail.subscribe((records) => {
      if (!queue) {
        if (stream.keepingUp()) deliver(records);
      } else if (queue.push(...records) > settings.maxQueuedEvents) {
        stream.close();
      }
    });
    stream.onClose(unsubscribe);
    // History, paced by the client; then what arrived meanwhile; then live.
    while (!stream.isClosed) {
      const batch = city.log.after(last, REPLAY_BATCH);
      if (batch.length === 0) break;
      for (const record of batch) {
        deliver([record]);
        await stream.paced();
      }
    }
    while (queue.length && !stream.isClosed) {
      deliver(queue.splice(0));
      await stream.paced();
    }
    queue = undefined;
    city.tail.poke();
  });
}
