import type { EventPayloadTypes } from '../events/event-types.js';

/** Payload of `city.created` and `city.unregister_requested`. */
export interface CityLifecyclePayload {
  /** Resolved city name. */
  name: string;
  /** Absolute city directory. */
  path: string;
}

/** Payload of `request.result.city.create`. */
export interface CityCreateSucceededPayload {
  /** Correlation id from the 202 response. */
  request_id: string;
  /** Resolved city name. */
  name: string;
  /** Absolute city directory. */
  path: string;
}

/** Payload of `request.result.city.unregister`. */
export interface CityUnregisterSucceededPayload {
  /** Correlation id from the 202 response. */
  request_id: string;
  /** Name the city was registered under. */
  name: string;
  /** Absolute city directory, left on disk as it was. */
  path: string;
}

/** Asynchronous operations that end in a `request.result.*` or `request.failed` event. */
export type AsyncOperation =
  'city.create' | 'city.unregister' | 'session.create' | 'session.message' | 'session.submit' | 'rig.create';

/** Payload of `request.failed`. */
export interface RequestFailedPayload {
  /** Correlation id from the 202 response. */
  request_id: string;
  /** Which operation failed. */
  operation: AsyncOperation;
  /** Machine-readable error code, e.g. `city_init_failed`, `city_unregister_failed`, `internal_error`. */
  error_code: string;
  /** Human-readable description. */
  error_message: string;
}

/** Payload of `controller.crashed`: a city controller exited without being asked to. */
export interface ControllerCrashedPayload {
  /**
   * Process id of the controller that exited.
   * @isInt
   */
  pid: number;
  /**
   * Exit code, when it exited by itself; null when a signal ended it or the process was adopted (code unknown).
   * @isInt
   */
  exit_code: number | null;
  /** Signal that ended it, when one did. */
  signal: string | null;
  /**
   * Consecutive crashes without a healthy minute in between, this one included.
   * @isInt
   */
  restarts: number;
  /**
   * Back-off before the next start.
   * @isInt
   */
  restart_in_ms: number;
}

/** Payload of `supervisor.started`. */
export interface SupervisorStartedPayload {
  /** How the previous supervisor of this home ended: `clean`, `crash` (it left its pid file behind) or `unknown`. */
  previous_exit: 'clean' | 'crash' | 'unknown';
}

/** Payload of `notify.failed`: a notice (`[notify]` of supervisor.toml) that did not reach its webhook or command. */
export interface NotifyFailedPayload {
  /** `permission`, `question`, `run_failed`, `quarantined` or `review`. */
  kind: string;
  /** `webhook` or `command`. */
  channel: 'webhook' | 'command';
  /** The city whose event it was about. */
  city: string;
  /** The type of that event. */
  event_type: string;
  /**
   * Its seq in the city's log.
   * @isInt
   */
  event_seq: number;
  /** What went wrong, the last attempt's. */
  error: string;
  /**
   * Attempts made.
   * @isInt
   */
  attempts: number;
}

/** Payload of `supervisor.shutdown_requested`. */
export interface SupervisorShutdownPayload {
  /** `destructive`: every controller is stopped (SIGTERM, SIGINT); `preserve_sessions`: every controller keeps running for the next supervisor to adopt (SIGHUP, `ctl supervisor restart`). */
  mode: 'destructive' | 'preserve_sessions' | 'unknown';
  /** What asked for the shutdown. */
  source: 'signal' | 'socket_stop';
  /** The signal, when a signal asked. */
  signal?: string;
}

/** Events without a payload carry `{}`. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the schema of `{}` (tsoa needs an interface)
export interface NoPayload {}

/** Payload of an event type this product does not define (recorded through `POST /v0/city/{cityName}/events`). */
export interface CustomEventPayload {
  [key: string]: unknown;
}

/** Any event payload: one of the types our events declare (`EventPayloadTypes`), or a custom event's object. */
export type EventPayload = EventPayloadTypes[keyof EventPayloadTypes] | CustomEventPayload;

/** One event of a city log, as listed. */
export interface WireEvent {
  /**
   * Sequence number within its log, from 1, gap-free.
   * @isInt
   */
  seq: number;
  /** Semantic event kind, e.g. `city.created`. */
  type: string;
  /** RFC 3339 timestamp with UTC offset. */
  ts: string;
  /** Who caused the event. */
  actor: string;
  /** What the event is about. */
  subject?: string;
  /** Free text. */
  message?: string;
  /** Type-specific object; `{}` when the event has none. */
  payload: EventPayload;
}

/** One event of the supervisor's merged view: a `WireEvent` tagged with its city. */
export interface WireTaggedEvent extends WireEvent {
  /** Originating city; `__supervisor__` for the supervisor's own events, except request results, which name their city. */
  city: string;
}

/** Body of `GET /v0/city/{cityName}/events`. */
export interface ListBodyWireEvent {
  /** Newest first. */
  items: WireEvent[];
  /**
   * Unfiltered: the head seq. Filtered: the number of matches seen by this scan.
   * @isInt
   */
  total: number;
  /** Present when older matching events exist; pass it back as `cursor`. */
  next_cursor?: string;
}

/** Body of `GET /v0/events`. */
export interface SupervisorEventListOutputBody {
  /** Composite cursor captured before listing; pass it as `after_cursor` to continue live without gaps. */
  event_cursor: string;
  /** The page's events, oldest first, by timestamp, then city, then seq. */
  items: WireTaggedEvent[];
  /**
   * Unfiltered: every log's head seq, summed. Filtered: the number of matches on this page.
   * @isInt
   */
  total: number;
  /** Present when older matching events exist; pass it back as `cursor`. */
  next_cursor?: string;
}

/** Body of `POST /v0/city/{cityName}/events`: record an event of any type. */
export interface EventEmitRequest {
  /**
   * Event type.
   * @minLength 1
   */
  type: string;
  /**
   * Who caused it.
   * @minLength 1
   */
  actor: string;
  /** What it is about. */
  subject?: string;
  /** Free text. */
  message?: string;
  /** Type-specific object. */
  payload?: CustomEventPayload;
}

/** Body of a `201` from `POST /v0/city/{cityName}/events`. */
export interface EventEmitResponse {
  /** Always `recorded`. */
  status: string;
  /**
   * The seq the event was recorded under.
   * @isInt
   */
  seq: number;
}

/** The archive a rotation produced. */
export interface EventRotateArchive {
  /** Absolute path of the compressed archive. */
  path: string;
  /** @isInt */
  first_seq: number;
  /** @isInt */
  last_seq: number;
  /** `complete` once the archive is compressed; `pending` while that runs (it is readable either way). */
  compression_status: 'pending' | 'complete';
}

/** The anchor event that starts the new active log. */
export interface EventRotateAnchor {
  /** @isInt */
  seq: number;
  type: string;
  ts: string;
}

/** Body of `POST /v0/city/{cityName}/events/rotate`. */
export interface EventRotateResponse {
  rotated: boolean;
  /** Why nothing was rotated (`active log is empty`, `nothing new since the last rotation`). */
  reason?: string;
  archive?: EventRotateArchive;
  anchor_event?: EventRotateAnchor;
  /** Archives removed, oldest first, to keep within `[events] max_archives`. */
  removed_archives?: string[];
}

/** Payload of `events.rotated`, the first event of a log after a rotation. */
export interface RotatedPayload {
  /** Absolute path of the archive holding the events before this one. */
  prior_archive: string;
  /** @isInt */
  prior_first_seq: number;
  /** @isInt */
  prior_last_seq: number;
}
