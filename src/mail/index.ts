export { registerDevMailboxRoutes } from './dev-mailbox.routes.ts';
export type { MailStatus } from './mail.table.ts';
export { type MailLogger, queueMail } from './outbox.ts';
export {
  type AccountLinkInput,
  type AuditorInvitationInput,
  type EmailChangedInput,
  type MovedToFreeInput,
  type OwnerInvitationInput,
  type PasswordChangedInput,
  type RenderedMail,
  renderAuditorInvitation,
  renderEmailChangeConfirmation,
  renderEmailChanged,
  renderMovedToFree,
  renderOwnerInvitation,
  renderPasswordChanged,
  renderPasswordReset,
  renderSignInLink,
  renderTeamInvitation,
  renderTermEnding,
  renderWebhookDisabled,
  type TeamInvitationInput,
  type TermEndingInput,
  type WebhookDisabledInput,
} from './templates.ts';
export {
  createDevMailboxTransport,
  createSmtpTransport,
  listDevMailbox,
  type MailTransport,
  type OutgoingMail,
} from './transport.ts';
export { mailWiring } from './wiring.ts';
