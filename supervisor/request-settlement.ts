import type { CityCreateSucceededPayload, CityUnregisterSucceededPayload } from '../shared/dto/events.js';
import type { EventLog } from '../shared/events/event-log.js';
import type { PayloadOf } from '../shared/events/event-types.js';
import type { CitySlot } from './city-slot.js';
import type { PendingRequest, Registry } from './registry.js';

/** An unregister whose controller has not gone after this long fails. */
const UNREGISTER_DEADLINE_MS = 30_000;

/** The terminal event of an asynchronous supervisor request. */
type Outcome =
  | { type: 'request.result.city.create'; payload: PayloadOf<'request.result.city.create'> }
  | { type: 'request.result.city.unregister'; payload: PayloadOf<'request.result.city.unregister'> }
  | { type: 'request.failed'; payload: PayloadOf<'request.failed'> };

export function isTerminal(type: string): boolean {
  return type === 'request.failed' || type.startsWith('request.result.');
}

/**
 * Exactly one terminal event per accepted city request (create, unregister), recorded in the supervisor's log
 * once its outcome is known, then the request forgotten from `cities.toml` — even across a supervisor restart
 * between the two, and when forgetting it fails and is retried.
 */
export class RequestSettlement {
  /** Requests whose terminal event is in the supervisor log; only forgetting them may remain to do. */
  private readonly settled = new Set<string>();
  /**
   * Cities (by path) whose controller had to be killed when asked to stop, how and when: an unregister
   * accepted before that did not end cleanly.
   */
  private readonly forcedStops = new Map<string, { message: string; at: number }>();

  constructor(
    private readonly registry: Registry,
    private readonly supervisorLog: EventLog,
  ) {}

  /** Before the API opens: the pending requests a previous supervisor recorded the outcome of but did not forget. */
  learnRecorded(): void {
    const pending = this.registry.pending;
    if (!pending.length) return;
    const ids = new Set(pending.map((p) => p.request_id));
    for (const event of this.supervisorLog.after(Math.min(...pending.map((p) => p.supervisor_seq)))) {
      const id = (event.payload as { request_id?: unknown }).request_id;
      if (isTerminal(event.type) && typeof id === 'string' && ids.has(id)) this.settled.add(id);
    }
  }

  /** The controller of the city at `path` did not stop when asked and was killed. */
  forcedStop(path: string, message: string): void {
    this.forcedStops.set(path, { message, at: Date.now() });
  }

  /** Records the terminal event of `pending` once its outcome is known (from `slot`), then forgets it. */
  async settle(pending: PendingRequest, slot: CitySlot | undefined, now: number): Promise<void> {
    if (!this.settled.has(pending.request_id)) {
      const outcome = this.outcomeOf(pending, slot, now);
      if (!outcome) return;
      await this.supervisorLog.append({ ...outcome, actor: 'api', subject: pending.name });
      this.settled.add(pending.request_id);
    }
    await this.registry.forget(pending.request_id);
    this.settled.delete(pending.request_id);
  }

  private outcomeOf(pending: PendingRequest, slot: CitySlot | undefined, now: number): Outcome | undefined {
    if (pending.operation === 'city.create') {
      if (slot?.running) {
        const payload: CityCreateSucceededPayload = {
          request_id: pending.request_id,
          name: slot.name,
          path: pending.path,
        };
        return { type: 'request.result.city.create', payload };
      }
      if (!this.registry.cityAt(pending.path)) {
        return failure(pending, 'city_init_failed', 'the city was unregistered before its controller started');
      }
      if (slot && slot.failedStarts > 0 && !slot.process) {
        return failure(pending, 'city_init_failed', slot.lastError ?? 'the controller failed to start');
      }
      return undefined;
    }
    if (!slot?.process) {
      const forced = this.forcedStops.get(pending.path);
      if (forced !== undefined && forced.at >= Date.parse(pending.accepted_at)) {
        this.forcedStops.delete(pending.path);
        return failure(pending, 'city_unregister_failed', forced.message);
      }
      const payload: CityUnregisterSucceededPayload = {
        request_id: pending.request_id,
        name: pending.name,
        path: pending.path,
      };
      return { type: 'request.result.city.unregister', payload };
    }
    if (now - Date.parse(pending.accepted_at) > UNREGISTER_DEADLINE_MS) {
      return failure(pending, 'city_unregister_failed', `controller (pid ${slot.process.pid}) did not stop`);
    }
    return undefined;
  }
}

function failure(pending: PendingRequest, code: string, message: string): Outcome {
  return {
    type: 'request.failed',
    payload: { request_id: pending.request_id, operation: pending.operation, error_code: code, error_message: message },
  };
}
