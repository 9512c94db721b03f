import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import {
  CHECKOUT_CAPABILITY,
  paymentHandlers,
  SHOPPING_SERVICE,
  SPEC_URLS,
  UCP_PATH_PREFIX,
  UCP_VERSION,
} from '../channels/ucp/index.ts';
import type { Config } from '../config.ts';

/** The business profile: one REST service, the checkout capability and the PSP's card handler. */
function ucpBusinessProfile(config: Config) {
  return {
    ucp: {
      version: UCP_VERSION,
      services: {
        [SHOPPING_SERVICE]: [
          {
            version: UCP_VERSION,
            transport: 'rest',
            spec: SPEC_URLS.overview,
            schema: SPEC_URLS.restSchema,
            endpoint: `${config.baseUrl}${UCP_PATH_PREFIX}`,
          },
        ],
      },
      capabilities: {
        [CHECKOUT_CAPABILITY]: [
          { version: UCP_VERSION, spec: SPEC_URLS.checkoutSpec, schema: SPEC_URLS.checkoutSchema },
        ],
      },
      payment_handlers: paymentHandlers(config),
    },
  };
}

/**
 * `GET /.well-known/ucp`: public and cacheable, as the protocol requires (`public`, max-age of
 * at least 60 s); the document only changes with configuration, so its ETag is computed once.
 */
export function registerUcpDiscovery(app: FastifyInstance, config: Config): void {
  const body = JSON.stringify(ucpBusinessProfile(config));
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
  app.get('/.well-known/ucp', async (request, reply) => {
    reply.header('cache-control', 'public, max-age=3600').header('etag', etag);
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(body);
  });
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*');
}
