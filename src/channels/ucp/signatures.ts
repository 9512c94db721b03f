import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendWire } from '../../http/errors.ts';
import { rawBodyOf } from '../../http/json-body.ts';
import {
  contentDigest,
  type RequestParts,
  type SignatureFailure,
  signResponse,
  verifyRequest,
} from '../../signing/index.ts';
import type { ChannelContext } from '../context.ts';
import { agentProfileUrl } from './agent-header.ts';
import { errorMessage, errorReply } from './errors.ts';
import { findPlatform } from './platforms.ts';

/** The platform whose signature a request carried and that verified (its profile URL). */
const verifiedPlatforms = new WeakMap<FastifyRequest, string>();

export function verifiedPlatformOf(request: FastifyRequest): string | undefined {
  return verifiedPlatforms.get(request);
}

/**
 * UCP message signatures on the REST binding: a request that carries `Signature-Input` is
 * verified with the keys registered for the platform its `UCP-Agent` names, and refused with UCP's
 * signature error when it does not verify; an unsigned request goes on unless the operator
 * requires signatures. Every JSON response is signed (`@status`, `content-digest`,
 * `content-type`). Signature times are wall-clock: they are compared with other parties' clocks.
 */
export function useMessageSignatures(scope: FastifyInstance, context: ChannelContext): void {
  scope.addHook('preHandler', async (request, reply) => {
    const signed =
      request.headers['signature-input'] !== undefined || request.headers.signature !== undefined;
    if (!signed) {
      if (context.config.ucp.requireSignatures) {
        return sendWire(
          reply,
          refusal({
            code: 'signature_missing',
            message: 'Sign the request (RFC 9421) with a key of your registered UCP profile.',
          }),
        );
      }
      return;
    }
    const profileUrl = agentProfileUrl(headerText(request, 'ucp-agent'));
    const platform =
      profileUrl === undefined ? undefined : await findPlatform(context.checkout.db, profileUrl);
    if (!platform) {
      return sendWire(
        reply,
        refusal({
          code: 'key_not_found',
          message:
            'The UCP-Agent profile is not a platform registered with this business, so its keys are not known here.',
        }),
      );
    }
    const verified = verifyRequest(
      { ...requestParts(request), body: rawBodyOf(request) },
      platform.keys,
      new Date(),
    );
    if (!verified.ok) return sendWire(reply, refusal(verified.error));
    verifiedPlatforms.set(request, platform.profileUrl);
  });

  scope.addHook('onSend', async (_request, reply, payload) => {
    if (typeof payload !== 'string') return payload;
    const key = await context.signingKeys.signingKey();
    const digest = contentDigest(payload);
    const contentType = String(reply.getHeader('content-type') ?? 'application/json; charset=utf-8');
    reply.header('content-digest', digest);
    const headers = signResponse(
      key,
      {
        status: reply.statusCode,
        header: (name) =>
          name === 'content-digest' ? digest : name === 'content-type' ? contentType : undefined,
      },
      new Date(),
    );
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return payload;
  });
}

type Refusal = SignatureFailure | { code: 'signature_missing'; message: string };

/** UCP's signature errors: 400 for a bad digest or algorithm, 401 otherwise. */
function refusal(failure: Refusal) {
  const status = failure.code === 'digest_mismatch' || failure.code === 'algorithm_unsupported' ? 400 : 401;
  return errorReply(status, [errorMessage(failure.code, failure.message, { severity: 'unrecoverable' })], {
    ...(status === 401 ? { 'www-authenticate': 'Signature' } : {}),
  });
}

function headerText(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function requestParts(request: FastifyRequest): RequestParts {
  const [path = '', query] = request.url.split(/\?(.*)/s);
  return {
    method: request.method,
    authority: request.host,
    path,
    query: query ?? '',
    header: (name) => headerText(request, name)?.trim(),
  };
}
