import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  endSession,
  resumeSession,
  SESSION_ABSOLUTE_TIMEOUT_MS,
  startSession,
  type User,
} from '../accounts/index.ts';
import { userActor } from '../audit/index.ts';
import { inTransaction } from '../db/transaction.ts';
import { constantTimeEqual } from '../shared/ids.ts';
import { recordAccountEvent } from './audit.ts';
import { isLocalDevelopmentUrl, type WebDeps } from './context.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';

/** Who is looking at a page, and what the page's forms must carry back. */
export interface Visit {
  user: User | null;
  /** The synchronizer token of this browser's session (or of its pre-sign-in form cookie). */
  csrfToken: string;
  /** When this browser signed in (the session's start); absent before sign-in. */
  signedInAt?: Date;
}

declare module 'fastify' {
  interface FastifyRequest {
    visit?: Visit;
  }
}

const FORM_SEED_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface SessionCookies {
  secure: boolean;
  session: string;
  form: string;
}

export function sessionCookiesFor(baseUrl: string): SessionCookies {
  const secure = !isLocalDevelopmentUrl(baseUrl);
  const prefix = secure ? '__Host-' : '';
  return { secure, session: `${prefix}svc_session`, form: `${prefix}svc_form` };
}

/**
 * The token forms carry: derived from the secret of the browser's session (or, before sign-in,
 * of its form cookie) with SHA-256, so it needs no storage, changes whenever the session does,
 * and reveals nothing about the secret.
 */
function csrfTokenFor(seed: string): string {
  return createHash('sha256').update(`csrf\0${seed}`).digest('base64url');
}

/**
 * Reads the session cookie into `request.visit`. A browser without a live session gets a form
 * cookie instead (random, never stored), which the forms before sign-in are tied to.
 */
export async function loadVisit(
  deps: WebDeps,
  cookies: SessionCookies,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const secret = readCookie(request, cookies.session);
  if (secret) {
    const resumed = await resumeSession(deps.db, deps.clock, secret);
    if (resumed) {
      request.visit = {
        user: resumed.user,
        csrfToken: csrfTokenFor(secret),
        signedInAt: resumed.session.createdAt,
      };
      return;
    }
    clearCookie(reply, cookies.session, cookies);
  }
  let seed = readCookie(request, cookies.form);
  if (!seed || !FORM_SEED_PATTERN.test(seed)) {
    seed = randomBytes(32).toString('base64url');
    setCookie(reply, cookies.form, seed, cookies);
  }
  request.visit = { user: null, csrfToken: csrfTokenFor(seed) };
}

export function hasValidCsrfToken(request: FastifyRequest, presented: unknown): boolean {
  const expected = request.visit?.csrfToken;
  return typeof presented === 'string' && expected !== undefined && constantTimeEqual(presented, expected);
}

/**
 * Signs the browser in with a brand-new session (whatever session it had before ends); the
 * session and its audit events commit together.
 */
export async function signInBrowser(
  deps: WebDeps,
  cookies: SessionCookies,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
): Promise<void> {
  const previous = readCookie(request, cookies.session);
  const { secret } = await inTransaction(deps.db, async (trx) => {
    const started = await startSession(trx, deps.clock, user.id, previous);
    await recordAccountEvent(trx, deps, request, {
      action: 'account.signed_in',
      account: user,
      actor: userActor(user),
    });
    return started;
  });
  setCookie(reply, cookies.session, secret, { ...cookies, maxAge: SESSION_ABSOLUTE_TIMEOUT_MS / 1000 });
}

export async function signOutBrowser(
  deps: WebDeps,
  cookies: SessionCookies,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const secret = readCookie(request, cookies.session);
  const user = request.visit?.user;
  if (secret) {
    await inTransaction(deps.db, async (trx) => {
      await endSession(trx, secret);
      if (user) {
        await recordAccountEvent(trx, deps, request, {
          action: 'account.signed_out',
          account: user,
          actor: userActor(user),
        });
      }
    });
  }
  clearCookie(reply, cookies.session, cookies);
}
