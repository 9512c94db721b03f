import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serviceErrorOf, statusOf } from '../http/errors.ts';
import type { WebDeps } from './context.ts';
import { acceptFormBodies } from './forms.ts';
import { isMachinePath } from './machine-paths.ts';
import { sendPage } from './render.ts';
import { accountRoutes } from './routes/account.ts';
import { accountLinkRoutes } from './routes/account-links.ts';
import { auditRoutes } from './routes/audit.ts';
import { auditorRoutes } from './routes/auditors.ts';
import { billingRoutes } from './routes/billing.ts';
import { connectedClientRoutes } from './routes/connected-clients.ts';
import { controlRoutes } from './routes/controls.ts';
import { evidenceRoutes } from './routes/evidence.ts';
import { evidencePackageRoutes } from './routes/evidence-packages.ts';
import { integrationRoutes } from './routes/integrations.ts';
import { invitationRoutes } from './routes/invitations.ts';
import { memberRoutes } from './routes/members.ts';
import { oauthConsentRoutes } from './routes/oauth-consent.ts';
import { orderRoutes } from './routes/orders.ts';
import { passkeyRoutes } from './routes/passkeys.ts';
import { peopleRoutes } from './routes/people.ts';
import { policyRoutes } from './routes/policies.ts';
import { publicRoutes } from './routes/public.ts';
import { reportRoutes } from './routes/reports.ts';
import { riskRoutes } from './routes/risks.ts';
import { settingsRoutes } from './routes/settings.ts';
import { signInRoutes } from './routes/sign-in.ts';
import { taskRoutes } from './routes/tasks.ts';
import { vendorRoutes } from './routes/vendors.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { workspaceOverviewRoutes, workspaceRoutes } from './routes/workspaces.ts';
import { hasValidCsrfToken, loadVisit, sessionCookiesFor } from './session.ts';
import { registerWorkspacePages } from './workspace-scope.ts';

export type { WebDeps } from './context.ts';

/**
 * The app for people: public pages, sign-in, invitations and the workspace pages, rendered on the
 * server. Everything here is one encapsulated scope with its own body parser (forms only),
 * session hook, cross-site request checks and HTML error pages.
 */
export async function webApp(scope: FastifyInstance, deps: WebDeps): Promise<void> {
  const cookies = sessionCookiesFor(deps.config.baseUrl);
  const origin = new URL(deps.config.baseUrl).origin;
  acceptFormBodies(scope);

  scope.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.asset) return;
    await loadVisit(deps, cookies, request, reply);
  });

  scope.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const body = request.body as Record<string, unknown> | undefined;
    if (!isSameSiteRequest(request, origin) || !hasValidCsrfToken(request, body?._csrf)) {
      return sendPage(
        request,
        reply,
        'error',
        {
          title: 'Form not accepted',
          heading: 'This form could not be accepted',
          message:
            'It was sent from another site, or the page was open for too long. Go back, reload the page and try again.',
        },
        403,
      );
    }
  });

  scope.setErrorHandler((error: FastifyError, request, reply) => answerWithErrorPage(error, request, reply));

  const routeDeps = { ...deps, cookies };
  publicRoutes(scope);
  signInRoutes(scope, routeDeps);
  accountLinkRoutes(scope, routeDeps);
  accountRoutes(scope, routeDeps);
  invitationRoutes(scope, routeDeps);
  workspaceRoutes(scope, routeDeps);
  passkeyRoutes(scope, routeDeps);
  orderRoutes(scope, routeDeps);
  oauthConsentRoutes(scope, routeDeps);
  registerWorkspacePages(scope, routeDeps, [
    workspaceOverviewRoutes,
    controlRoutes,
    taskRoutes,
    evidenceRoutes,
    evidencePackageRoutes,
    riskRoutes,
    vendorRoutes,
    peopleRoutes,
    policyRoutes,
    reportRoutes,
    integrationRoutes,
    connectedClientRoutes,
    memberRoutes,
    auditorRoutes,
    auditRoutes,
    webhookRoutes,
    billingRoutes,
    settingsRoutes,
  ]);
}

/**
 * A state-changing request must come from one of our own pages: a browser's `Origin` must be
 * ours; when it sends `Origin: null` (a page with a no-referrer policy) or none, `Sec-Fetch-Site`
 * must say same-origin. Clients that send neither header (not a browser) still need the token.
 */
function isSameSiteRequest(request: FastifyRequest, origin: string): boolean {
  const sentOrigin = request.headers.origin;
  if (sentOrigin !== undefined && sentOrigin !== 'null') return sentOrigin === origin;
  const site = request.headers['sec-fetch-site'];
  if (site === undefined) return sentOrigin === undefined;
  return site === 'same-origin';
}

/**
 * The web app's wording of a service error: a page, never a stack. A query string a list does not
 * take (a filter value it does not offer) is `invalid_filter`: the list's links are the way in.
 */
function answerWithErrorPage(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const serviceError = serviceErrorOf(error, request);
  const status = statusOf(serviceError);
  if (serviceError.code === 'invalid_request' && serviceError.part === 'querystring') {
    return sendPage(
      request,
      reply,
      'error',
      {
        title: 'Not a filter of this list',
        heading: 'This list cannot be shown',
        message: 'Choose the filters from the lists on the page, and search for at most 200 characters.',
        errorCode: 'invalid_filter',
      },
      400,
    );
  }
  return sendPage(
    request,
    reply,
    'error',
    status === 500
      ? {
          title: 'Something went wrong',
          heading: 'Something went wrong on our side',
          message: 'The page could not be shown. Try again in a moment.',
          requestId: request.id,
        }
      : {
          title: 'Request not accepted',
          heading: 'This request could not be accepted',
          message: 'The page sent something we could not read. Go back and try again.',
        },
    status,
  );
}

/** What the app answers before routing, for browsers; undefined leaves the answer to the caller's format. */
export interface PagesBeforeRouting {
  notFound(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> | undefined;
  methodNotAllowed(
    request: FastifyRequest,
    reply: FastifyReply,
    allowed: string[],
  ): Promise<FastifyReply> | undefined;
  unroutableUrl(
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply> | undefined;
}

/**
 * The app's pages for requests no route of the app takes (an unknown path, another method, a URL
 * the router cannot read). The app's session hook never ran for them, so each loads the visit
 * itself: a signed-in person sees their own header, not the signed-out one.
 */
export function pagesBeforeRouting(deps: WebDeps): PagesBeforeRouting {
  const cookies = sessionCookiesFor(deps.config.baseUrl);
  const withVisit = async (request: FastifyRequest, reply: FastifyReply, send: () => FastifyReply) => {
    try {
      await loadVisit(deps, cookies, request, reply);
    } catch (error) {
      request.log.error({ err: error }, 'the visit of an error page could not be loaded; shown signed out');
    }
    return send();
  };
  return {
    notFound(request, reply) {
      if (!wantsAppPage(request)) return undefined;
      return withVisit(request, reply, () =>
        sendPage(request, reply, 'not-found', { title: 'Page not found' }, 404),
      );
    },
    // A browser reopening an address that only takes a form (the page a form answered with, such
    // as a new API key shown once): a page that says so.
    methodNotAllowed(request, reply, allowed) {
      if (request.method !== 'GET' || !wantsAppPage(request)) return undefined;
      reply.header('allow', allowed.join(', '));
      return withVisit(request, reply, () =>
        sendPage(
          request,
          reply,
          'error',
          {
            title: 'This address takes a form',
            heading: 'This page cannot be opened again',
            message:
              'It showed the answer to a form, and the address only takes that form. Go back to the page the form was on.',
          },
          405,
        ),
      );
    },
    unroutableUrl(error, request, reply) {
      if (!wantsAppPage(request)) return undefined;
      return withVisit(request, reply, () =>
        sendPage(
          request,
          reply,
          'error',
          {
            title: 'Address not valid',
            heading: 'This address is not valid',
            message:
              'It is too long or not validly encoded, so no page can answer it. Check the link you followed.',
          },
          statusOf(serviceErrorOf(error, request)),
        ),
      );
    },
  };
}

/** A browser asking for HTML at an address of the app, not of the API, a protocol or a machine. */
function wantsAppPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  const path = request.url.split('?')[0] ?? '/';
  return typeof accept === 'string' && /\btext\/html\b/i.test(accept) && !isMachinePath(path);
}
