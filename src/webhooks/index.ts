export { ALL_EVENTS, EVENT_TYPE_NAMES, EVENT_TYPES, type EventType, isEventType } from './catalog.ts';
export type {
  DeliveryDeps,
  WebhookDeps,
  WebhookError,
  WorkspaceLock,
} from './context.ts';
export {
  DeliveriesFilter,
  listDeliveries,
  redeliver,
  sendTestEvent,
  WebhookAttempt,
  WebhookDelivery,
  WebhookTestData,
} from './deliveries.ts';
export { DELIVERY_TIMEOUT_MS } from './delivery-job.ts';
export {
  type DeliverWebhookPayload,
  type EventEnvelope,
  type NewEvent,
  publishEvent,
} from './events.ts';
export { type DocumentRefusal, type FetchedDocument, fetchPublicDocument } from './fetch-document.ts';
export { type OutboundResult, postPinned } from './outbound.ts';
export {
  applyPlanToSubscriptions,
  type PlanForSubscriptions,
  type SubscriptionsPlanApplied,
} from './plan.ts';
export { EVENT_RETENTION_MS } from './retention.ts';
export { RotateSecretBody, rotateSecret } from './rotation.ts';
export { MAX_DELIVERY_ATTEMPTS, MAX_RETRY_AFTER_MS, RETRY_DELAYS_MS, RETRY_JITTER } from './schedule.ts';
export {
  CreateSubscriptionBody,
  createSubscription,
  deleteSubscription,
  getSubscription,
  listSubscriptions,
  SubscriptionsFilter,
  UpdateSubscriptionBody,
  updateSubscription,
  WebhookSubscription,
  WebhookSubscriptionWithSecret,
} from './subscriptions.ts';
export {
  checkTarget,
  type ResolveHost,
  systemResolver,
  type TargetPolicy,
  type TargetRefusalCode,
} from './target.ts';
export { webhooksWiring } from './wiring.ts';
