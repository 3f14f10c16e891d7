// What the generated document needs that tsoa cannot derive from route classes: the typed event envelopes
// (one variant per event type we record, plus a custom one), the SSE stream operations and their frames.

import { EVENT_PAYLOADS } from '../../shared/events/event-types.js';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** `city.created` → `CityCreated`, `request.result.city.create` → `RequestResultCityCreate`. */
function pascal(type: string): string {
  return type
    .split(/[._-]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

function envelopeProperties(tagged: boolean, payload: Json, type: Json): Json {
  return {
    seq: { type: 'integer', minimum: 1, description: 'Sequence number within its log, from 1, gap-free.' },
    type,
    ts: { type: 'string', format: 'date-time', description: 'RFC 3339 timestamp with UTC offset.' },
    actor: { type: 'string', description: 'Who caused the event.' },
    subject: { type: 'string', description: 'What the event is about.' },
    message: { type: 'string', description: 'Free text.' },
    payload,
    ...(tagged
      ? {
          city: {
            type: 'string',
            description:
              "Originating city; `__supervisor__` for the supervisor's own events, except request results, which name their city.",
          },
        }
      : {}),
  };
}

function envelope(tagged: boolean, payload: Json, type: Json, description: string): Json {
  return {
    type: 'object',
    description,
    additionalProperties: false,
    properties: envelopeProperties(tagged, payload, type),
    required: ['seq', 'type', 'ts', 'actor', 'payload', ...(tagged ? ['city'] : [])],
  };
}

function typedFamily(family: string, tagged: boolean): Record<string, Json> {
  const schemas: Record<string, Json> = {};
  const variants: Json[] = [];
  const mapping: Record<string, string> = {};
  const known = Object.keys(EVENT_PAYLOADS);
  for (const [type, payload] of Object.entries(EVENT_PAYLOADS)) {
    const name = `${family}${pascal(type)}`;
    schemas[name] = envelope(tagged, ref(payload), { type: 'string', const: type }, `A \`${type}\` event.`);
    variants.push(ref(name));
    mapping[type] = `#/components/schemas/${name}`;
  }
  const custom = `${family}Custom`;
  schemas[custom] = envelope(
    tagged,
    { type: 'object', description: 'Any object (custom events carry what their writer gave).' },
    { type: 'string', not: { enum: known }, description: 'Any type this product does not define.' },
    'An event of a custom type, recorded through `POST /v0/city/{cityName}/events`.',
  );
  variants.push(ref(custom));
  schemas[family] = {
    title: tagged ? 'Typed supervisor event stream envelope' : 'Typed city event stream envelope',
    description: `One event${tagged ? ' tagged with its city' : ''}, its payload typed by \`type\`.`,
    oneOf: variants,
    discriminator: { propertyName: 'type', mapping },
  };
  return schemas;
}

export const extraSchemas: Record<string, Json> = {
  EventStreamEnvelope: envelope(
    false,
    ref('EventPayload'),
    { type: 'string', description: 'Semantic event kind, e.g. `city.created`.' },
    'The data of an `event` frame of the city stream.',
  ),
  TaggedEventStreamEnvelope: envelope(
    true,
    ref('EventPayload'),
    { type: 'string', description: 'Semantic event kind, e.g. `city.created`.' },
    'The data of a `tagged_event` frame of the supervisor stream.',
  ),
  ...typedFamily('TypedEventStreamEnvelope', false),
  ...typedFamily('TypedTaggedEventStreamEnvelope', true),
  HeartbeatEvent: {
    type: 'object',
    description: "The data of a `heartbeat` frame (no `id:` line, so a client's resume point stays).",
    additionalProperties: false,
    properties: { timestamp: { type: 'string', format: 'date-time', description: 'RFC 3339, UTC, whole seconds.' } },
    required: ['timestamp'],
  },
  SessionActivityEvent: {
    type: 'object',
    description: "The data of a session stream's `activity` frame.",
    additionalProperties: false,
    properties: { activity: { type: 'string', enum: ['idle', 'in-turn'] } },
    required: ['activity'],
  },
  SessionPendingClearedEvent: {
    type: 'object',
    description: "The data of a session stream's `pending_cleared` frame: the interaction answered or gone.",
    additionalProperties: false,
    properties: { request_id: { type: 'string' } },
    required: ['request_id'],
  },
  // The list items are the typed envelopes.
  WireEvent: { ...ref('TypedEventStreamEnvelope'), description: 'One event of a city log, as listed.' },
  WireTaggedEvent: {
    ...ref('TypedTaggedEventStreamEnvelope'),
    description: "One event of the supervisor's merged view, tagged with its city.",
  },
};

function frame(event: string, data: string, idDescription?: string): Json {
  return {
    title: `${event} frame`,
    type: 'object',
    properties: {
      ...(idDescription ? { id: { type: 'string', description: idDescription } } : {}),
      event: { type: 'string', const: event, description: 'The SSE `event:` line.' },
      data: { ...ref(data), description: 'The SSE `data:` line (one line of JSON).' },
    },
    required: idDescription ? ['id', 'event', 'data'] : ['event', 'data'],
  };
}

function sseResponse(frames: Json[], description: string): Json {
  return {
    description,
    content: {
      'text/event-stream': {
        schema: {
          type: 'array',
          description: 'The stream, one SSE frame per item: `id:` (when present), `event:`, `data:`, a blank line.',
          items: { oneOf: frames },
        },
      },
    },
  };
}

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('ErrorModel') } },
});

const lastEventId = (description: string) => ({
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description,
  schema: { type: 'string' },
});

/** The agent output streams: the same operation at the reference's path and the spec's (`/agents/…`). */
function agentOutputStream(operationId: string, qualified: boolean): Json {
  const path = (name: string, description: string) => ({
    name,
    in: 'path',
    required: true,
    description,
    schema: { type: 'string' },
  });
  return {
    get: {
      operationId,
      summary: qualified ? "Stream a rig agent's output" : "Stream an agent's output",
      tags: ['Agents'],
      description:
        "The agent's conversation as Server-Sent Events: `turn` frames whose data is an AgentOutputResponse " +
        "holding one turn, `id:` `<session id>:<transcript seq>`. It starts with the last turns of the agent's " +
        'running session — or, when none runs, of its latest session, with `CTL-Agent-Status: stopped` set before ' +
        'the first frame — then goes on live, from every session of the agent, including ones that start later. ' +
        '`Last-Event-ID` resumes after that entry of that session. Heartbeats every 15 s. An unknown agent, or one ' +
        'that has never run, is a 404 problem before any 200.',
      parameters: [
        path('cityName', 'City name.'),
        ...(qualified ? [path('dir', 'The rig of the agent.')] : []),
        path('base', 'Agent name.'),
        lastEventId('Resume position: the last `id:` received (`<session id>:<seq>`).'),
      ],
      responses: {
        '200': {
          ...sseResponse(
            [
              frame('turn', 'AgentOutputResponse', '`<session id>:<transcript seq>`.'),
              frame('heartbeat', 'HeartbeatEvent'),
            ],
            'The output stream; headers are sent before the first frame.',
          ),
          headers: {
            'CTL-Agent-Status': {
              description: '`stopped` when no session of the agent runs: the stream replays its latest transcript.',
              schema: { type: 'string', enum: ['stopped'] },
            },
          },
        },
        '404': problem('City not running, no such agent, or an agent that has never run (`agent-not-found`)'),
      },
    },
  };
}

const pathParam = (name: string, description: string, pattern?: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', ...(pattern ? { pattern } : {}) },
});

/** `svc/*`: one operation per method, the service's own answer passed through. */
function serviceProxy(method: string): Json {
  return {
    operationId: `proxy-service-${method}`,
    summary: `${method.toUpperCase()} through to a workspace service`,
    tags: ['Services'],
    description:
      'The raw workspace-service proxy, outside the typed API: the request goes, untouched and streaming both ways ' +
      "(SSE and WebSocket upgrades included), to the city's `[[service]]` named `service` — its `url`, or the " +
      "program's port or socket — as `/{path}` with the query string; `{path}` is the rest of the URL, slashes " +
      "included (`/svc/{service}` alone is `/`). The answer is the service's own, any status and type. The proxy " +
      'itself answers problems: 400 for a `..` segment or an encoded slash, 404 for an unknown city or service ' +
      '(`not_found: city not found or not running`), 502 when the service does not answer, 503 while it starts.',
    parameters: [
      pathParam('cityName', 'City name.'),
      pathParam('service', 'The `[[service]]` name.'),
      pathParam('path', 'The rest of the URL, slashes included, passed to the service.'),
    ],
    responses: {
      default: { description: "The service's own answer, passed through as it is." },
      '400': problem('A `..` path segment or an encoded slash'),
      '404': problem('City not running, or no such service (`service-not-found`)'),
      '502': problem('The service did not answer (`bad_gateway: …`)'),
      '503': problem('The service is not ready, or the city is restarting (`Retry-After`)'),
    },
  };
}

const openApiDocument = (operationId: string, summary: string): Json => ({
  get: {
    operationId,
    summary,
    tags: ['Supervisor'],
    description:
      'This document: the contract both the supervisor and every controller serve (each at its own root). ' +
      '`/schema/openapi.json` is the same document.',
    responses: {
      '200': {
        description: 'The OpenAPI 3.1 document.',
        content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
      },
    },
  },
});

/**
 * The webhook listener's one operation (`[webhooks] listen` of supervisor.toml, off until set): a server of its
 * own, serving nothing of the control plane. What the controller answers is the control plane's
 * `POST /v0/city/{cityName}/hook/{name}` (the same schemas); what the listener itself refuses is named here.
 */
const listenerDelivery: Json = {
  post: {
    operationId: 'deliver-webhook-listener',
    summary: 'Deliver a webhook (webhook listener)',
    tags: ['Webhooks'],
    servers: [
      {
        url: 'http://127.0.0.1:8373',
        description:
          'The webhook listener: `[webhooks] listen` of supervisor.toml (off until set). It serves this operation ' +
          'only; any other method or path is a 404 problem.',
      },
    ],
    description:
      'A delivery from a sender anywhere (GitHub, Slack, Discord, CI) to a `[[webhook]]` of the city by its name, ' +
      'else to a `trigger = "webhook"` order by its scoped name. Its credential is its signature (or the ' +
      "webhook's bearer token, or a JWT): no API token, account or `X-CTL-Request`. The request line and headers " +
      'must arrive within 5 s and the body (any type, up to 1 MiB) within 5 s more, else a 408 and the connection ' +
      "closes. The listener passes it to the city's controller with the connection's address (for " +
      '`allowed_cidrs`) and the sender’s own `Authorization`; verification, rules, rate limit and redelivery ' +
      'dedupe are those of `POST /v0/city/{cityName}/hook/{name}`, whose answers come back as they are.',
    parameters: [
      pathParam('city', 'The city’s name.'),
      pathParam('name', 'A `[[webhook]]`’s name, or a webhook order’s scoped name (`name`, or `name:rig:<rig>`).'),
    ],
    requestBody: {
      required: false,
      content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
    },
    responses: {
      '202': {
        description: 'Dispatched: the order fired',
        content: { 'application/json': { schema: ref('WebhookDeliveryResponse') } },
      },
      '200': {
        description: 'A duplicate (nothing fired), an authentic delivery no rule matched, or a Discord PING answered',
        content: {
          'application/json': { schema: { anyOf: [ref('WebhookDeliveryResponse'), ref('WebhookPong')] } },
        },
      },
      '400': problem('A body that is not a JSON object (`webhook-rejected`), or bad percent-encoding in the path'),
      '401': problem('The signature or bearer token is missing or does not match (`webhook-rejected`)'),
      '403': problem('The sender’s address is not in the webhook’s `allowed_cidrs` (`webhook-rejected`)'),
      '404': problem(
        'Any other method or path; a city not running; no webhook and no webhook order of that name (`order-not-found`)',
      ),
      '408': problem('The headers, or then the body, did not arrive within 5 s (`timeout: …`)'),
      '409': problem('The order is disabled, or an earlier firing is still open'),
      '413': problem('A body over 1 MiB'),
      '422': problem(
        'A webhook order’s JSON body that does not parse, a required param missing, or a rule’s order that is no webhook order',
      ),
      '429': problem('Past the webhook’s rate limit, which only authentic deliveries draw from (`Retry-After`)'),
      '502': problem('The city’s controller did not answer'),
      '503': problem(
        'The secret is unset or too weak, the JWKS cannot be had, or the city is restarting (`Retry-After`)',
      ),
    },
  },
};

export const extraPaths: Record<string, Json> = {
  '/hooks/{city}/{name}': listenerDelivery,
  '/v0/events/stream': {
    get: {
      operationId: 'stream-supervisor-events',
      summary: 'Stream supervisor events',
      tags: ['Events'],
      description:
        "Every registered city's log and the supervisor's own, merged, as Server-Sent Events. Each `tagged_event` " +
        "frame's `id:` is the whole composite cursor after that event (`__supervisor__:N,alpha:M`, sorted by name). " +
        'Resumes after `Last-Event-ID` (wins) or `after_cursor`, exclusively: a log the cursor names resumes after ' +
        'its seq, a log it does not name starts at its head, and `0` replays every log from its start; with neither, ' +
        'the stream starts at the head. A city registered while the stream is open joins it from its first event. ' +
        'Heartbeat frames come every 15 s (`sse_heartbeat_ms`). A client that falls too far behind is disconnected ' +
        'and resumes from its last id without loss. Answers 503 `no_providers:` (before any 200) when no city is ' +
        'registered.',
      parameters: [
        lastEventId('Resume cursor: the last `id:` received. Wins over `after_cursor`.'),
        {
          name: 'after_cursor',
          in: 'query',
          required: false,
          description: 'Resume cursor (for clients that cannot set headers), e.g. the `event_cursor` of a 202.',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': sseResponse(
          [
            frame('tagged_event', 'TaggedEventStreamEnvelope', 'The composite cursor after this event.'),
            frame('heartbeat', 'HeartbeatEvent'),
          ],
          'The event stream; headers are sent before the first frame.',
        ),
        '400': problem('Malformed cursor (`invalid_cursor: …`)'),
        '503': problem('No city is registered (`no_providers: …`)'),
      },
    },
  },
  '/v0/city/{cityName}/events/stream': {
    get: {
      operationId: 'stream-events',
      summary: 'Stream city events',
      tags: ['City events'],
      description:
        "The city's events as Server-Sent Events: `event` frames with `id:` = the event's seq. Resumes after " +
        '`Last-Event-ID` (wins) or `after_seq`, exclusively (events with a greater seq); with neither, the stream ' +
        'starts at the head. Reads across rotated archives. Heartbeat frames come every 15 s. Answers 404 while the ' +
        'city is not running, 400 for a malformed position, before any 200.',
      parameters: [
        {
          name: 'cityName',
          in: 'path',
          required: true,
          description: 'City name.',
          schema: { type: 'string', pattern: '\\S' },
        },
        lastEventId('Resume position: the last `id:` (seq) received. Wins over `after_seq`.'),
        {
          name: 'after_seq',
          in: 'query',
          required: false,
          description: 'Resume position (for clients that cannot set headers); `0` replays the whole log.',
          schema: { type: 'string', pattern: '^\\d+$' },
        },
      ],
      responses: {
        '200': sseResponse(
          [frame('event', 'EventStreamEnvelope', "The event's seq."), frame('heartbeat', 'HeartbeatEvent')],
          'The event stream; headers are sent before the first frame.',
        ),
        '400': problem('Malformed position (`invalid_cursor: …`)'),
        '404': problem('City not found or not running (`not_found: city not found or not running: <name>`)'),
      },
    },
  },
  '/v0/city/{cityName}/agent/{base}/output/stream': agentOutputStream('stream-agent-output', false),
  '/v0/city/{cityName}/agent/{dir}/{base}/output/stream': agentOutputStream('stream-agent-output-qualified', true),
  '/v0/city/{cityName}/agents/{base}/output/stream': agentOutputStream('stream-agents-output', false),
  '/v0/city/{cityName}/agents/{dir}/{base}/output/stream': agentOutputStream('stream-agents-output-qualified', true),
  '/v0/city/{cityName}/session/{id}/stream': {
    get: {
      operationId: 'stream-session',
      summary: 'Stream a session',
      tags: ['Sessions'],
      description:
        'A session as Server-Sent Events. Frames: `turn` (`format=conversation`, the default; a SessionTurn) or ' +
        '`message` (`format=raw`; a TranscriptEntry) for each transcript entry, `id:` its seq; `activity` ' +
        '(`idle`/`in-turn`), `pending` and `pending_cleared` as they happen; heartbeats every 15 s. It replays the ' +
        'entries after `Last-Event-ID` (wins) or `after_seq`, else the newest 100, then goes live; a closed ' +
        'session gives that snapshot and ends. The headers say its lifecycle state (`CTL-Session-State`) and, ' +
        'when its program is not running, `CTL-Session-Status: stopped`. A session with no transcript that is not ' +
        'running is a 404, a malformed position a 400, before any 200.',
      parameters: [
        pathParam('cityName', 'City name.', '\\S'),
        pathParam('id', 'Session id, alias or session name.'),
        lastEventId('Resume position: the last `id:` (transcript seq) received. Wins over `after_seq`.'),
        {
          name: 'after_seq',
          in: 'query',
          required: false,
          description: 'Resume position (for clients that cannot set headers); `0` replays the whole transcript.',
          schema: { type: 'string', pattern: '^\\d+$' },
        },
        {
          name: 'format',
          in: 'query',
          required: false,
          description: '`conversation` (default): `turn` frames; `raw`: `message` frames, one per transcript entry.',
          schema: { type: 'string', enum: ['conversation', 'raw'] },
        },
      ],
      responses: {
        '200': {
          ...sseResponse(
            [
              frame('turn', 'SessionTurn', 'The transcript seq.'),
              frame('message', 'TranscriptEntry', 'The transcript seq.'),
              frame('activity', 'SessionActivityEvent'),
              frame('pending', 'PendingInteraction'),
              frame('pending_cleared', 'SessionPendingClearedEvent'),
              frame('heartbeat', 'HeartbeatEvent'),
            ],
            'The session stream; headers are sent before the first frame.',
          ),
          headers: {
            'CTL-Session-State': {
              description: "The session's lifecycle state (`active`, `asleep`, `closed`, …).",
              schema: { type: 'string' },
            },
            'CTL-Session-Status': {
              description: '`stopped` when its program is not running: the stream replays its transcript.',
              schema: { type: 'string', enum: ['stopped'] },
            },
          },
        },
        '400': problem('Malformed position (`invalid_cursor: …`)'),
        '404': problem('City not running, no such session, or one with no transcript that is not running'),
        '422': problem('An unknown `format`'),
      },
    },
  },
  '/v0/city/{cityName}/svc/{service}/{path}': Object.fromEntries(
    ['get', 'post', 'put', 'patch', 'delete'].map((method) => [method, serviceProxy(method)]),
  ),
  '/openapi.json': openApiDocument('get-openapi', 'The OpenAPI document'),
  '/schema/openapi.json': openApiDocument('get-schema-openapi', 'The OpenAPI document (schema path)'),
  '/schema/events.json': {
    get: {
      operationId: 'get-events-schema',
      summary: 'The JSON Schema of an event line',
      tags: ['Events'],
      description:
        'The JSON Schema of one `ctl events` output line (and one event of a list or stream); its `$id` is where ' +
        'it was fetched from, so its `openapi.json#…` references resolve to this server.',
      responses: {
        '200': {
          description: 'The JSON Schema (2020-12).',
          content: { 'application/schema+json': { schema: { type: 'object', additionalProperties: true } } },
        },
      },
    },
  },
};
