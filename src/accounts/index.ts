export type { AccountChange, RecordAccountChange } from './account-audit.ts';
export {
  type ChangePasswordError,
  changePassword,
  confirmEmailChange,
  type EmailChangeError,
  type EmailChangeRequestError,
  pendingEmailChange,
  requestEmailChange,
} from './account-changes.ts';
export {
  type EmailedLinkPurpose,
  isUsableLink,
  type PasswordResetError,
  requestEmailedLink,
  resetPasswordWithLink,
  signInWithLink,
} from './email-links.ts';
export { LINK_LIFETIME_MS, LINK_VALID_FOR } from './links.ts';
export { PASSKEY_CHALLENGE_TTL_MS } from './passkey-challenges.ts';
export {
  finishPasskeyRegistration,
  listPasskeys,
  type Passkey,
  type PasskeyDeps,
  type PasskeyError,
  type RelyingParty,
  relyingPartyFor,
  removePasskey,
  signInWithPasskey,
  startPasskeyRegistration,
  startPasskeySignIn,
} from './passkeys.ts';
export { hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordProblem } from './passwords.ts';
export {
  endSession,
  type NewSession,
  resumeSession,
  SESSION_ABSOLUTE_TIMEOUT_MS,
  SESSION_IDLE_TIMEOUT_MS,
  type Session,
  startSession,
} from './sessions.ts';
export { type CredentialsError, checkCredentials } from './sign-in.ts';
export {
  ATTEMPTS_PER_ACCOUNT,
  ATTEMPTS_PER_CLIENT,
  EMAILS_PER_ADDRESS,
  EMAILS_PER_CLIENT,
  THROTTLE_WINDOW_MS,
} from './throttle.ts';
export {
  accountEmailOf,
  createUser,
  emailsOfUsers,
  findUserByEmail,
  findUserById,
  isValidEmail,
  normalizeEmail,
  type User,
} from './users.ts';
export { accountsWiring } from './wiring.ts';
