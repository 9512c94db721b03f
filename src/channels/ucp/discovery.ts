import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { KeyStore } from '../../signing/index.ts';
import { ORDER_CAPABILITY } from './orders.ts';
import {
  CHECKOUT_CAPABILITY,
  paymentHandlers,
  SHOPPING_SERVICE,
  specUrls,
  UCP_PATH_PREFIX,
  UCP_VERSION,
  UCP_VERSIONS,
  type UcpVersion,
} from './profile.ts';

const PROFILE_PATH = '/.well-known/ucp';

/** Where the complete profile of an older release is served (a leaf: no `supported_versions`). */
const leafProfilePath = (version: UcpVersion) => `${PROFILE_PATH}/${version}`;

/** The business profile of one release: one REST service, the checkout capability and the PSP's card handler. */
function ucpBusinessProfile(config: Config, version: UcpVersion) {
  const urls = specUrls(version);
  const older = UCP_VERSIONS.filter((other) => other !== UCP_VERSION);
  return {
    ucp: {
      version,
      ...(version === UCP_VERSION
        ? {
            supported_versions: Object.fromEntries(
              older.map((other) => [other, `${config.baseUrl}${leafProfilePath(other)}`]),
            ),
          }
        : {}),
      services: {
        [SHOPPING_SERVICE]: [
          {
            version,
            transport: 'rest',
            spec: urls.overview,
            schema: urls.restSchema,
            endpoint: `${config.baseUrl}${UCP_PATH_PREFIX}`,
          },
        ],
      },
      capabilities: {
        [CHECKOUT_CAPABILITY]: [{ version, spec: urls.checkoutSpec, schema: urls.checkoutSchema }],
        // GET /orders/{id} and order webhooks are built on the current release's order schema.
        ...(version === UCP_VERSION
          ? {
              [ORDER_CAPABILITY]: [
                {
                  version,
                  spec: `https://ucp.dev/${version}/specification/shopping/order`,
                  schema: `https://ucp.dev/${version}/schemas/shopping/order.json`,
                },
              ],
            }
          : {}),
      },
      payment_handlers: paymentHandlers(config, version),
    },
  };
}

/**
 * `GET /.well-known/ucp` (and the leaf profile of each older release it lists under
 * `supported_versions`): public and cacheable, as the protocol requires (`public`, max-age of at
 * least 60 s). The `keys` member is the JWK Set of the business's signing keys: the one that signs
 * and, after a rotation, the ones in their grace; a verifier that meets an unknown `kid` reads the
 * profile again, so a new key is found at once.
 */
export function registerUcpDiscovery(app: FastifyInstance, config: Config, signingKeys: KeyStore): void {
  for (const version of UCP_VERSIONS) {
    const path = version === UCP_VERSION ? PROFILE_PATH : leafProfilePath(version);
    const profile = ucpBusinessProfile(config, version);
    app.get(path, async (request, reply) =>
      cacheableJson(request, reply, JSON.stringify({ ...profile, keys: await signingKeys.publishedKeys() })),
    );
  }
}

function cacheableJson(request: FastifyRequest, reply: FastifyReply, body: string) {
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
  reply.header('cache-control', 'public, max-age=3600').header('etag', etag);
  if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(body);
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*');
}
