import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  checkCredentials,
  finishPasskeyRegistration,
  listPasskeys,
  type PasskeyError,
  relyingPartyFor,
  removePasskey,
  signInWithPasskey,
  startPasskeyRegistration,
  startPasskeySignIn,
  type User,
} from '../../accounts/index.ts';
import { MINUTE_MS } from '../../shared/clock.ts';
import { accountChangeRecorder, recordFailedSignIn } from '../audit.ts';
import { DIRECTION_CONTROLS_REFUSED, field, isDisplayName, isStorable, safeNextPath } from '../forms.ts';
import { AFTER_SIGN_IN, signedInUser } from '../guard.ts';
import { sendNotFound, sendPage } from '../render.ts';
import { signInBrowser } from '../session.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil, signInPage } from './sign-in.ts';

const PASSKEY_NAME_MAX_LENGTH = 100;
/** Removing a passkey within this time of signing in needs no password. */
const RECENT_SIGN_IN_MS = 10 * MINUTE_MS;

type FormError = { field?: string; message: string };
type Failure = { status: number; errorCode: string; message: string };

const NEEDS_JAVASCRIPT: Failure = {
  status: 400,
  errorCode: 'passkey_response_missing',
  message:
    'Passkeys need JavaScript in the browser. Turn it on, or sign in with your email address and password.',
};

/** What each refusal tells the person, with its status and the stable code the page names. */
function failureOf(error: PasskeyError): Failure {
  switch (error.code) {
    case 'invalid_response':
      return {
        status: 400,
        errorCode: 'passkey_response_invalid',
        message: 'The browser’s answer could not be read. Try again.',
      };
    case 'challenge_invalid':
      return {
        status: 400,
        errorCode: 'passkey_challenge_invalid',
        message: 'That passkey request expired or was already used. Try again.',
      };
    case 'already_registered':
      return {
        status: 409,
        errorCode: 'passkey_already_registered',
        message: 'That passkey is already registered.',
      };
    case 'unknown_passkey':
      return {
        status: 401,
        errorCode: 'passkey_unknown',
        message:
          'That passkey is not registered here. Sign in with your password, then add it under Passkeys.',
      };
    case 'not_verified':
      return {
        status: 401,
        errorCode: 'passkey_not_verified',
        message: 'The passkey could not be verified.',
      };
    case 'throttled':
      return {
        status: 429,
        errorCode: 'too_many_requests',
        message: `Too many sign-in attempts. Try again in ${minutesUntil(error.retryAfterMs)}.`,
      };
  }
}

function sendJson(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.code(200).header('cache-control', 'no-store').type('application/json').send(body);
}

function isRecentSignIn(request: FastifyRequest, now: number): boolean {
  const signedInAt = request.visit?.signedInAt;
  return signedInAt !== undefined && now - signedInAt.getTime() < RECENT_SIGN_IN_MS;
}

export function passkeyRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const passkeyDeps = { db: deps.db, clock: deps.clock, relyingParty: relyingPartyFor(deps.config.baseUrl) };
  /** The challenge of a ceremony is tied to the browser through its form token. */
  const bindingOf = (request: FastifyRequest) => request.visit?.csrfToken ?? '';

  async function passkeysPage(
    request: FastifyRequest,
    reply: FastifyReply,
    user: User,
    extra: { errors?: FormError[]; name?: string; errorCode?: string } = {},
    status = 200,
  ) {
    return sendPage(
      request,
      reply,
      'account-passkeys',
      {
        title: 'Passkeys',
        passkeys: await listPasskeys(deps.db, user.id),
        errors: extra.errors ?? [],
        errorCode: extra.errorCode,
        name: extra.name ?? '',
        nameMaxLength: PASSKEY_NAME_MAX_LENGTH,
        relyingParty: passkeyDeps.relyingParty,
      },
      status,
    );
  }

  app.get('/account/passkeys', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    return passkeysPage(request, reply, user);
  });

  app.post('/account/passkeys/options', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    return sendJson(
      reply,
      await startPasskeyRegistration(passkeyDeps, { user, binding: bindingOf(request) }),
    );
  });

  app.post('/account/passkeys', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    const name = field(request, 'name').trim() || 'Passkey';
    const response = field(request, 'response');
    const refuse = (failure: Failure, fieldName?: string) =>
      passkeysPage(
        request,
        reply,
        user,
        {
          errors: [{ field: fieldName, message: failure.message }],
          errorCode: failure.errorCode,
          name: isStorable(name) ? name : '',
        },
        failure.status,
      );
    if (!isStorable(name) || [...name].length > PASSKEY_NAME_MAX_LENGTH) {
      return refuse(
        {
          status: 400,
          errorCode: 'invalid_request',
          message: `Name the passkey in at most ${PASSKEY_NAME_MAX_LENGTH} characters.`,
        },
        'name',
      );
    }
    if (!isDisplayName(name)) {
      return refuse(
        { status: 400, errorCode: 'invalid_request', message: DIRECTION_CONTROLS_REFUSED },
        'name',
      );
    }
    if (response === '') return refuse(NEEDS_JAVASCRIPT);
    const added = await finishPasskeyRegistration(
      passkeyDeps,
      {
        user,
        binding: bindingOf(request),
        response,
        name,
      },
      accountChangeRecorder(deps, request),
    );
    if (!added.ok) return refuse(failureOf(added.error));
    return reply.redirect('/account/passkeys', 303);
  });

  app.get<{ Params: { passkeyId: string } }>(
    '/account/passkeys/:passkeyId/remove',
    async (request, reply) => {
      const user = signedInUser(request, reply);
      if (!user) return reply;
      const passkey = (await listPasskeys(deps.db, user.id)).find((p) => p.id === request.params.passkeyId);
      if (!passkey) return sendNotFound(request, reply);
      return sendPage(request, reply, 'account-passkey-remove', {
        title: 'Remove a passkey',
        passkey,
        errors: [],
        needsPassword: !isRecentSignIn(request, deps.clock.now().getTime()),
        recentMinutes: RECENT_SIGN_IN_MS / MINUTE_MS,
      });
    },
  );

  app.post<{ Params: { passkeyId: string } }>(
    '/account/passkeys/:passkeyId/remove',
    async (request, reply) => {
      const user = signedInUser(request, reply);
      if (!user) return reply;
      const passkey = (await listPasskeys(deps.db, user.id)).find((p) => p.id === request.params.passkeyId);
      if (!passkey) return sendNotFound(request, reply);
      if (!isRecentSignIn(request, deps.clock.now().getTime())) {
        const confirmed = await checkCredentials(deps, {
          email: user.email,
          password: field(request, 'password'),
          ip: request.ip,
        });
        if (!confirmed.ok) {
          const throttled = confirmed.error.code === 'throttled';
          const message =
            confirmed.error.code === 'throttled'
              ? `Too many attempts. Try again in ${minutesUntil(confirmed.error.retryAfterMs)}.`
              : 'That is not your password.';
          return sendPage(
            request,
            reply,
            'account-passkey-remove',
            {
              title: 'Remove a passkey',
              passkey,
              errors: [{ field: 'password', message }],
              errorCode: throttled ? 'too_many_requests' : 'password_required',
              needsPassword: true,
              recentMinutes: RECENT_SIGN_IN_MS / MINUTE_MS,
            },
            throttled ? 429 : 401,
          );
        }
      }
      await removePasskey(deps.db, { user, passkeyId: passkey.id }, accountChangeRecorder(deps, request));
      return reply.redirect('/account/passkeys', 303);
    },
  );

  app.post('/sign-in/passkey/options', async (request, reply) =>
    sendJson(reply, await startPasskeySignIn(passkeyDeps, { binding: bindingOf(request) })),
  );

  app.post('/sign-in/passkey', async (request, reply) => {
    const next = safeNextPath(field(request, 'next'), AFTER_SIGN_IN);
    const response = field(request, 'response');
    const refuse = (failure: Failure) =>
      signInPage(
        request,
        reply,
        {
          email: '',
          next,
          errors: [{ message: failure.message }],
          errorCode: failure.errorCode,
          passkeys: passkeyDeps.relyingParty.usable,
        },
        failure.status,
      );
    if (response === '') return refuse(NEEDS_JAVASCRIPT);
    const signedIn = await signInWithPasskey(passkeyDeps, {
      binding: bindingOf(request),
      response,
      ip: request.ip,
    });
    if (!signedIn.ok) {
      if (signedIn.error.code === 'not_verified' && signedIn.error.account) {
        await recordFailedSignIn(deps, request, signedIn.error.account);
      }
      return refuse(failureOf(signedIn.error));
    }
    await signInBrowser(deps, deps.cookies, request, reply, signedIn.value);
    return reply.redirect(next, 303);
  });
}
