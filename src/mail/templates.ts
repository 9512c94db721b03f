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

const dateFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' });

export function renderOwnerInvitation(input: OwnerInvitationInput): RenderedMail {
  const termNotice =
    input.termEndsAt === null
      ? 'The workspace is on the Free plan.'
      : `The plan is prepaid until ${dateFormat.format(input.termEndsAt)} (UTC) and does not renew; afterwards the workspace moves to the Free plan.`;
  const expires = dateFormat.format(input.expiresAt);
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
