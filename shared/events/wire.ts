import type { WireEvent } from '../dto/events.js';
import type { EventRecord } from './record.js';

/** A stored record as clients see it: the same fields, `payload` always present (`{}` when empty). */
export function toWireEvent(record: EventRecord): WireEvent {
  const event: WireEvent = {
    seq: record.seq,
    type: record.type,
    ts: record.ts,
    actor: record.actor,
    payload: {},
  };
  if (record.subject) event.subject = record.subject;
  if (record.message) event.message = record.message;
  const payload = record.payload;
  event.payload = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : {};
  return event;
}
