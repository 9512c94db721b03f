import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticateApiKey, type Principal } from '../api-keys/index.ts';
import { type AuditSource, apiKeyActor } from '../audit/index.ts';
import { upgradeUrl } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import { problem, sendProblem } from '../http/problem.ts';
import type { Clock } from '../shared/clock.ts';
import { andThen, type MaybePromise } from '../shared/maybe-promise.ts';
import { PRINCIPAL_HANDLE_HEADER, takePrincipal } from './principal-handles.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key a request authenticated with; set by the auth hook on every non-public route. */
    principal?: Principal;
    /** The workspace's Billing page in the app, named by `plan_limit_reached` problems. */
    readonly upgradeUrl: string | undefined;
  }
}

/**
 * Gives the API's requests their principal (none until the auth hook sets one) and the Billing
 * page of its workspace, worked out when a refusal names it rather than on every request.
 */
export function decorateApiRequests(scope: FastifyInstance, baseUrl: string): void {
  scope.decorateRequest('principal', undefined);
  scope.decorateRequest('upgradeUrl', {
    getter(this: FastifyRequest) {
      return this.principal && upgradeUrl(baseUrl, this.principal.workspaceId);
    },
  });
}

/** The key from `Authorization: Bearer <key>` or `x-api-key: <key>`; undefined when neither is sent. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match?.[1] ?? '';
  }
  const header = request.headers['x-api-key'];
  return Array.isArray(header) ? header[0] : header;
}

const ANSWERS = {
  missing: 'Send an API key as `Authorization: Bearer <key>` or `x-api-key: <key>`.',
  invalid: 'The API key is not valid.',
  revoked: 'The API key has been revoked.',
  expired: 'The API key has expired.',
} as const;

/**
 * Authenticates the request: true once it has its principal, false once it has been answered
 * (401, or 403 for a read-only principal's write); the answer never echoes the key. A key verified
 * a moment ago is answered at once (see authenticateApiKey).
 */
export function authenticate(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
): MaybePromise<boolean> {
  const handle = request.headers[PRINCIPAL_HANDLE_HEADER];
  if (handle !== undefined) {
    const principal = typeof handle === 'string' ? takePrincipal(handle) : undefined;
    if (!principal) return unauthorized(request, reply, 'invalid');
    request.principal = principal;
    return withinScope(request, reply);
  }
  const key = presentedKey(request);
  if (key === undefined || key === '') return unauthorized(request, reply, 'missing');
  return andThen(authenticateApiKey(deps.db, deps.clock, key), (result) => {
    if (!result.ok) return unauthorized(request, reply, result.error);
    request.principal = result.value;
    return true;
  });
}

/**
 * A principal limited to reading (an MCP client given read-only consent) may only GET: true when
 * the request is within its scope, false once it has been refused.
 */
function withinScope(request: FastifyRequest, reply: FastifyReply): boolean {
  if (!request.principal?.readOnly || request.method === 'GET' || request.method === 'HEAD') return true;
  sendProblem(
    reply,
    problem(
      request,
      403,
      'insufficient_scope',
      'This client was given read-only access to the workspace. Ask the workspace owner to connect it again with read and write access.',
    ),
  );
  return false;
}

/** Answers 401: false, the request goes no further. */
function unauthorized(request: FastifyRequest, reply: FastifyReply, reason: keyof typeof ANSWERS): false {
  reply.header('www-authenticate', 'Bearer realm="api"');
  sendProblem(reply, problem(request, 401, `api_key_${reason}`, ANSWERS[reason]));
  return false;
}

/** The workspace a request is confined to. */
export function workspaceOf(request: FastifyRequest): string {
  if (!request.principal) throw new Error(`route ${request.routeOptions.url} ran without authentication`);
  return request.principal.workspaceId;
}

/** Who a request acts as in the audit log: its API key, from the client's address. */
export function auditSourceOf(request: FastifyRequest): AuditSource {
  const principal = request.principal;
  if (!principal) throw new Error(`route ${request.routeOptions.url} ran without authentication`);
  return {
    actor:
      principal.actor ?? apiKeyActor({ id: principal.keyId, name: principal.name, prefix: principal.prefix }),
    ip: request.ip,
    userAgent: request.headers['user-agent'] ?? null,
  };
}
