/**
 * Every event a workspace emits. Each change the REST API or a purchase makes publishes one of
 * these, in the transaction of the change; the OpenAPI document lists them under `webhooks`.
 */
export const EVENT_TYPES = {
  'control.updated': "A control's status, owner, notes or justification changed. `data` is the control.",
  'task.created': 'A task was created. `data` is the task.',
  'task.updated': 'A task changed without being completed or reopened. `data` is the task.',
  'task.completed': 'A task was completed. `data` is the task.',
  'task.reopened': 'A completed task was reopened. `data` is the task.',
  'task.deleted': 'A task was deleted. `data` holds its `id`.',
  'evidence.created': 'Evidence (a link or a file) was reported. `data` is the evidence.',
  'evidence.updated': "Evidence's title or linked controls changed. `data` is the evidence.",
  'evidence.retired':
    'Evidence was retired: kept with its file, hidden from lists by default. `data` is the evidence.',
  'evidence.restored': 'Retired evidence was restored to the lists. `data` is the evidence.',
  'evidence.deleted': 'Evidence was deleted. `data` holds its `id`.',
  'risk.created': 'A risk was created. `data` is the risk.',
  'risk.updated': 'A risk changed. `data` is the risk.',
  'risk.deleted': 'A risk was deleted. `data` holds its `id`.',
  'vendor.created': 'A vendor was created. `data` is the vendor.',
  'vendor.updated': 'A vendor changed. `data` is the vendor.',
  'vendor.deleted': 'A vendor was deleted. `data` holds its `id`.',
  'person.created': 'A person was added to the directory. `data` is the person.',
  'person.updated': 'A person in the directory changed. `data` is the person.',
  'person.left':
    'A person was marked as left (employment_status became former). `data` is the person, with `left_on`.',
  'policy.created': 'A policy was created. `data` is the policy.',
  'policy.updated': 'A policy changed. `data` is the policy.',
  'policy.approved':
    "A policy's draft was approved as a numbered version. `data` is the policy, its `version` the number.",
  'policy.acknowledged':
    'A member acknowledged the approved version of a policy. `data` holds `policy_id`, `version`, `user_id` and `acknowledged_at`.',
  'workspace.plan_changed': "The workspace's plan changed (for example to Free when a term ended).",
  'workspace.renamed':
    'The workspace was renamed (on its Settings page or through the API). `data` holds `previous_name` and `name`.',
  'workspace.term_ended': "The workspace's prepaid term ended; it does not renew.",
  'webhook.test': 'A test event sent on request to one subscription.',
} as const;

export type EventType = keyof typeof EVENT_TYPES;

export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];

/** Subscribing to `*` means every event type, including ones added later. */
export const ALL_EVENTS = '*';

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_TYPES, value);
}
