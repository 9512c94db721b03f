/**
 * Every action the audit log records, with how the app names it. The one list: the table's type,
 * the filters of the page and the REST API, and the OpenAPI document all come from it.
 */
export const AUDIT_ACTIONS = {
  'account.signed_in': 'Signed in',
  'account.sign_in_failed': 'Sign-in failed',
  'account.signed_out': 'Signed out',
  'account.password_reset': 'Password reset by email link',
  'account.password_changed': 'Password changed',
  'account.email_change_requested': 'Email change requested',
  'account.email_changed': 'Email address changed',
  'passkey.added': 'Passkey added',
  'passkey.removed': 'Passkey removed',
  'invitation.accepted': 'Invitation accepted',
  'invitation.resent': 'Invitation sent again',
  'member.invited': 'Member invited',
  'member.invitation_resent': 'Member invitation sent again',
  'member.invitation_revoked': 'Member invitation revoked',
  'member.role_changed': 'Member role changed',
  'member.removed': 'Member removed',
  'member.left': 'Member left',
  'member.ownership_transferred': 'Ownership transferred',
  'api_key.created': 'API key created',
  'api_key.rotated': 'API key rotated',
  'api_key.revoked': 'API key revoked',
  'mcp_client.connected': 'MCP client connected',
  'mcp_client.revoked': 'MCP client disconnected',
  'webhook.created': 'Webhook subscription created',
  'webhook.updated': 'Webhook subscription changed',
  'webhook.paused': 'Webhook subscription paused',
  'webhook.resumed': 'Webhook subscription resumed',
  'webhook.secret_rotated': 'Webhook secret rotated',
  'webhook.deleted': 'Webhook subscription deleted',
  'plan.purchased': 'Plan purchased',
  'plan.changed': 'Plan changed',
  'workspace.renamed': 'Workspace renamed',
  // Changes to the readiness records: the same names as the webhook events they send.
  'control.updated': 'Control changed',
  'task.created': 'Task created',
  'task.updated': 'Task changed',
  'task.completed': 'Task completed',
  'task.reopened': 'Task reopened',
  'task.deleted': 'Task deleted',
  'evidence.created': 'Evidence added',
  'evidence.updated': 'Evidence changed',
  'evidence.retired': 'Evidence retired',
  'evidence.restored': 'Evidence restored',
  'evidence.deleted': 'Evidence deleted',
  'risk.created': 'Risk created',
  'risk.updated': 'Risk changed',
  'risk.deleted': 'Risk deleted',
  'vendor.created': 'Vendor created',
  'vendor.updated': 'Vendor changed',
  'vendor.deleted': 'Vendor deleted',
  'person.created': 'Person added',
  'person.updated': 'Person changed',
  'person.left': 'Person marked as left',
  'policy.created': 'Policy created',
  'policy.updated': 'Policy changed',
  'policy.approved': 'Policy version approved',
  'policy.acknowledged': 'Policy acknowledged',
} as const;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

export const AUDIT_ACTION_NAMES = Object.keys(AUDIT_ACTIONS) as AuditAction[];

export function isAuditAction(value: string): value is AuditAction {
  return Object.hasOwn(AUDIT_ACTIONS, value);
}
