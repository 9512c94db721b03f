import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type ChangePasswordError,
  changePassword,
  confirmEmailChange,
  type EmailChangeRequestError,
  LINK_VALID_FOR,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  pendingEmailChange,
  requestEmailChange,
} from '../../accounts/index.ts';
import { memberAddressChanged } from '../../workspace/index.ts';
import { accountChangeRecorder } from '../audit.ts';
import { field } from '../forms.ts';
import { signedInUser } from '../guard.ts';
import { sendPage } from '../render.ts';
import { signInBrowser } from '../session.ts';
import { linkInvalidPage } from './account-links.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type TokenParams = { Params: { token: string } };
type FormError = { field?: string; message: string };

/** What `/account?done=...` says after a redirect. */
const NOTICES: Record<string, string> = {
  password: 'Your password was changed. Every other browser signed in to your account was signed out.',
};

function accountPage(
  request: FastifyRequest,
  reply: FastifyReply,
  page: { notice?: string; errors?: FormError[]; newEmail?: string },
  status = 200,
) {
  return sendPage(
    request,
    reply,
    'account',
    {
      title: 'Your account',
      notice: page.notice,
      errors: page.errors ?? [],
      newEmail: page.newEmail ?? '',
      passwordMinLength: PASSWORD_MIN_LENGTH,
      passwordMaxLength: PASSWORD_MAX_LENGTH,
    },
    status,
  );
}

function passwordChangeError(error: ChangePasswordError): FormError & { status: number } {
  switch (error.code) {
    case 'weak_password':
      return { field: 'new-password', message: error.message, status: 400 };
    case 'throttled':
      return { message: `Too many attempts. Try again in ${minutesUntil(error.retryAfterMs)}.`, status: 429 };
    default:
      return { field: 'current-password', message: 'Your current password is not right.', status: 401 };
  }
}

function emailChangeError(error: EmailChangeRequestError): FormError & { status: number } {
  switch (error.code) {
    case 'invalid_email':
      return { field: 'new-email', message: 'Enter an email address like name@example.com.', status: 400 };
    case 'same_email':
      return { field: 'new-email', message: 'That is already the address of your account.', status: 400 };
    case 'email_unavailable':
      return { field: 'new-email', message: 'That address is not available. Choose another.', status: 409 };
    case 'throttled':
      return { message: `Too many attempts. Try again in ${minutesUntil(error.retryAfterMs)}.`, status: 429 };
    default:
      return { field: 'email-password', message: 'Your current password is not right.', status: 401 };
  }
}

export function accountRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Querystring: { done?: string } }>('/account', async (request, reply) => {
    if (!signedInUser(request, reply)) return reply;
    const done = request.query.done;
    return accountPage(request, reply, {
      notice: done && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined,
    });
  });

  app.post('/account/password', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    const changed = await changePassword(
      deps,
      {
        user,
        currentPassword: field(request, 'current_password'),
        newPassword: field(request, 'new_password'),
        ip: request.ip,
      },
      accountChangeRecorder(deps, request),
    );
    if (!changed.ok) {
      const { status, ...error } = passwordChangeError(changed.error);
      return accountPage(request, reply, { errors: [error] }, status);
    }
    await signInBrowser(deps, deps.cookies, request, reply, user);
    return reply.redirect('/account?done=password', 303);
  });

  app.post('/account/email', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    const newEmail = field(request, 'new_email');
    const requested = await requestEmailChange(
      { db: deps.db, clock: deps.clock, baseUrl: deps.config.baseUrl },
      { user, password: field(request, 'password'), newEmail, ip: request.ip },
      accountChangeRecorder(deps, request),
    );
    if (!requested.ok) {
      const { status, ...error } = emailChangeError(requested.error);
      return accountPage(request, reply, { errors: [error], newEmail: newEmail.trim() }, status);
    }
    return accountPage(request, reply, {
      notice: `We sent a confirmation link to ${requested.value.newEmail}. Your address changes when you open it there and confirm, within ${LINK_VALID_FOR.email_change}.`,
    });
  });

  const askAgain = { href: '/account', label: 'Ask for a new confirmation link in your account' };

  app.get<TokenParams>('/account/email/:token', async (request, reply) => {
    const pending = await pendingEmailChange(deps, request.params.token);
    if (!pending) return linkInvalidPage(request, reply, askAgain);
    return sendPage(request, reply, 'use-link', {
      title: 'Confirm your new email address',
      heading: 'Confirm your new email address',
      paragraphs: [
        `Your account will sign in with ${pending.newEmail} from now on; the old address no longer will, and it is told of the change.`,
      ],
      action: `/account/email/${request.params.token}`,
      buttonLabel: 'Confirm the new address',
    });
  });

  app.post<TokenParams>('/account/email/:token', async (request, reply) => {
    const confirmed = await confirmEmailChange(
      deps,
      request.params.token,
      accountChangeRecorder(deps, request),
      memberAddressChanged,
    );
    if (!confirmed.ok) {
      if (confirmed.error === 'link_invalid') return linkInvalidPage(request, reply, askAgain);
      return sendPage(
        request,
        reply,
        'error',
        {
          title: 'Address not available',
          heading: 'This address is not available any more',
          message: 'The address could not be given to your account. Your account keeps its old address.',
          errorCode: 'email_unavailable',
        },
        409,
      );
    }
    const signedIn = request.visit?.user?.id === confirmed.value.id;
    return sendPage(request, reply, 'message', {
      title: 'Address changed',
      heading: 'Your email address was changed',
      paragraphs: [`Your account now signs in with ${confirmed.value.email}.`],
      link: signedIn
        ? { href: '/account', label: 'Back to your account' }
        : { href: '/sign-in', label: 'Sign in' },
    });
  });
}
