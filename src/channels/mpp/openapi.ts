import type { FastifyInstance } from 'fastify';
import { describeEntitlements, PLANS } from '../../catalog/index.ts';
import type { Config } from '../../config.ts';
import { MPP_OPERATIONS, MPP_PREFIX, type MppOperation } from './operations.ts';
import { PaymentProblem, PurchaseRequestBody, PurchaseResult, ServiceProblem } from './schemas.ts';

export const MPP_DOCUMENT_VERSION = '2026-10-09';

/** The very schema objects the routes validate and serialize with. */
const COMPONENT_SCHEMAS = {
  PurchaseRequest: PurchaseRequestBody,
  PurchaseResult,
  PaymentProblem,
  Problem: ServiceProblem,
};

const schemaRef = (name: keyof typeof COMPONENT_SCHEMAS) => ({ $ref: `#/components/schemas/${name}` });

/**
 * MPP discovery (draft-payment-discovery): an OpenAPI 3.1 document with one operation per item,
 * each priced in `x-payment-info`. Advisory only; the 402 challenge is authoritative.
 */
export function mppOpenApiDocument(config: Config): object {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Svc compliance workspaces',
      version: MPP_DOCUMENT_VERSION,
      description:
        'Buy one prepaid, non-renewing term of a compliance-workspace plan for a person. POST the ' +
        'purchase request to get a 402 challenge (WWW-Authenticate: Payment, method "psp"), mint a ' +
        "shared payment token for the challenge amount scoped to the challenge's networkId, then " +
        'repeat the same request with Authorization: Payment <credential>.',
    },
    servers: [{ url: config.baseUrl }],
    'x-service-info': { categories: ['compliance'], docs: { homepage: config.siteUrl } },
    paths: Object.fromEntries(
      MPP_OPERATIONS.map((operation) => [
        `${MPP_PREFIX}${operation.path}`,
        { post: paidOperation(operation) },
      ]),
    ),
    components: { schemas: COMPONENT_SCHEMAS },
  };
}

function paidOperation({ item, operationId }: MppOperation): object {
  return {
    operationId,
    summary: `Buy: ${item.description}`,
    description: `The ${PLANS[item.price.plan].name} plan includes ${describeEntitlements(item.price.plan)}.`,
    'x-payment-info': {
      offers: [
        {
          intent: 'charge',
          method: 'psp',
          amount: String(item.price.amount),
          currency: item.price.currency,
          description: item.description,
        },
      ],
    },
    requestBody: {
      required: true,
      content: { 'application/json': { schema: schemaRef('PurchaseRequest') } },
    },
    responses: {
      200: {
        description: 'Paid: the workspace exists and its owner invitation is on its way.',
        headers: {
          'Payment-Receipt': {
            description: 'base64url JSON receipt; `reference` is the payment intent id.',
            schema: { type: 'string' },
          },
        },
        content: { 'application/json': { schema: schemaRef('PurchaseResult') } },
      },
      400: problemResponse(
        'Problem type https://paymentauth.org/problems/bad-request: the body is invalid (for example a ' +
          'missing or invalid buyer.email) or a Payment credential came in two fields.',
      ),
      402: {
        description: 'Payment Required: a fresh challenge, with the reason a credential was not accepted.',
        headers: {
          'WWW-Authenticate': {
            description: 'Payment id, realm, method="psp", intent="charge", request, description, expires.',
            schema: { type: 'string' },
          },
        },
        content: { 'application/problem+json': { schema: schemaRef('PaymentProblem') } },
      },
      413: problemResponse('The body is larger than allowed (code `body_too_large`).'),
      415: problemResponse('The body is not `application/json` (code `unsupported_media_type`).'),
      429: {
        ...problemResponse('Too many requests from this address (code `rate_limited`): wait Retry-After.'),
        headers: { 'Retry-After': { schema: { type: 'integer' } } },
      },
      500: problemResponse(
        'Problem type https://paymentauth.org/problems/internal-payment-error: something failed on our side; ' +
          'repeating the identical request is safe (a credential is charged at most once).',
      ),
      503: {
        ...problemResponse(
          'Payment taken but setup unfinished: repeat the identical request after Retry-After; no second charge.',
        ),
        headers: { 'Retry-After': { schema: { type: 'integer' } } },
      },
    },
  };
}

function problemResponse(description: string) {
  return { description, content: { 'application/problem+json': { schema: schemaRef('Problem') } } };
}

/** `GET /openapi.json`, built once; the site links or proxies `{SITE_URL}/openapi.json` here. */
export function registerMppOpenApi(app: FastifyInstance, config: Config): void {
  const body = JSON.stringify(mppOpenApiDocument(config));
  app.get('/openapi.json', async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .type('application/json')
      .send(body),
  );
}
