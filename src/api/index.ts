import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { PLAN_ENTITLEMENTS, type PlanId } from '../catalog/index.ts';
import { gate } from '../http/gate.ts';
import { PROBLEM_ERRORS, ProblemSchema } from '../http/problem.ts';
import {
  type RateLimiter,
  type RateLimitVerdict,
  sendRateLimited,
  setRateLimitHeaders,
} from '../http/rate-limit.ts';
import { routeHooks } from '../http/route-hooks.ts';
import { andThen, type MaybePromise } from '../shared/maybe-promise.ts';
import { authenticate, decorateApiRequests } from './auth.ts';
import { SchemaCatalog } from './catalog.ts';
import type { ApiDeps, ApiScope } from './context.ts';
import { enableListExports } from './lists.ts';
import { buildOpenApiDocument, collectRoutes } from './openapi.ts';
import { auditEventRoutes } from './routes/audit-events.ts';
import { controlRoutes } from './routes/controls.ts';
import { evidenceRoutes } from './routes/evidence.ts';
import { evidencePackageRoutes } from './routes/evidence-packages.ts';
import { hookRoutes } from './routes/hooks.ts';
import { meRoutes } from './routes/me.ts';
import { peopleRoutes } from './routes/people.ts';
import { policyRoutes } from './routes/policies.ts';
import { reportRoutes } from './routes/reports.ts';
import { riskRoutes } from './routes/risks.ts';
import { taskRoutes } from './routes/tasks.ts';
import { vendorRoutes } from './routes/vendors.ts';

export type { ApiDeps } from './context.ts';
export { registerApiDocsPage } from './docs-page.ts';
export type { DocumentedRoute } from './openapi.ts';
export { PRINCIPAL_HANDLE_HEADER, principalHandle } from './principal-handles.ts';

export const API_PREFIX = '/api/v1';

/** The document is sent as the JSON text it was built into once; clients see an object. */
const OpenApiDocumentBody = Type.Unsafe<string>({
  type: 'object',
  description: 'An OpenAPI 3.1.0 document.',
});

/** Each module registers its routes and names its schemas and events for the OpenAPI document. */
const MODULES: readonly ((app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog) => void)[] = [
  meRoutes,
  controlRoutes,
  taskRoutes,
  evidenceRoutes,
  evidencePackageRoutes,
  riskRoutes,
  vendorRoutes,
  peopleRoutes,
  policyRoutes,
  reportRoutes,
  hookRoutes,
  auditEventRoutes,
];

/** The workspace REST API: every route but the document itself needs an API key of one workspace. */
export async function apiV1(scope: FastifyInstance, deps: ApiDeps): Promise<void> {
  const routes = collectRoutes(scope, deps.routeTable);
  decorateApiRequests(scope, deps.config.baseUrl);
  applyLimitsAndAuthentication(scope, deps);
  enableListExports(scope, { pageSize: deps.config.api.exportPageSize, clock: deps.clock });

  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const catalog = new SchemaCatalog();
  catalog.name({ Problem: ProblemSchema });
  for (const register of MODULES) register(app, deps, catalog);

  let document: string | undefined;
  app.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI 3.1 document (no API key needed)',
        tags: ['Meta'],
        response: { 200: OpenApiDocumentBody },
      },
    },
    async (_request, reply) => {
      document ??= JSON.stringify(
        buildOpenApiDocument(routes, {
          info: {
            title: 'Compliance workspace API',
            version: '1',
            description:
              "Programmatic access to one workspace's ISO 27001 readiness data. Every request is confined " +
              'to the organization (workspace) of its API key; ids of other organizations answer 404. ' +
              'Lists take `limit` (default 50, at most 200) and an opaque `cursor`, and answer ' +
              '`{ "data": [...], "next_cursor": string|null }`; asked with `Accept: text/csv` a list answers every ' +
              'row its filters match as a CSV file instead (`limit` and `cursor` are ignored). Errors are application/problem+json with a ' +
              'stable `code`. Interactive reference: /api/v1/docs.\n\n' +
              '**MCP**: the same operations are tools of the Model Context Protocol server at `/mcp` ' +
              '(Streamable HTTP, stateless; one tool per `operationId`, with these schemas). Clients connect ' +
              'with OAuth 2.1 (discovery: `/.well-known/oauth-protected-resource/mcp`; the owner consents in ' +
              'the app) or with an API key as `Authorization: Bearer svc_live_...`.',
          },
          serverUrl: deps.config.baseUrl,
          components: catalog.components,
          bodyProblem: ProblemSchema,
          securitySchemes: {
            bearerAuth: {
              type: 'http',
              scheme: 'bearer',
              description: '`Authorization: Bearer svc_live_...`',
            },
            apiKeyHeader: {
              type: 'apiKey',
              in: 'header',
              name: 'x-api-key',
              description: '`x-api-key: svc_live_...`',
            },
          },
          webhooks: catalog.webhooks(),
        }),
      );
      return reply.type('application/json').header('cache-control', 'public, max-age=300').send(document);
    },
  );
}

/**
 * Per client IP first (before anything else, so floods cost nothing), then the key, then per key.
 * Limits answer 429 with Retry-After and the RateLimit-* headers of the limit that was reached;
 * other answers carry the per-key state in the RateLimit-* headers.
 */
function applyLimitsAndAuthentication(scope: FastifyInstance, deps: ApiDeps): void {
  const windowMs = deps.config.rateLimit.windowMs;
  const perIp: RateLimiter = deps.rateLimiters.create('api-ip', { max: deps.config.api.perIpMax, windowMs });
  const perKey: RateLimiter = deps.rateLimiters.create('api-key', {
    max: deps.config.api.perKeyMax,
    windowMs,
  });
  // The plan's rate per minute, scaled to the window; API_RATE_LIMIT_PER_KEY caps every plan.
  const perKeyMax = (plan: PlanId | undefined) =>
    Math.min(
      deps.config.api.perKeyMax,
      Math.max(1, Math.ceil((PLAN_ENTITLEMENTS[plan ?? 'free'].apiRequestsPerMinute * windowMs) / 60_000)),
    );

  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    verdict: RateLimitVerdict,
    counted: 'address' | 'API key',
  ) => {
    setRateLimitHeaders(reply, verdict);
    sendRateLimited(request, reply, PROBLEM_ERRORS, verdict, counted);
    return false;
  };
  const admitByAddress = (request: FastifyRequest, reply: FastifyReply): MaybePromise<boolean> =>
    andThen(perIp.hit(request.ip), (byAddress) =>
      byAddress.allowed ? true : refuse(request, reply, byAddress, 'address'),
    );
  const admitWithKey = (request: FastifyRequest, reply: FastifyReply): MaybePromise<boolean> =>
    andThen(admitByAddress(request, reply), (byAddress) => {
      if (!byAddress) return false;
      return andThen(authenticate(deps, request, reply), (authenticated) => {
        if (!authenticated) return false;
        const { keyId, plan } = request.principal ?? {};
        return andThen(perKey.hit(`${keyId}`, perKeyMax(plan)), (byKey) => {
          if (!byKey.allowed) return refuse(request, reply, byKey, 'API key');
          setRateLimitHeaders(reply, byKey);
          return true;
        });
      });
    });
  // Chosen once per route, first of its hooks: a hook of the scope built every request's route
  // options to learn whether its route is public.
  const publicGate = gate(admitByAddress);
  const keyGate = gate(admitWithKey);
  scope.addHook('onRoute', (route) => {
    route.onRequest = [route.config?.public ? publicGate : keyGate, ...routeHooks(route.onRequest)];
  });
}
