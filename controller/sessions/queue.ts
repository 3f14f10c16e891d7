import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SubmitIntent } from '../../shared/dto/sessions.js';

/** A message accepted for a session and not yet delivered to its program. */
export interface QueuedMessage {
  /** The delivered message's id: its `user` transcript entry carries it. */
  message_id: string;
  text: string;
  intent: SubmitIntent;
  /** The asynchronous request its delivery ends (absent for a create's first message). */
  request_id?: string;
  /** Which request: `session.message` or `session.submit`. */
  operation?: 'session.message' | 'session.submit';
  /** It waited (the program was starting, asleep, busy or asking) instead of going straight through. */
  queued: boolean;
  accepted_at: string;
}

/**
 * A session's undelivered messages, in order, kept in `<session dir>/queue.json` (rewritten whole on every
 * change; it holds a handful of messages at most), so that a controller restart delivers them — or fails their
 * requests — instead of forgetting them.
 */
export class MessageQueue {
  private readonly path: string;
  private items: QueuedMessage[];

  constructor(dir: string) {
    this.path = join(dir, 'queue.json');
    this.items = load(this.path);
  }

  get length(): number {
    return this.items.length;
  }

  peek(): QueuedMessage | undefined {
    return this.items[0];
  }

  push(message: QueuedMessage): void {
    this.items.push(message);
    this.save();
  }

  /**
   * Queues a message ahead of every waiting one that is not itself `interrupt_now` (those keep their order): it
   * goes next. Never ahead of `inFlight`, the message being handed to the program.
   */
  pushAhead(message: QueuedMessage, inFlight?: QueuedMessage): void {
    const from = inFlight && this.items[0] === inFlight ? 1 : 0;
    let at = this.items.findIndex((m, i) => i >= from && m.intent !== 'interrupt_now');
    if (at < 0) at = this.items.length;
    this.items.splice(at, 0, message);
    this.save();
  }

  /** Takes one message out: the one delivered, wherever it now stands. */
  take(message: QueuedMessage): QueuedMessage {
    const at = this.items.indexOf(message);
    if (at >= 0) this.items.splice(at, 1);
    this.save();
    return message;
  }

  /** Takes everything out (to fail their requests). */
  drain(): QueuedMessage[] {
    const all = this.items;
    this.items = [];
    this.save();
    return all;
  }

  private save(): void {
    if (this.items.length === 0) {
      rmSync(this.path, { force: true });
      return;
    }
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.items));
    renameSync(tmp, this.path);
  }
}

function load(path: string): QueuedMessage[] {
  try {
    const items: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return Array.isArray(items) ? (items as QueuedMessage[]) : [];
  } catch {
    return [];
  }
}
