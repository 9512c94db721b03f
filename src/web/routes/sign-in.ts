import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkCredentials, isValidEmail, relyingPartyFor } from '../../accounts/index.ts';
import { recordFailedSignIn } from '../audit.ts';
import { field, safeNextPath } from '../forms.ts';
import { AFTER_SIGN_IN } from '../guard.ts';
import { sendPage } from '../render.ts';
import { signInBrowser, signOutBrowser } from '../session.ts';
import type { RouteDeps } from './deps.ts';

/** One message for an unknown address and a wrong password, so the page does not tell which. */
const INVALID_CREDENTIALS = 'The email address or password is not right.';

interface FormError {
  field?: string;
  message: string;
}

export function signInPage(
  request: FastifyRequest,
  reply: FastifyReply,
  form: { email: string; next: string; errors: FormError[]; errorCode?: string; passkeys: boolean },
  status = 200,
) {
  return sendPage(request, reply, 'sign-in', { title: 'Sign in', ...form }, status);
}

export function minutesUntil(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

export function signInRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const passkeys = relyingPartyFor(deps.config.baseUrl).usable;
  app.get<{ Querystring: { next?: string } }>('/sign-in', async (request, reply) => {
    const next = safeNextPath(request.query.next, AFTER_SIGN_IN);
    if (request.visit?.user) return reply.redirect(next, 303);
    return signInPage(request, reply, { email: '', next, errors: [], passkeys });
  });

  app.post('/sign-in', async (request, reply) => {
    const email = field(request, 'email').trim();
    const password = field(request, 'password');
    const next = safeNextPath(field(request, 'next'), AFTER_SIGN_IN);
    const errors: FormError[] = [];
    if (!isValidEmail(email))
      errors.push({ field: 'email', message: 'Enter an email address like name@example.com.' });
    if (password === '') errors.push({ field: 'password', message: 'Enter your password.' });
    if (errors.length > 0) return signInPage(request, reply, { email, next, errors, passkeys }, 400);

    const checked = await checkCredentials(deps, { email, password, ip: request.ip });
    if (!checked.ok) {
      if (checked.error.code === 'invalid_credentials') {
        await recordFailedSignIn(deps, request, checked.error.account);
      }
      const throttled = checked.error.code === 'throttled';
      const message =
        checked.error.code === 'throttled'
          ? `Too many sign-in attempts. Try again in ${minutesUntil(checked.error.retryAfterMs)}.`
          : INVALID_CREDENTIALS;
      return signInPage(
        request,
        reply,
        { email, next, errors: [{ message }], passkeys },
        throttled ? 429 : 401,
      );
    }
    await signInBrowser(deps, deps.cookies, request, reply, checked.value);
    return reply.redirect(next, 303);
  });

  app.post('/sign-out', async (request, reply) => {
    await signOutBrowser(deps, deps.cookies, request, reply);
    return reply.redirect(safeNextPath(field(request, 'next'), '/'), 303);
  });
}
