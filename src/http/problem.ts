import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { type ErrorSurface, sendWire, type WireReply } from './errors.ts';
import { jsonPointer, type ValidationIssue } from './validation.ts';

/** RFC 9457 problem details, the error format of every surface that has none of its own. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: '`about:blank`: the status and `code` say what happened.' }),
    title: Type.String({ description: 'The HTTP status phrase.' }),
    status: Type.Integer(),
    code: Type.String({ description: 'A stable, machine-readable error code.' }),
    detail: Type.Optional(Type.String({ description: 'What went wrong, for a person.' })),
    request_id: Type.String({ description: 'Also in the Request-Id response header; quote it to support.' }),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          path: Type.String({ description: 'Where the invalid value is, e.g. `body/title`.' }),
          message: Type.String(),
        }),
        { description: 'One entry per invalid field.' },
      ),
    ),
    resource: Type.Optional(
      Type.String({
        description:
          '`plan_limit_reached` only: what the plan limits (`members`, `api_keys`, `webhook_subscriptions`, ' +
          '`evidence_storage_bytes`).',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({ description: "`plan_limit_reached` only: the plan's limit for `resource`." }),
    ),
    plan: Type.Optional(Type.String({ description: "`plan_limit_reached` only: the workspace's plan now." })),
    upgrade_url: Type.Optional(
      Type.String({
        description: '`plan_limit_reached` only: where an owner or admin chooses a larger plan.',
      }),
    ),
  },
  {
    examples: [
      {
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        code: 'not_found',
        detail: 'No such task.',
        request_id: 'req_3f6c2b1e-8d1a-4c55-9a53-0c6a3e1f2b7d',
      },
    ],
  },
);
export type Problem = Static<typeof ProblemSchema>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export function problem(
  request: Pick<FastifyRequest, 'id'>,
  status: number,
  code: string,
  detail?: string,
  errors?: Problem['errors'],
): Problem {
  return {
    type: 'about:blank',
    title: TITLES[status] ?? 'Error',
    status,
    code,
    ...(detail ? { detail } : {}),
    request_id: request.id,
    ...(errors ? { errors } : {}),
  };
}

/** A request refused before any route read it: by Fastify, or by Node's parser (no request at all). */
export function unreadableRequest(
  request: Pick<FastifyRequest, 'id'>,
  status: number,
  message: string,
): Problem {
  return problem(request, status, 'bad_request', message);
}

export function problemReply(body: Problem): WireReply {
  return { status: body.status, body, headers: { 'content-type': 'application/problem+json' } };
}

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return sendWire(reply, problemReply(body));
}

/**
 * One entry per invalid field, named by its path: an unknown or missing property is reported at
 * the property (`body/bogus`), not at the object that holds it.
 */
export function fieldErrors(
  issues: readonly ValidationIssue[],
  part: string,
): NonNullable<Problem['errors']> {
  const errors: NonNullable<Problem['errors']> = [];
  for (const issue of issues) {
    const path = `${part}${jsonPointer(issue.path)}`;
    // One entry per field: the first reason is the clearest (a union's branches add noise after it).
    if (!errors.some((error) => error.path === path)) errors.push({ path, message: issue.problem });
  }
  return errors;
}

/** 400 `invalid_request`: what Fastify's schema validation answers, for input a handler checks itself. */
export function invalidRequest(request: FastifyRequest, errors: NonNullable<Problem['errors']>): Problem {
  return problem(request, 400, 'invalid_request', 'The request does not match the schema.', errors);
}

/** 400 `invalid_multipart`: a body the multipart parser could not read as a complete, well-formed form. */
export function malformedMultipart(request: FastifyRequest): Problem {
  return problem(
    request,
    400,
    'invalid_multipart',
    'The body is not a complete, well-formed multipart/form-data form.',
  );
}

/** REST's wording of every service error: problem+json, the code as the problem's `code`. */
export const PROBLEM_ERRORS: ErrorSurface = {
  words: {
    invalid_request: ({ part, issues }, { request }) =>
      problemReply(invalidRequest(request, fieldErrors(issues, part))),
    invalid_json: (_, { request, status }) =>
      problemReply(problem(request, status, 'invalid_json', 'The request body is not valid JSON.')),
    invalid_url: (_, { request, status }) =>
      problemReply(problem(request, status, 'invalid_url', 'The URL is not validly percent-encoded.')),
    invalid_multipart: (_, { request }) => problemReply(malformedMultipart(request)),
    unreadable_request: ({ message }, { request, status }) =>
      problemReply(unreadableRequest(request, status, message)),
    not_found: (_, { request, status }) =>
      problemReply(problem(request, status, 'not_found', 'No such resource.')),
    method_not_allowed: ({ allowed }, { request, status }) =>
      problemReply(
        problem(request, status, 'method_not_allowed', `Use ${allowed.join(' or ')} on this path.`),
      ),
    body_too_large: (_, { request, status }) =>
      problemReply(problem(request, status, 'body_too_large', 'The request body is larger than allowed.')),
    file_too_large: (_, { request, status }) =>
      problemReply(problem(request, status, 'file_too_large', 'The uploaded file is larger than allowed.')),
    too_many_parts: (_, { request, status }) =>
      problemReply(
        problem(request, status, 'too_many_parts', 'The multipart body has more parts than allowed.'),
      ),
    uri_too_long: (_, { request, status }) =>
      problemReply(
        problem(request, status, 'uri_too_long', 'A path segment of the URL is longer than allowed.'),
      ),
    unsupported_media_type: (_, { request, status }) =>
      problemReply(problem(request, status, 'unsupported_media_type', 'Send the body as application/json.')),
    rate_limited: ({ counted }, { request, status }) =>
      problemReply(
        problem(
          request,
          status,
          'rate_limited',
          `Too many requests from this ${counted}; retry after Retry-After seconds.`,
        ),
      ),
    internal_error: (_, { request, status }) =>
      problemReply(problem(request, status, 'internal_error', 'Something went wrong on our side.')),
    insufficient_storage: (_, { request, status }) =>
      problemReply(
        problem(
          request,
          status,
          'insufficient_storage',
          'There is no room to store the upload; none of it was kept. Try again later.',
        ),
      ),
    storage_unavailable: (_, { request, status }) =>
      problemReply(
        problem(
          request,
          status,
          'storage_unavailable',
          'Storage is unavailable for now; none of the upload was kept. Retry after Retry-After seconds.',
        ),
      ),
  },
};
