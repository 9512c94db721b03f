import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { systemClock } from '../../shared/clock.ts';
import { CheckoutSessions, HOSTED_PAGE_PATH, registerCheckoutSessionRoutes } from './checkout-sessions.ts';
import { ApiError, apiError, invalidRequest } from './errors.ts';
import {
  DEFAULT_EVENT_RETRY_DELAYS_MS,
  EVENTS_CONTROL_PATH,
  registerEventRoutes,
  SandboxEvents,
  type WebhookEndpoint,
} from './events.ts';
import { FAULTS_PATH, registerFaultRoutes, SandboxFaults } from './faults.ts';
import { parseForm, parseQuery } from './form.ts';
import { registerGrantedTokenRoutes } from './granted-tokens.ts';
import { registerHostedPageRoutes } from './hosted-page.ts';
import { fingerprintParams, IdempotencyStore } from './idempotency.ts';
import { randomId } from './ids.ts';
import { PAYMENT_INTENTS_PATH, registerPaymentIntentRoutes } from './payment-intents.ts';
import { SandboxState } from './state.ts';

export const DEFAULT_SECRET_KEY = 'sk_test_sandbox';
export const DEFAULT_STRIPE_VERSION = '2026-07-29.preview';
const BODY_LIMIT_BYTES = 64 * 1024;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export interface PspSandboxOptions {
  readonly secretKey?: string | undefined;
  readonly now?: (() => Date) | undefined;
  readonly logger?: boolean | undefined;
  /** The SQLite file that keeps tokens, charges, sessions, events and idempotency records; in memory when absent. */
  readonly dataFile?: string | undefined;
  /** Where events are sent, signed with its secret; without one, events are only recorded. */
  readonly webhookEndpoint?: WebhookEndpoint | undefined;
  /** The wait after each failed delivery attempt (default 1 s, 2 s, 4 s … 60 s: ten attempts). */
  readonly eventRetryDelaysMs?: readonly number[] | undefined;
}

export interface PspSandbox {
  readonly app: FastifyInstance;
  readonly state: SandboxState;
  readonly faults: SandboxFaults;
  readonly events: SandboxEvents;
}

/**
 * A local emulator of the Stripe REST subset the service uses: charging shared payment tokens
 * (SPTs), and Checkout Sessions with their hosted page and signed events.
 */
export function buildPspSandbox(options: PspSandboxOptions = {}): PspSandbox {
  const endpoint = checkedEndpoint(options.webhookEndpoint);
  const now = options.now ?? systemClock.now;
  const state = new SandboxState(now, options.dataFile);
  const faults = new SandboxFaults();
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => randomId('req'),
    routerOptions: { querystringParser: parseQuery },
  });
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    async (_request: FastifyRequest, body: string | Buffer) => parseForm(String(body)),
  );
  installRequestPipeline(app, {
    secretKey: options.secretKey ?? DEFAULT_SECRET_KEY,
    faults,
    idempotency: new IdempotencyStore(state),
  });
  const events = new SandboxEvents(state, {
    endpoint,
    retryDelaysMs: options.eventRetryDelaysMs ?? DEFAULT_EVENT_RETRY_DELAYS_MS,
    apiVersion: DEFAULT_STRIPE_VERSION,
    reportError: (error) => app.log.error({ err: error }, 'PSP sandbox event delivery failed'),
  });
  const checkoutSessions = new CheckoutSessions(state, events);
  events.addSweep(() => checkoutSessions.expireDue());
  app.addHook('onClose', async () => {
    await events.close();
    state.close();
  });
  registerGrantedTokenRoutes(app, state);
  registerPaymentIntentRoutes(app, state);
  registerCheckoutSessionRoutes(app, checkoutSessions);
  registerHostedPageRoutes(app, checkoutSessions);
  registerFaultRoutes(app, faults);
  registerEventRoutes(app, events);
  // Which deployment this sandbox serves (the one its events go to): the conformance doctor buys
  // unasked only with tokens of the sandbox of the deployment it checks.
  app.get('/_sandbox', async () => ({ object: 'sandbox', webhook_endpoint_url: endpoint?.url ?? null }));
  events.start();
  return { app, state, faults, events };
}

function checkedEndpoint(endpoint: WebhookEndpoint | undefined): WebhookEndpoint | undefined {
  if (endpoint === undefined) return undefined;
  const url = URL.canParse(endpoint.url) ? new URL(endpoint.url) : undefined;
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new Error(`The webhook endpoint must be an http(s) URL, got '${endpoint.url}'`);
  }
  if (endpoint.secret === '') throw new Error('The webhook endpoint needs a signing secret');
  return endpoint;
}

interface PipelineDependencies {
  readonly secretKey: string;
  readonly faults: SandboxFaults;
  readonly idempotency: IdempotencyStore;
}

/**
 * Order per request: headers + auth + injected failure (onRequest) → idempotency (preHandler, after
 * the body is parsed) → route → latency, idempotency bookkeeping, dropped response (onSend).
 * The idempotency key stays reserved through the latency delay, so a concurrent duplicate sees it in use.
 */
function installRequestPipeline(
  app: FastifyInstance,
  { secretKey, faults, idempotency }: PipelineDependencies,
): void {
  const reservedKeys = new WeakMap<FastifyRequest, string>();

  app.addHook('onRequest', async (request, reply) => {
    stampResponseHeaders(request, reply);
    // A buyer's browser on the hosted page has no secret key, and its page is never made to fail.
    if (isHostedPage(request)) return;
    authenticate(request.headers.authorization, secretKey);
    if (isSandboxControl(request)) return;
    const failureStatus = faults.takeFailure(pathOf(request));
    if (failureStatus !== undefined)
      throw apiError(failureStatus, 'Injected failure: the PSP sandbox was told to fail this request.');
  });

  app.addHook('preHandler', async (request, reply) => {
    const key = idempotencyKeyOf(request);
    if (key === undefined || request.method !== 'POST' || request.is404 || isExempt(request)) return;
    const decision = idempotency.begin(key, {
      method: request.method,
      path: pathOf(request),
      fingerprint: fingerprintParams(request.body),
    });
    if (decision.kind === 'reject') throw decision.error;
    if (decision.kind === 'replay') {
      const { status, payload } = decision.response;
      return reply.code(status).header('Idempotent-Replayed', 'true').type(JSON_CONTENT_TYPE).send(payload);
    }
    reservedKeys.set(request, key);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!isExempt(request)) await faults.delay();
    const key = reservedKeys.get(request);
    if (key !== undefined) {
      reservedKeys.delete(request);
      // A 400 had no effect, so Stripe does not store it and the key may be retried with fixed params.
      if (reply.statusCode === 400 || typeof payload !== 'string') idempotency.release(key);
      else idempotency.complete(key, { status: reply.statusCode, payload });
    }
    if (isPaymentIntentCreation(request) && faults.takeDroppedResponse()) request.raw.socket.destroy();
    return payload;
  });

  app.setNotFoundHandler(async (request) => {
    throw invalidRequest(`Unrecognized request URL (${request.method}: ${pathOf(request)}).`, {
      status: 404,
    });
  });

  app.setErrorHandler(async (error, request, reply) => {
    const { status, body } = toApiError(error);
    if (status >= 500 && !(error instanceof ApiError)) request.log.error(error);
    return reply.code(status).type(JSON_CONTENT_TYPE).send({ error: body });
  });
}

function stampResponseHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('Request-Id', request.id);
  reply.header('Stripe-Version', singleHeader(request.headers['stripe-version']) ?? DEFAULT_STRIPE_VERSION);
  const idempotencyKey = idempotencyKeyOf(request);
  if (idempotencyKey !== undefined) reply.header('Idempotency-Key', idempotencyKey);
}

function authenticate(authorization: string | undefined, secretKey: string): void {
  const presentedKey = apiKeyFrom(authorization);
  if (presentedKey === undefined) {
    throw invalidRequest(
      'You did not provide an API key. You need to provide your API key in the Authorization header, ' +
        "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
      { status: 401 },
    );
  }
  if (presentedKey !== secretKey) {
    throw invalidRequest(`Invalid API Key provided: ${redact(presentedKey)}`, { status: 401 });
  }
}

/** Bearer auth, or Basic auth with the key as the username (as curl -u sk_test_…: sends it). */
function apiKeyFrom(authorization: string | undefined): string | undefined {
  const match = /^(\w+) +(\S+)\s*$/.exec(authorization ?? '');
  if (!match) return undefined;
  const [, scheme = '', credentials = ''] = match;
  switch (scheme.toLowerCase()) {
    case 'bearer':
      return credentials;
    case 'basic':
      return Buffer.from(credentials, 'base64').toString('utf8').split(':')[0] || undefined;
    default:
      return undefined;
  }
}

function redact(key: string): string {
  if (key.length <= 12) return '*'.repeat(key.length);
  return `${key.slice(0, 8)}${'*'.repeat(key.length - 12)}${key.slice(-4)}`;
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const status = statusCodeOf(error);
  if (status !== undefined && status >= 400 && status < 500) {
    return invalidRequest(error instanceof Error ? error.message : 'Invalid request.', { status });
  }
  return apiError(500, 'An unexpected error occurred in the PSP sandbox.');
}

function statusCodeOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('statusCode' in error)) return undefined;
  return typeof error.statusCode === 'number' ? error.statusCode : undefined;
}

function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  return singleHeader(request.headers['idempotency-key']) || undefined;
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?', 1)[0] ?? request.url;
}

function isSandboxControl(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  return route === FAULTS_PATH || route?.startsWith(EVENTS_CONTROL_PATH) === true;
}

function isHostedPage(request: FastifyRequest): boolean {
  return pathOf(request).startsWith(`${HOSTED_PAGE_PATH}/`);
}

/** Outside the emulated API: no injected faults, no idempotency layer. */
function isExempt(request: FastifyRequest): boolean {
  return isSandboxControl(request) || isHostedPage(request);
}

function isPaymentIntentCreation(request: FastifyRequest): boolean {
  return request.method === 'POST' && request.routeOptions.url === PAYMENT_INTENTS_PATH;
}
