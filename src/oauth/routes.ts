import type { FastifyInstance, FastifyReply } from 'fastify';
import type { RateLimiter } from '../http/rate-limit.ts';
import { registerClient } from './clients.ts';
import { issuerOf, mcpResourceOf, type OAuthDeps, READ_SCOPE, WRITE_SCOPE } from './context.ts';
import { exchangeToken, revokeToken, type TokenRequest } from './grants.ts';

export const AUTHORIZE_PATH = '/oauth/authorize';
const TOKEN_PATH = '/oauth/token';
const REGISTER_PATH = '/oauth/register';
const REVOKE_PATH = '/oauth/revoke';
const FORM_BODY_LIMIT_BYTES = 16 * 1024;

/** RFC 8414 metadata of the authorization server. */
export function authorizationServerMetadata(baseUrl: string) {
  const issuer = issuerOf(baseUrl);
  return {
    issuer,
    authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    registration_endpoint: `${issuer}${REGISTER_PATH}`,
    revocation_endpoint: `${issuer}${REVOKE_PATH}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [READ_SCOPE, WRITE_SCOPE],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: `${issuer}/api/v1/docs`,
  };
}

/** RFC 9728 metadata of the one protected resource, the MCP endpoint. */
export function protectedResourceMetadata(baseUrl: string) {
  return {
    resource: mcpResourceOf(baseUrl),
    authorization_servers: [issuerOf(baseUrl)],
    bearer_methods_supported: ['header'],
    scopes_supported: [READ_SCOPE, WRITE_SCOPE],
    resource_name: 'Compliance workspace (MCP)',
    resource_documentation: `${issuerOf(baseUrl)}/api/v1/docs`,
  };
}

/** The metadata URL a 401 of the MCP endpoint names (RFC 9728 section 5.1). */
export function protectedResourceMetadataUrl(baseUrl: string): string {
  return `${issuerOf(baseUrl)}/.well-known/oauth-protected-resource/mcp`;
}

/**
 * Public documents and endpoints any client (a browser-based one too) may call: readable across
 * origins, without credentials.
 */
function allowAnyOrigin(reply: FastifyReply): FastifyReply {
  return reply
    .header('access-control-allow-origin', '*')
    .header('access-control-allow-methods', 'GET, POST, OPTIONS')
    .header('access-control-allow-headers', 'authorization, content-type, mcp-protocol-version')
    .header('access-control-max-age', '600');
}

function oauthError(reply: FastifyReply, status: number, error: string, description: string): FastifyReply {
  return allowAnyOrigin(reply)
    .code(status)
    .header('cache-control', 'no-store')
    .type('application/json')
    .send({ error, error_description: description });
}

/**
 * The machine side of the authorization server: metadata documents, dynamic registration, the token
 * and revocation endpoints. The consent page (`/oauth/authorize`) is in the app (`web/`).
 */
export async function oauthRoutes(
  scope: FastifyInstance,
  deps: OAuthDeps & { limiter: RateLimiter },
): Promise<void> {
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES },
    (_request, body, done) => {
      const fields: TokenRequest = Object.create(null);
      // A parameter sent twice is refused by RFC 6749 3.2; keeping neither makes it missing.
      const repeated = new Set<string>();
      for (const [name, value] of new URLSearchParams(body as string)) {
        if (name in fields) repeated.add(name);
        fields[name] = value;
      }
      for (const name of repeated) fields[name] = undefined;
      done(null, fields);
    },
  );
  scope.addHook('onRequest', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'OPTIONS') return;
    const verdict = await deps.limiter.hit(`oauth:${request.ip}`);
    if (!verdict.allowed) {
      reply.header('retry-after', String(verdict.resetSeconds));
      return oauthError(reply, 429, 'slow_down', 'Too many requests; wait Retry-After seconds.');
    }
  });

  const metadata = authorizationServerMetadata(deps.config.baseUrl);
  const resource = protectedResourceMetadata(deps.config.baseUrl);
  const json = (document: object) => async (_request: unknown, reply: FastifyReply) =>
    allowAnyOrigin(reply).header('cache-control', 'public, max-age=300').send(document);
  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'])
    scope.get(path, json(metadata));
  for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])
    scope.get(path, json(resource));
  for (const path of [
    TOKEN_PATH,
    REGISTER_PATH,
    REVOKE_PATH,
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/mcp',
  ])
    scope.options(path, async (_request, reply) => allowAnyOrigin(reply).code(204).send());

  scope.post(REGISTER_PATH, async (request, reply) => {
    const registered = await registerClient(deps, request.body);
    if (!registered.ok) return oauthError(reply, 400, registered.error.code, registered.error.message);
    const client = registered.value;
    return allowAnyOrigin(reply)
      .code(201)
      .header('cache-control', 'no-store')
      .send({
        client_id: client.clientId,
        client_id_issued_at: Math.floor(deps.clock.now().getTime() / 1000),
        client_name: client.name,
        ...(client.clientUri ? { client_uri: client.clientUri } : {}),
        redirect_uris: client.redirectUris,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      });
  });

  scope.post(TOKEN_PATH, async (request, reply) => {
    const body = formBody(request.body);
    if (!body) return oauthError(reply, 400, 'invalid_request', 'Send the parameters form-encoded.');
    const answer = await exchangeToken(deps, body);
    if (!answer.ok) {
      const status = answer.error.error === 'invalid_client' ? 401 : 400;
      return oauthError(reply, status, answer.error.error, answer.error.description);
    }
    return allowAnyOrigin(reply)
      .header('cache-control', 'no-store')
      .header('pragma', 'no-cache')
      .send(answer.value);
  });

  scope.post(REVOKE_PATH, async (request, reply) => {
    const body = formBody(request.body);
    if (!body?.token) return oauthError(reply, 400, 'invalid_request', 'token is required.');
    await revokeToken(deps, body.client_id, body.token);
    return allowAnyOrigin(reply).header('cache-control', 'no-store').code(200).send({});
  });
}

function formBody(body: unknown): TokenRequest | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const fields = body as Record<string, unknown>;
  return Object.values(fields).every((value) => value === undefined || typeof value === 'string')
    ? (fields as TokenRequest)
    : undefined;
}
