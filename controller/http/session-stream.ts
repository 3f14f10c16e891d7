import type { Middleware } from 'koa';
import type { PendingInteraction } from '../../shared/dto/sessions.js';
import { parseSeq } from '../../shared/events/cursor.js';
import type { EventRecord } from '../../shared/events/record.js';
import type { StreamSettings } from '../../shared/events/stream-settings.js';
import { decodeSegment } from '../../shared/http/path-segment.js';
import { Problem } from '../../shared/http/problem.js';
import { refusedUnlessRead, SseStream } from '../../shared/http/sse.js';
import type { CityRuntime } from '../city-runtime.js';
import type { SessionEvents } from '../sessions/session.js';
import { toEntry, turnOf } from '../sessions/transcript.js';

const REPLAY_BATCH = 500;
/** Without a position a stream starts with this many of the newest entries (then goes live). */
const DEFAULT_BACKLOG = 100;

type Format = 'conversation' | 'raw';

/** The frame of a transcript entry in `format`, or undefined when the format does not show it. */
function frameOf(record: EventRecord, format: Format): { event: string; data: string } | undefined {
  if (format === 'raw') return { event: 'message', data: JSON.stringify(toEntry(record)) };
  const turn = turnOf(record);
  return turn ? { event: 'turn', data: JSON.stringify(turn) } : undefined;
}

/**
 * `GET /v0/city/{cityName}/session/{id}/stream` (`stream-session`): a session as Server-Sent Events. The headers
 * say its state (`CTL-Session-State`) and, when its program is not running, `CTL-Session-Status: stopped`. Frames:
 * `turn` (`format=conversation`, the default) or `message` (`format=raw`) for each transcript entry, `id:` its
 * seq; `activity` (`idle`/`in-turn`), `pending` and `pending_cleared` as they happen; heartbeats. It replays
 * the entries after `Last-Event-ID` (wins) or `after_seq`, else the newest 100, then goes live; a closed
 * session gives that snapshot and ends. A session with no transcript that is not running is a 404.
 */
export function sessionStream(city: CityRuntime, settings: StreamSettings): Middleware {
  const prefix = `/v0/city/${encodeURIComponent(city.name)}/session/`;
  return async (ctx, next) => {
    if (!ctx.path.startsWith(prefix) || !ctx.path.endsWith('/stream')) {
      await next();
      return;
    }
    const id = ctx.path.slice(prefix.length, -'/stream'.length);
    if (id === '' || id.includes('/')) {
      await next();
      return;
    }
    if (refusedUnlessRead(ctx)) return;
    // Everything that can fail happens before the 200 is committed.
    const session = city.sessions.find(decodeSegment(id));
    const formatQuery = ctx.query.format;
    if (formatQuery !== undefined && formatQuery !== 'conversation' && formatQuery !== 'raw') {
      const message = 'format must be conversation or raw';
      throw new Problem('validation-failed', `invalid: ${message}`, {
        errors: [{ location: 'query.format', message, value: formatQuery }],
      });
    }
    const format: Format = formatQuery === 'raw' ? 'raw' : 'conversation';
    const head = session.transcript.head();
    if (head === 0 && !session.running) {
      throw new Problem('session-not-found', `not_found: session ${session.id} has no transcript and is not running`);
    }
    const header = ctx.get('Last-Event-ID').trim();
    const afterSeq = ctx.query.after_seq;
    if (Array.isArray(afterSeq)) throw new Problem('invalid-cursor', 'invalid_cursor: after_seq given more than once');
    let after: number;
    if (header !== '') after = parseSeq(header, 'Last-Event-ID');
    else if (typeof afterSeq === 'string' && afterSeq.trim() !== '') after = parseSeq(afterSeq, 'after_seq');
    else after = Math.max(0, head - DEFAULT_BACKLOG);

    ctx.set('CTL-Session-State', session.state);
    if (!session.running) ctx.set('CTL-Session-Status', 'stopped');
    const stream = new SseStream(ctx, settings);
    // Someone watching a session is attached to it: a configuration change waits for them before it restarts it.
    stream.onClose(session.watch());
    let last = after;
    const deliver = (record: EventRecord) => {
      if (record.seq <= last) return;
      last = record.seq;
      const frame = frameOf(record, format);
      if (frame) stream.send(frame.event, frame.data, String(record.seq));
    };
    // Live events wait here while the history replays, so nothing overtakes it.
    let queued: (() => void)[] | undefined = [];
    const live = <K extends keyof SessionEvents>(event: K, handle: (...args: SessionEvents[K]) => void) => {
      const listener = (...args: SessionEvents[K]) => {
        if (queued) queued.push(() => handle(...args));
        else if (stream.keepingUp()) handle(...args);
      };
      session.on(event, listener as never);
      stream.onClose(() => session.off(event, listener as never));
    };
    const pendingFrame = (pending: PendingInteraction) => stream.send('pending', JSON.stringify(pending));
    live('entry', deliver);
    live('activity', (activity) => stream.send('activity', JSON.stringify({ activity })));
    live('pending', pendingFrame);
    live('pending_cleared', (requestId) => stream.send('pending_cleared', JSON.stringify({ request_id: requestId })));
    live('state', (state) => {
      if (state === 'closed') stream.close();
    });

    while (!stream.isClosed) {
      const batch = session.transcript.after(last, REPLAY_BATCH);
      if (batch.length === 0) break;
      for (const record of batch) {
        deliver(record);
        await stream.paced();
      }
    }
    if (session.state === 'closed') {
      stream.close();
      return;
    }
    if (session.running) stream.send('activity', JSON.stringify({ activity: session.view().activity ?? 'idle' }));
    if (session.pending) pendingFrame(session.pending);
    for (const run of queued) run();
    queued = undefined;
  };
}
