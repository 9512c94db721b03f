export { AUDIT_ACTION_NAMES, AUDIT_ACTIONS, type AuditAction, isAuditAction } from './actions.ts';
export {
  type AuditActor,
  type AuditSource,
  apiKeyActor,
  INVITATION_HOLDER,
  OPERATOR_SOURCE,
  orderLinkHolder,
  purchaseActor,
  SYSTEM_ACTOR,
  UNKNOWN_ACTOR,
  userActor,
} from './actors.ts';
export {
  type AuditChanges,
  AuditEvent,
  type AuditEventInput,
  AuditEventsFilter,
  listAuditEvents,
  recordAuditEvent,
  USER_AGENT_MAX,
} from './events.ts';
