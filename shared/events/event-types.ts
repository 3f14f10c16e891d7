/**
 * Every event type this product records, with the schema of its payload (a component of the OpenAPI
 * document). The document's typed envelopes are built from this table; any other type is a custom event
 * (recorded through `POST /v0/city/{cityName}/events`) whose payload is any object.
 */
export const EVENT_PAYLOADS = {
  'city.created': 'CityLifecyclePayload',
  'city.registered': 'CityLifecyclePayload',
  'city.unregister_requested': 'CityLifecyclePayload',
  'city.directory_missing': 'CityLifecyclePayload',
  'request.result.city.create': 'CityCreateSucceededPayload',
  'request.result.city.unregister': 'CityUnregisterSucceededPayload',
  'request.failed': 'RequestFailedPayload',
  'controller.started': 'NoPayload',
  'controller.stopped': 'NoPayload',
  'controller.crashed': 'ControllerCrashedPayload',
  'supervisor.started': 'SupervisorStartedPayload',
  'supervisor.shutdown_requested': 'SupervisorShutdownPayload',
  'events.rotated': 'RotatedPayload',
  'bead.created': 'BeadEventPayload',
  'bead.updated': 'BeadEventPayload',
  'bead.closed': 'BeadEventPayload',
  'bead.deleted': 'BeadEventPayload',
  'mail.sent': 'MailEventPayload',
  'mail.read': 'MailEventPayload',
  'mail.marked_unread': 'MailEventPayload',
  'mail.archived': 'MailEventPayload',
  'mail.replied': 'MailEventPayload',
  'mail.deleted': 'MailEventPayload',
  'convoy.created': 'NoPayload',
  'convoy.closed': 'NoPayload',
} as const satisfies Record<string, string>;

export type KnownEventType = keyof typeof EVENT_PAYLOADS;
