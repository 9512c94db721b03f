import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type Access,
  AUTHORIZE_PATH,
  type AuthorizationParams,
  type AuthorizationRequest,
  authorizationResponseUrl,
  checkAuthorizationRequest,
  grantConsent,
  issuerOf,
  type OAuthDeps,
} from '../../oauth/index.ts';
import { canManageWorkspace, listMemberships } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { field } from '../forms.ts';
import { signedInUser } from '../guard.ts';
import { sendPage } from '../render.ts';
import type { RouteDeps } from './deps.ts';

const PARAM_NAMES = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;

/** The authorization request's parameters; one sent twice counts as not sent (RFC 6749 3.1). */
function paramsOf(read: (name: string) => unknown): AuthorizationParams {
  const params: AuthorizationParams = {};
  for (const name of PARAM_NAMES) {
    const value = read(name);
    if (typeof value === 'string') params[name] = value;
  }
  return params;
}

/** Where a form that redirects to the client may lead: its origin, or its private-use scheme. */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function refusalPage(request: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  return sendPage(
    request,
    reply,
    'error',
    {
      title: 'Authorization request not valid',
      heading: 'This connection request cannot be accepted',
      message: `${message} Start again from the application that sent you here.`,
      errorCode: 'invalid_authorization_request',
    },
    400,
  );
}

/**
 * The consent page of the authorization server (`/oauth/authorize`): the person signs in, picks a
 * workspace they manage and what the client may do there, then is sent back to the client with a
 * code (or `access_denied`), `state` and `iss`.
 */
export function oauthConsentRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const oauth: OAuthDeps = {
    db: deps.db,
    clock: deps.clock,
    config: deps.config,
    targets: deps.webhookTargets,
  };
  const issuer = issuerOf(deps.config.baseUrl);

  const check = async (request: FastifyRequest, reply: FastifyReply, params: AuthorizationParams) => {
    const checked = await checkAuthorizationRequest(oauth, params);
    if (checked.ok) return checked.value;
    const refusal = checked.error;
    if (refusal.to === 'show') return refusalPage(request, reply, refusal.message);
    return reply.redirect(
      authorizationResponseUrl(refusal.redirectUri, issuer, {
        error: refusal.error,
        error_description: refusal.description,
        state: refusal.state,
      }),
      303,
    );
  };

  const consentPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    authorization: AuthorizationRequest,
    userId: string,
    chosen: { workspaceId?: string; access: Access; error?: string },
  ) => {
    const workspaces = (await listMemberships(deps.db, userId))
      .filter((membership) => canManageWorkspace(membership.role))
      .map((membership) => membership.workspace);
    return sendPage(
      request,
      reply,
      'oauth-consent',
      {
        title: `Connect ${authorization.client.name}`,
        client: {
          name: authorization.client.name,
          id: authorization.client.clientId,
          kind: authorization.client.kind,
          redirectHost: formTargetOf(authorization.redirectUri),
        },
        params: Object.entries(authorization.params).filter(([, value]) => value !== undefined),
        workspaces,
        chosenWorkspace: chosen.workspaceId ?? workspaces[0]?.id,
        access: chosen.access,
        error: chosen.error,
      },
      chosen.error ? 400 : 200,
      [formTargetOf(authorization.redirectUri)],
    );
  };

  app.get(AUTHORIZE_PATH, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const authorization = await check(
      request,
      reply,
      paramsOf((name) => query[name]),
    );
    if (!('client' in authorization)) return authorization;
    const user = signedInUser(request, reply);
    if (!user) return reply;
    return consentPage(request, reply, authorization, user.id, { access: authorization.requestedAccess });
  });

  app.post(AUTHORIZE_PATH, async (request, reply) => {
    const authorization = await check(
      request,
      reply,
      paramsOf((name) => field(request, name) || undefined),
    );
    if (!('client' in authorization)) return authorization;
    const user = signedInUser(request, reply);
    if (!user) return reply;
    const answer = (values: Record<string, string | undefined>) =>
      reply.redirect(
        authorizationResponseUrl(authorization.redirectUri, issuer, {
          ...values,
          state: authorization.state,
        }),
        303,
      );
    if (field(request, 'decision') !== 'allow')
      return answer({ error: 'access_denied', error_description: 'The person declined the connection.' });
    const access = field(request, 'access');
    const workspaceId = field(request, 'workspace_id');
    if (access !== 'read' && access !== 'write')
      return consentPage(request, reply, authorization, user.id, {
        workspaceId,
        access: authorization.requestedAccess,
        error: 'Choose what the application may do.',
      });
    const granted = await grantConsent(
      oauth,
      { request: authorization, user, workspaceId, access },
      userSourceOf(request, user),
    );
    if (!granted.ok)
      return consentPage(request, reply, authorization, user.id, {
        access,
        error: 'Choose a workspace you own or administer.',
      });
    return answer({ code: granted.value.code });
  });
}
