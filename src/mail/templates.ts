import { escapeHtml } from '../shared/html.ts';

export interface RenderedMail {
  template: string;
  subject: string;
  text: string;
  html: string;
}

export interface OwnerInvitationInput {
  workspaceName: string;
  planName: string;
  /** Null for a Free workspace. */
  termEndsAt: Date | null;
  acceptUrl: string;
  expiresAt: Date;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/**
 * A UTC date as `Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' })` writes it
 * ("November 28, 2026"), without ICU: every purchase renders two in its owner invitation, and
 * there ICU's formatting cost about 40 us of CPU, more than the rest of the mail.
 */
export function longDate(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new RangeError('Invalid time value');
  return `${MONTHS[date.getUTCMonth()]} ${date.getUTCDate()}, ${date.getUTCFullYear()}`;
}

const dateTimeFormat = new Intl.DateTimeFormat('en-US', {
  dateStyle: 'long',
  timeStyle: 'short',
  timeZone: 'UTC',
});

export function renderOwnerInvitation(input: OwnerInvitationInput): RenderedMail {
  const termNotice =
    input.termEndsAt === null
      ? 'The workspace is on the Free plan.'
      : `The plan is prepaid until ${longDate(input.termEndsAt)} (UTC) and does not renew; afterwards the workspace moves to the Free plan.`;
  const expires = longDate(input.expiresAt);
  const subject = `Your ${input.planName} compliance workspace is ready`;
  const text = [
    `Your ${input.planName} workspace "${input.workspaceName}" has been set up for you.`,
    '',
    'Accept the owner invitation to sign in:',
    input.acceptUrl,
    '',
    termNotice,
    `This invitation link expires on ${expires} (UTC).`,
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>Your ${escapeHtml(input.planName)} workspace <strong>${escapeHtml(input.workspaceName)}</strong> has been set up for you.</p>
<p><a href="${escapeHtml(input.acceptUrl)}">Accept the owner invitation</a></p>
<p>${escapeHtml(termNotice)}</p>
<p>This invitation link expires on ${escapeHtml(expires)} (UTC).</p>
</body></html>`;
  return { template: 'owner_invitation', subject, text, html };
}

export interface TeamInvitationInput {
  workspaceName: string;
  /** `owner`, `admin` or `member`. */
  role: string;
  acceptUrl: string;
  expiresAt: Date;
}

const ROLE_DUTIES: Record<string, string> = {
  owner: 'Owners manage everything in the workspace, including its members and owners.',
  admin: 'Admins manage the workspace, its members (except owners) and its Integrations.',
  member: 'Members work in the workspace; owners and admins manage it.',
};

/** An owner or admin invited a teammate from the app's Members page. */
export function renderTeamInvitation(input: TeamInvitationInput): RenderedMail {
  const expires = longDate(input.expiresAt);
  const duties = ROLE_DUTIES[input.role] ?? '';
  const subject = 'You are invited to a compliance workspace';
  const text = [
    `You are invited to join the compliance workspace "${input.workspaceName}" as ${input.role}.`,
    duties,
    '',
    'Accept the invitation:',
    input.acceptUrl,
    '',
    `This invitation link expires on ${expires} (UTC). If you did not expect it, ignore this email.`,
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>You are invited to join the compliance workspace <strong>${escapeHtml(input.workspaceName)}</strong> as ${escapeHtml(input.role)}.</p>
<p>${escapeHtml(duties)}</p>
<p><a href="${escapeHtml(input.acceptUrl)}">Accept the invitation</a></p>
<p>This invitation link expires on ${escapeHtml(expires)} (UTC). If you did not expect it, ignore this email.</p>
</body></html>`;
  return { template: 'team_invitation', subject, text, html };
}

export interface AuditorInvitationInput {
  workspaceName: string;
  acceptUrl: string;
  expiresAt: Date;
  /** The last instant the access lasts. */
  accessUntil: Date;
}

/** An owner invited an external auditor from the app's Auditors page: read-only, until a date. */
export function renderAuditorInvitation(input: AuditorInvitationInput): RenderedMail {
  const expires = longDate(input.expiresAt);
  const until = dateTimeFormat.format(input.accessUntil);
  const subject = 'You are invited to audit a compliance workspace';
  const access = `As its auditor you can read its controls, risks, policies and evidence, and download them, until ${until} (UTC); you cannot change anything. Every page you open is recorded in the workspace's audit log.`;
  const text = [
    `You are invited to audit the compliance workspace "${input.workspaceName}".`,
    access,
    '',
    'Accept the invitation (sign in, or create an account with this address):',
    input.acceptUrl,
    '',
    `This invitation link expires on ${expires} (UTC). If you did not expect it, ignore this email.`,
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>You are invited to audit the compliance workspace <strong>${escapeHtml(input.workspaceName)}</strong>.</p>
<p>${escapeHtml(access)}</p>
<p><a href="${escapeHtml(input.acceptUrl)}">Accept the invitation</a></p>
<p>This invitation link expires on ${escapeHtml(expires)} (UTC). If you did not expect it, ignore this email.</p>
</body></html>`;
  return { template: 'auditor_invitation', subject, text, html };
}

export interface WebhookDisabledInput {
  workspaceName: string;
  subscriptionId: string;
  url: string;
  /** `gone`: the receiver answered 410; `failing`: every attempt of a delivery failed for about a day. */
  reason: 'gone' | 'failing';
  /** The last attempt's error or status, e.g. `HTTP 500`. */
  lastFailure: string;
  /** The subscription in the REST API. */
  manageUrl: string;
}

const DISABLED_BECAUSE = {
  gone: 'the receiver answered 410 Gone, which asks us to stop sending',
  failing: 'every attempt to deliver an event failed for about a day',
} as const;

export function renderWebhookDisabled(input: WebhookDisabledInput): RenderedMail {
  const host = new URL(input.url).host;
  const because = DISABLED_BECAUSE[input.reason];
  const reenable = `PATCH ${input.manageUrl} with {"status": "enabled"}`;
  const missed = `${input.manageUrl}/deliveries`;
  const text = [
    `We stopped sending webhook events of your workspace "${input.workspaceName}" to`,
    input.url,
    `(subscription ${input.subscriptionId}) because ${because}.`,
    `The last attempt ended with: ${input.lastFailure}`,
    '',
    'New events are not queued for it while it is disabled. Once the receiver works again, re-enable it:',
    reenable,
    `and redeliver what it missed from ${missed}.`,
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>We stopped sending webhook events of your workspace <strong>${escapeHtml(input.workspaceName)}</strong> to
<code>${escapeHtml(input.url)}</code> (subscription <code>${escapeHtml(input.subscriptionId)}</code>) because ${escapeHtml(because)}.</p>
<p>The last attempt ended with: <code>${escapeHtml(input.lastFailure)}</code></p>
<p>New events are not queued for it while it is disabled. Once the receiver works again, re-enable it with
<code>${escapeHtml(reenable)}</code> and redeliver what it missed from <code>${escapeHtml(missed)}</code>.</p>
</body></html>`;
  return { template: 'webhook_disabled', subject: `Webhook deliveries to ${host} were stopped`, text, html };
}

/** An emailed one-time link: where it goes and how long it works. */
export interface AccountLinkInput {
  url: string;
  /** e.g. `15 minutes`. */
  validFor: string;
}

function accountLinkMail(
  template: string,
  subject: string,
  input: AccountLinkInput,
  lines: { intro: string; action: string; ignore: string },
): RenderedMail {
  const text = [
    lines.intro,
    '',
    `${lines.action}:`,
    input.url,
    '',
    `The link works once, for ${input.validFor}.`,
    lines.ignore,
  ].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>${escapeHtml(lines.intro)}</p>
<p><a href="${escapeHtml(input.url)}">${escapeHtml(lines.action)}</a></p>
<p>The link works once, for ${escapeHtml(input.validFor)}.</p>
<p>${escapeHtml(lines.ignore)}</p>
</body></html>`;
  return { template, subject, text, html };
}

export function renderSignInLink(input: AccountLinkInput): RenderedMail {
  return accountLinkMail('sign_in_link', 'Your sign-in link', input, {
    intro: 'Someone asked for a link to sign in to your svc compliance workspaces account.',
    action: 'Sign in',
    ignore: 'If it was not you, ignore this email: nothing happens without the link.',
  });
}

export function renderPasswordReset(input: AccountLinkInput): RenderedMail {
  return accountLinkMail('password_reset', 'Reset your password', input, {
    intro: 'Someone asked to reset the password of your svc compliance workspaces account.',
    action: 'Choose a new password',
    ignore: 'If it was not you, ignore this email: your password stays as it is.',
  });
}

export function renderEmailChangeConfirmation(input: AccountLinkInput): RenderedMail {
  return accountLinkMail('email_change_confirmation', 'Confirm your new email address', input, {
    intro:
      'Someone asked to use this address for their svc compliance workspaces account. The account keeps its old address until this one is confirmed.',
    action: 'Confirm this address',
    ignore: 'If it was not you, ignore this email: nothing changes without the link.',
  });
}

/** A notice with no link to follow: one paragraph per line. */
function noticeMail(template: string, subject: string, lines: string[]): RenderedMail {
  const text = lines.join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n')}
</body></html>`;
  return { template, subject, text, html };
}

export interface EmailChangedInput {
  /** Masked (`a***@example.com`): this goes to the address that no longer signs in. */
  newEmailMasked: string;
}

export function renderEmailChanged(input: EmailChangedInput): RenderedMail {
  const lines = [
    `The email address of your svc compliance workspaces account was changed to ${input.newEmailMasked}.`,
    'This address no longer signs in to it.',
    'If you did not make this change, someone else may control your account: tell the people you share workspaces with, and the service operator, at once.',
  ];
  return noticeMail('email_changed', 'The email address of your account was changed', lines);
}

export interface PasswordChangedInput {
  at: Date;
  /** On the Account page (with the current password) or with a reset link emailed to the account. */
  how: 'account_page' | 'reset_link';
}

/** Tells the account's address that its password changed, so a change nobody asked for is noticed. */
export function renderPasswordChanged(input: PasswordChangedInput): RenderedMail {
  const how = input.how === 'reset_link' ? 'with a reset link sent to this address' : 'on its Account page';
  const lines = [
    `The password of your svc compliance workspaces account was changed ${how} on ${dateTimeFormat.format(input.at)} (UTC).`,
    'Every other session of the account was signed out.',
    'If you did not make this change, someone else may control your account: choose a new password at once with "Forgot your password?" on the sign-in page, and tell the people you share workspaces with, and the service operator.',
  ];
  return noticeMail('password_changed', 'The password of your account was changed', lines);
}

export interface TermEndingInput {
  workspaceName: string;
  planName: string;
  endsAt: Date;
  /** 7 or 1: which reminder this is. */
  daysBefore: 7 | 1;
  billingUrl: string;
}

/** The owners are told 7 days and 1 day before a paid term ends; terms never renew. */
export function renderTermEnding(input: TermEndingInput): RenderedMail {
  const ends = longDate(input.endsAt);
  const when = input.daysBefore === 1 ? 'tomorrow' : 'in 7 days';
  const lines = [
    `The ${input.planName} term of your compliance workspace "${input.workspaceName}" ends ${when}, on ${ends} (UTC).`,
    'It does not renew and nothing is charged. When it ends, the workspace moves to the Free plan; nothing is deleted.',
    'To stay on a paid plan, choose one in Billing:',
  ];
  const text = [...lines, input.billingUrl].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n')}
<p><a href="${escapeHtml(input.billingUrl)}">Open Billing</a></p>
</body></html>`;
  return {
    template: input.daysBefore === 1 ? 'term_ending_1_day' : 'term_ending_7_days',
    subject: `Your ${input.planName} term ends ${when}`,
    text,
    html,
  };
}

export interface MovedToFreeInput {
  workspaceName: string;
  /** The plan of the term that ended. */
  planName: string;
  endedAt: Date;
  billingUrl: string;
}

export function renderMovedToFree(input: MovedToFreeInput): RenderedMail {
  const lines = [
    `The ${input.planName} term of your compliance workspace "${input.workspaceName}" ended on ${longDate(input.endedAt)} (UTC), and the workspace is now on the Free plan.`,
    'Nothing was deleted. To move back to a paid plan, choose one in Billing:',
  ];
  const text = [...lines, input.billingUrl].join('\n');
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n')}
<p><a href="${escapeHtml(input.billingUrl)}">Open Billing</a></p>
</body></html>`;
  return {
    template: 'moved_to_free',
    subject: `"${input.workspaceName}" is now on the Free plan`,
    text,
    html,
  };
}
