import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type EmailedLinkPurpose,
  isUsableLink,
  isValidEmail,
  LINK_VALID_FOR,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  requestEmailedLink,
  resetPasswordWithLink,
  signInWithLink,
} from '../../accounts/index.ts';
import { accountChangeRecorder } from '../audit.ts';
import { field } from '../forms.ts';
import { AFTER_SIGN_IN } from '../guard.ts';
import { sendPage } from '../render.ts';
import { signInBrowser } from '../session.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type TokenParams = { Params: { token: string } };
type FormError = { field?: string; message: string };

/** The form that asks for a link by address, per purpose. */
const REQUEST_PAGES: Record<
  EmailedLinkPurpose,
  { path: string; title: string; intro: string; button: string }
> = {
  sign_in: {
    path: '/sign-in/email',
    title: 'Sign in with a link by email',
    intro: `Enter the address of your account and we will email you a link that signs you in. It works once, for ${LINK_VALID_FOR.sign_in}.`,
    button: 'Email me a sign-in link',
  },
  password_reset: {
    path: '/password-reset',
    title: 'Reset your password',
    intro: `Enter the address of your account and we will email you a link to choose a new password. It works once, for ${LINK_VALID_FOR.password_reset}.`,
    button: 'Email me a reset link',
  },
};

function requestPage(
  request: FastifyRequest,
  reply: FastifyReply,
  purpose: EmailedLinkPurpose,
  form: { email: string; errors: FormError[] },
  status = 200,
) {
  const page = REQUEST_PAGES[purpose];
  return sendPage(
    request,
    reply,
    'request-link',
    {
      title: page.title,
      heading: page.title,
      intro: page.intro,
      action: page.path,
      buttonLabel: page.button,
      ...form,
    },
    status,
  );
}

/**
 * The answer to every accepted request, whether or not the address has an account: the same
 * status and the same bytes (the address is not even repeated).
 */
function linkSentPage(request: FastifyRequest, reply: FastifyReply, purpose: EmailedLinkPurpose) {
  const what = purpose === 'sign_in' ? 'a link to sign in' : 'a link to choose a new password';
  return sendPage(request, reply, 'message', {
    title: 'Check your email',
    heading: 'Check your email',
    paragraphs: [
      `If an account exists for that address, we have sent it ${what}. The link works once, for ${LINK_VALID_FOR[purpose]}.`,
      'Nothing there after a few minutes? Look in the spam folder, or check the address and ask again.',
    ],
    link: { href: '/sign-in', label: 'Back to signing in' },
  });
}

/** An unknown, used or expired link: one page for all three, with the way to a fresh one. */
export function linkInvalidPage(
  request: FastifyRequest,
  reply: FastifyReply,
  again: { href: string; label: string },
) {
  return sendPage(
    request,
    reply,
    'message',
    {
      title: 'Link no longer works',
      heading: 'This link no longer works',
      paragraphs: [
        'Links we email work once and for a limited time, and only the newest one sent for the same purpose works. This one was already used, has expired or was replaced.',
      ],
      link: again,
      errorCode: 'link_invalid',
    },
    410,
  );
}

function registerLinkRequest(app: FastifyInstance, deps: RouteDeps, purpose: EmailedLinkPurpose): void {
  const { path } = REQUEST_PAGES[purpose];
  app.get(path, async (request, reply) => requestPage(request, reply, purpose, { email: '', errors: [] }));

  app.post(path, async (request, reply) => {
    const email = field(request, 'email').trim();
    if (!isValidEmail(email)) {
      const errors = [{ field: 'email', message: 'Enter an email address like name@example.com.' }];
      return requestPage(request, reply, purpose, { email, errors }, 400);
    }
    const requested = await requestEmailedLink(deps, { purpose, email, ip: request.ip });
    if (!requested.ok) {
      const message = `Several emails were asked for recently. Try again in ${minutesUntil(requested.error.retryAfterMs)}.`;
      return requestPage(request, reply, purpose, { email, errors: [{ message }] }, 429);
    }
    return linkSentPage(request, reply, purpose);
  });
}

export function accountLinkRoutes(app: FastifyInstance, deps: RouteDeps): void {
  registerLinkRequest(app, deps, 'sign_in');
  registerLinkRequest(app, deps, 'password_reset');
  const askAgain = (purpose: EmailedLinkPurpose) => ({
    href: REQUEST_PAGES[purpose].path,
    label: purpose === 'sign_in' ? 'Email me a new sign-in link' : 'Email me a new reset link',
  });

  // Opening a link only shows a button: mail scanners that fetch links must not use them up.
  app.get<TokenParams>('/sign-in/link/:token', async (request, reply) => {
    const path = `/sign-in/link/${request.params.token}`;
    if (!(await isUsableLink(deps, 'sign_in', request.params.token)))
      return linkInvalidPage(request, reply, askAgain('sign_in'));
    return sendPage(request, reply, 'use-link', {
      title: 'Sign in',
      heading: 'Sign in with your email link',
      paragraphs: ['Press the button to sign in on this device. The link then stops working.'],
      action: path,
      buttonLabel: 'Sign in',
    });
  });

  app.post<TokenParams>('/sign-in/link/:token', async (request, reply) => {
    const user = await signInWithLink(deps, request.params.token);
    if (!user) return linkInvalidPage(request, reply, askAgain('sign_in'));
    await signInBrowser(deps, deps.cookies, request, reply, user);
    return reply.redirect(AFTER_SIGN_IN, 303);
  });

  const resetPage = (request: FastifyRequest, reply: FastifyReply, errors: FormError[], status = 200) =>
    sendPage(
      request,
      reply,
      'password-reset',
      {
        title: 'Choose a new password',
        action: `/password-reset/link/${(request.params as { token: string }).token}`,
        passwordMinLength: PASSWORD_MIN_LENGTH,
        passwordMaxLength: PASSWORD_MAX_LENGTH,
        errors,
      },
      status,
    );

  app.get<TokenParams>('/password-reset/link/:token', async (request, reply) => {
    if (!(await isUsableLink(deps, 'password_reset', request.params.token)))
      return linkInvalidPage(request, reply, askAgain('password_reset'));
    return resetPage(request, reply, []);
  });

  app.post<TokenParams>('/password-reset/link/:token', async (request, reply) => {
    const reset = await resetPasswordWithLink(
      deps,
      {
        token: request.params.token,
        password: field(request, 'password'),
      },
      accountChangeRecorder(deps, request),
    );
    if (reset.ok) {
      await signInBrowser(deps, deps.cookies, request, reply, reset.value);
      return reply.redirect('/account?done=password', 303);
    }
    if (reset.error.code === 'link_invalid')
      return linkInvalidPage(request, reply, askAgain('password_reset'));
    return resetPage(request, reply, [{ field: 'password', message: reset.error.message }], 400);
  });
}
