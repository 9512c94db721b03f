import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { invalidRequestPart, jsonPointer, type ValidationIssue } from './validation.ts';

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
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function problem(
  request: FastifyRequest,
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

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return reply.code(body.status).type('application/problem+json').send(body);
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

/** Maps what Fastify itself rejects (validation, body size, media type, JSON syntax) to a stable code. */
export function frameworkProblem(error: FastifyError, request: FastifyRequest): Problem | undefined {
  const invalid = invalidRequestPart(error);
  if (invalid) return invalidRequest(request, fieldErrors(invalid.issues, invalid.part));
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem(request, 413, 'body_too_large', 'The request body is larger than allowed.');
    case 'FST_REQ_FILE_TOO_LARGE':
      return problem(request, 413, 'file_too_large', 'The uploaded file is larger than allowed.');
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return problem(request, 413, 'too_many_parts', 'The multipart body has more parts than allowed.');
    // @fastify/multipart: a field named like a prototype property, a JSON part that is not JSON,
    // a body that stopped before its end.
    case 'FST_PROTO_VIOLATION':
    case 'FST_INVALID_JSON_FIELD_ERROR':
    case 'FST_MP_PREMATURE_CLOSE':
      return malformedMultipart(request);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem(request, 415, 'unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_BAD_URL':
      return problem(request, 400, 'invalid_url', 'The URL is not validly percent-encoded.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return problem(request, 414, 'uri_too_long', 'A path segment of the URL is longer than allowed.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return problem(request, 400, 'invalid_json', 'The request body is not valid JSON.');
    default:
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return problem(request, error.statusCode, 'bad_request', error.message);
      }
      return undefined;
  }
}
