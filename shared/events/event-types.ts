import type {
  AgentEventPayload,
  BeadDeadAssigneeReopenedPayload,
  ConfigReloadPayload,
  ConfigUnsupportedPayload,
} from '../dto/agents.js';
import type { BeadCommentEventPayload, BeadEventPayload } from '../dto/beads.js';
import type {
  CityCreateSucceededPayload,
  CityLifecyclePayload,
  CityUnregisterSucceededPayload,
  ControllerCrashedPayload,
  NoPayload,
  NotifyFailedPayload,
  RequestFailedPayload,
  RotatedPayload,
  SupervisorShutdownPayload,
  SupervisorStartedPayload,
} from '../dto/events.js';
import type { MailEventPayload } from '../dto/mail.js';
import type { TokenEventPayload } from '../dto/tokens.js';
import type { MoleculeEventPayload, WaitEventPayload } from '../dto/formulas.js';
import type { OrderEventPayload } from '../dto/orders.js';
import type { WebhookReceivedPayload, WebhookRejectedPayload } from '../dto/webhooks.js';
import type { StoreMaintenancePayload } from '../dto/maintenance.js';
import type { RigCreateSucceededPayload, RigProvisionProgressPayload } from '../dto/rigs.js';
import type { RigOverlapPayload } from '../dto/overlaps.js';
import type { ServiceEventPayload } from '../dto/services.js';
import type { HostEventPayload } from '../dto/hosts.js';
import type { ReviewEventPayload } from '../dto/reviews.js';
import type { BeadPushPayload } from '../dto/bead-pushes.js';
import type {
  AdapterEventPayload,
  BoundEventPayload,
  GroupCreatedEventPayload,
  InboundEventPayload,
  OutboundEventPayload,
  UnboundEventPayload,
} from '../dto/extmsg.js';
import type {
  SessionCrashedPayload,
  SessionLostPayload,
  SessionCreateSucceededPayload,
  SessionLifecyclePayload,
  SessionMessageSucceededPayload,
  SessionPendingClearedPayload,
  SessionPendingPayload,
  SessionResetPayload,
  SessionSubmitSucceededPayload,
  SessionTurnFailedPayload,
  SessionDeliveryPayload,
} from '../dto/session-event-payloads.js';

/**
 * Every payload type an event of ours carries, by its name: the name is the OpenAPI component the typed envelopes
 * refer to, the type is what a writer must hand over.
 */
export interface EventPayloadTypes {
  CityLifecyclePayload: CityLifecyclePayload;
  CityCreateSucceededPayload: CityCreateSucceededPayload;
  CityUnregisterSucceededPayload: CityUnregisterSucceededPayload;
  RequestFailedPayload: RequestFailedPayload;
  ControllerCrashedPayload: ControllerCrashedPayload;
  SupervisorStartedPayload: SupervisorStartedPayload;
  SupervisorShutdownPayload: SupervisorShutdownPayload;
  NotifyFailedPayload: NotifyFailedPayload;
  RotatedPayload: RotatedPayload;
  BeadEventPayload: BeadEventPayload;
  BeadCommentEventPayload: BeadCommentEventPayload;
  MailEventPayload: MailEventPayload;
  NoPayload: NoPayload;
  SessionLifecyclePayload: SessionLifecyclePayload;
  SessionCrashedPayload: SessionCrashedPayload;
  SessionLostPayload: SessionLostPayload;
  SessionResetPayload: SessionResetPayload;
  SessionPendingPayload: SessionPendingPayload;
  SessionPendingClearedPayload: SessionPendingClearedPayload;
  SessionCreateSucceededPayload: SessionCreateSucceededPayload;
  SessionMessageSucceededPayload: SessionMessageSucceededPayload;
  SessionSubmitSucceededPayload: SessionSubmitSucceededPayload;
  SessionTurnFailedPayload: SessionTurnFailedPayload;
  SessionDeliveryPayload: SessionDeliveryPayload;
  BeadDeadAssigneeReopenedPayload: BeadDeadAssigneeReopenedPayload;
  AgentEventPayload: AgentEventPayload;
  ConfigReloadPayload: ConfigReloadPayload;
  ConfigUnsupportedPayload: ConfigUnsupportedPayload;
  MoleculeEventPayload: MoleculeEventPayload;
  OrderEventPayload: OrderEventPayload;
  WaitEventPayload: WaitEventPayload;
  WebhookReceivedPayload: WebhookReceivedPayload;
  WebhookRejectedPayload: WebhookRejectedPayload;
  StoreMaintenancePayload: StoreMaintenancePayload;
  RigCreateSucceededPayload: RigCreateSucceededPayload;
  ServiceEventPayload: ServiceEventPayload;
  HostEventPayload: HostEventPayload;
  ReviewEventPayload: ReviewEventPayload;
  BeadPushPayload: BeadPushPayload;
  AdapterEventPayload: AdapterEventPayload;
  BoundEventPayload: BoundEventPayload;
  UnboundEventPayload: UnboundEventPayload;
  GroupCreatedEventPayload: GroupCreatedEventPayload;
  InboundEventPayload: InboundEventPayload;
  OutboundEventPayload: OutboundEventPayload;
  RigProvisionProgressPayload: RigProvisionProgressPayload;
  RigOverlapPayload: RigOverlapPayload;
  TokenEventPayload: TokenEventPayload;
}

/**
 * Every event type this product records, with its payload — the one place an event type is declared. From here
 * each write is type-checked (`EventLog.append`), and the OpenAPI document's typed envelopes (one variant per
 * type, plus the custom one) and so `docs/schema/events.json` are generated. Any other type is a custom event,
 * recorded through `POST /v0/city/{cityName}/events` with any object as its payload.
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
  'notify.failed': 'NotifyFailedPayload',
  'token.created': 'TokenEventPayload',
  'token.revoked': 'TokenEventPayload',
  'events.rotated': 'RotatedPayload',
  'bead.created': 'BeadEventPayload',
  'bead.updated': 'BeadEventPayload',
  'bead.closed': 'BeadEventPayload',
  'bead.deleted': 'BeadEventPayload',
  'bead.commented': 'BeadCommentEventPayload',
  'bead.comment_deleted': 'BeadCommentEventPayload',
  'mail.sent': 'MailEventPayload',
  'mail.read': 'MailEventPayload',
  'mail.marked_unread': 'MailEventPayload',
  'mail.archived': 'MailEventPayload',
  'mail.replied': 'MailEventPayload',
  'mail.deleted': 'MailEventPayload',
  'convoy.created': 'NoPayload',
  'convoy.closed': 'NoPayload',
  'session.created': 'SessionLifecyclePayload',
  'session.woke': 'SessionLifecyclePayload',
  'session.stopped': 'SessionLifecyclePayload',
  'session.crashed': 'SessionCrashedPayload',
  'session.lost': 'SessionLostPayload',
  'session.suspended': 'SessionLifecyclePayload',
  'session.closed': 'SessionLifecyclePayload',
  'session.updated': 'SessionLifecyclePayload',
  'session.reset': 'SessionResetPayload',
  'session.pending': 'SessionPendingPayload',
  'session.pending_cleared': 'SessionPendingClearedPayload',
  'session.turn_failed': 'SessionTurnFailedPayload',
  'session.delivery_retried': 'SessionDeliveryPayload',
  'session.delivery_failed': 'SessionDeliveryPayload',
  'session.draining': 'SessionLifecyclePayload',
  'session.quarantined': 'SessionLifecyclePayload',
  'session.quarantine_lifted': 'SessionLifecyclePayload',
  'session.restart_pending': 'SessionLifecyclePayload',
  'bead.dead_assignee_reopened': 'BeadDeadAssigneeReopenedPayload',
  'agent.suspended': 'AgentEventPayload',
  'agent.resumed': 'AgentEventPayload',
  'agent.waiting': 'AgentEventPayload',
  'agent.check_failed': 'AgentEventPayload',
  'city.suspended': 'NoPayload',
  'city.resumed': 'NoPayload',
  'config.reloaded': 'ConfigReloadPayload',
  'config.reload_failed': 'ConfigReloadPayload',
  'config.unsupported': 'ConfigUnsupportedPayload',
  'molecule.created': 'MoleculeEventPayload',
  'molecule.step_retried': 'MoleculeEventPayload',
  'molecule.step_failed': 'MoleculeEventPayload',
  'molecule.resolved': 'MoleculeEventPayload',
  'order.fired': 'OrderEventPayload',
  'order.completed': 'OrderEventPayload',
  'order.failed': 'OrderEventPayload',
  'webhook.received': 'WebhookReceivedPayload',
  'wait.registered': 'WaitEventPayload',
  'wait.ready': 'WaitEventPayload',
  'wait.canceled': 'WaitEventPayload',
  'wait.failed': 'WaitEventPayload',
  'webhook.rejected': 'WebhookRejectedPayload',
  'ctl.store.maintenance.done': 'StoreMaintenancePayload',
  'ctl.store.maintenance.failed': 'StoreMaintenancePayload',
  'rig.provision.progress': 'RigProvisionProgressPayload',
  'rig.overlap': 'RigOverlapPayload',
  'service.started': 'ServiceEventPayload',
  'service.ready': 'ServiceEventPayload',
  'service.exited': 'ServiceEventPayload',
  'service.stopped': 'ServiceEventPayload',
  'host.up': 'HostEventPayload',
  'host.down': 'HostEventPayload',
  'review.requested': 'ReviewEventPayload',
  'review.commented': 'ReviewEventPayload',
  'review.changes_requested': 'ReviewEventPayload',
  'review.approved': 'ReviewEventPayload',
  'review.merged': 'ReviewEventPayload',
  'review.conflicted': 'ReviewEventPayload',
  'review.checked': 'ReviewEventPayload',
  'review.abandoned': 'ReviewEventPayload',
  'bead.pushed': 'BeadPushPayload',
  'bead.push_failed': 'BeadPushPayload',
  'extmsg.adapter_added': 'AdapterEventPayload',
  'extmsg.adapter_removed': 'AdapterEventPayload',
  'extmsg.bound': 'BoundEventPayload',
  'extmsg.unbound': 'UnboundEventPayload',
  'extmsg.group_created': 'GroupCreatedEventPayload',
  'extmsg.inbound': 'InboundEventPayload',
  'extmsg.outbound': 'OutboundEventPayload',
  'request.result.rig.create': 'RigCreateSucceededPayload',
  'request.result.session.create': 'SessionCreateSucceededPayload',
  'request.result.session.message': 'SessionMessageSucceededPayload',
  'request.result.session.submit': 'SessionSubmitSucceededPayload',
} as const satisfies Record<string, keyof EventPayloadTypes>;

export type KnownEventType = keyof typeof EVENT_PAYLOADS;

/** The payload of an event of type `K`. */
export type PayloadOf<K extends KnownEventType> = EventPayloadTypes[(typeof EVENT_PAYLOADS)[K]];

/** An event of one of our types, as a writer hands it over: its payload is the one its type declares. */
export type KnownNewEvent = {
  [K in KnownEventType]: {
    type: K;
    actor: string;
    subject?: string;
    message?: string;
    payload: PayloadOf<K>;
    /** Set by the writer unless given. */
    ts?: string;
  };
}[KnownEventType];

/** An event of a type this product does not define: its writer's own payload. */
export interface CustomNewEvent {
  type: string;
  actor: string;
  subject?: string;
  message?: string;
  payload?: Record<string, unknown>;
  ts?: string;
}

export function isKnownEventType(type: string): type is KnownEventType {
  return Object.hasOwn(EVENT_PAYLOADS, type);
}
