import type { Kysely, Transaction } from 'kysely';
import type {
  AccountLinksTable,
  AuthThrottlesTable,
  SessionsTable,
  UsersTable,
} from '../accounts/accounts.table.ts';
import type { PasskeyChallengesTable, PasskeysTable } from '../accounts/passkeys.table.ts';
import type { ApiKeysTable } from '../api/api-keys.table.ts';
import type { AuditEventsTable } from '../audit/audit.table.ts';
import type { BillingCheckoutsTable } from '../billing/billing.table.ts';
import type { AcpOrdersTable } from '../channels/acp/acp.table.ts';
import type { MppChallengeClaimsTable, MppServerSecretsTable } from '../channels/mpp/mpp.table.ts';
import type { UcpOrdersTable, UcpPlatformsTable } from '../channels/ucp/ucp.table.ts';
import type { CheckoutSessionsTable } from '../checkout/checkout.table.ts';
import type {
  ControlsTable,
  EvidenceControlsTable,
  EvidenceTable,
  PeopleTable,
  PoliciesTable,
  PolicyAcknowledgementsTable,
  PolicyVersionsTable,
  RiskControlsTable,
  RisksTable,
  TasksTable,
  VendorsTable,
} from '../compliance/compliance.table.ts';
import type { EvidencePackagesTable } from '../evidence-package/packages.table.ts';
import type { IdempotencyKeysTable } from '../idempotency/idempotency.table.ts';
import type { ServiceInstancesTable } from '../instances/instances.table.ts';
import type { JobKeyHoldsTable, JobsTable } from '../jobs/jobs.table.ts';
import type { DevMailboxTable, MailMessagesTable } from '../mail/mail.table.ts';
import type {
  OAuthClientsTable,
  OAuthCodesTable,
  OAuthGrantsTable,
  OAuthTokensTable,
} from '../oauth/oauth.table.ts';
import type {
  OrderFollowersTable,
  OrdersTable,
  PaymentAttemptsTable,
  PurchaseSecretsTable,
} from '../purchase/purchase.table.ts';
import type { SoaVersionFilesTable, SoaVersionsTable } from '../reports/reports.table.ts';
import type { SigningKeysTable } from '../signing/signing.table.ts';
import type { StoredFileChunksTable, StoredFilesTable } from '../storage/storage.table.ts';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEventsTable,
  WebhookSubscriptionsTable,
} from '../webhooks/webhooks.table.ts';
import type {
  TermNoticesTable,
  WorkspaceInvitationsTable,
  WorkspaceMembersTable,
  WorkspacesTable,
  WorkspaceTermsTable,
} from '../workspace/workspace.table.ts';

/** Every table of the service, each owned by the module whose folder defines it. */
export interface Database {
  jobs: JobsTable;
  job_key_holds: JobKeyHoldsTable;
  mail_messages: MailMessagesTable;
  dev_mailbox: DevMailboxTable;
  workspaces: WorkspacesTable;
  workspace_terms: WorkspaceTermsTable;
  term_notices: TermNoticesTable;
  workspace_members: WorkspaceMembersTable;
  workspace_invitations: WorkspaceInvitationsTable;
  payment_attempts: PaymentAttemptsTable;
  orders: OrdersTable;
  purchase_secrets: PurchaseSecretsTable;
  idempotency_keys: IdempotencyKeysTable;
  service_instances: ServiceInstancesTable;
  signing_keys: SigningKeysTable;
  ucp_platforms: UcpPlatformsTable;
  ucp_orders: UcpOrdersTable;
  acp_orders: AcpOrdersTable;
  order_followers: OrderFollowersTable;
  checkout_sessions: CheckoutSessionsTable;
  mpp_challenge_claims: MppChallengeClaimsTable;
  mpp_server_secrets: MppServerSecretsTable;
  api_keys: ApiKeysTable;
  people: PeopleTable;
  controls: ControlsTable;
  tasks: TasksTable;
  evidence: EvidenceTable;
  evidence_controls: EvidenceControlsTable;
  risks: RisksTable;
  risk_controls: RiskControlsTable;
  vendors: VendorsTable;
  policies: PoliciesTable;
  policy_versions: PolicyVersionsTable;
  policy_acknowledgements: PolicyAcknowledgementsTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  users: UsersTable;
  sessions: SessionsTable;
  auth_throttles: AuthThrottlesTable;
  account_links: AccountLinksTable;
  audit_events: AuditEventsTable;
  passkeys: PasskeysTable;
  passkey_challenges: PasskeyChallengesTable;
  billing_checkouts: BillingCheckoutsTable;
  stored_files: StoredFilesTable;
  stored_file_chunks: StoredFileChunksTable;
  soa_versions: SoaVersionsTable;
  soa_version_files: SoaVersionFilesTable;
  evidence_packages: EvidencePackagesTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
}

export type Db = Kysely<Database>;
/** A function that takes `Tx` must run inside a transaction; one that takes `Db` accepts either. */
export type Tx = Transaction<Database>;
