import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

/** RFC 9457 problem details, the error format of every surface that has none of its own. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  request_id: string;
  errors?: { path: string; message: string }[];
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
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

/** Maps what Fastify itself rejects (validation, body size, media type, JSON syntax) to a stable code. */
export function frameworkProblem(error: FastifyError, request: FastifyRequest): Problem | undefined {
  if (error.validation) {
    const errors = error.validation.map((issue) => ({
      path: `${error.validationContext ?? 'body'}${issue.instancePath || ''}`,
      message: issue.message ?? 'is invalid',
    }));
    return problem(request, 400, 'invalid_request', 'The request does not match the schema.', errors);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem(request, 413, 'body_too_large', 'The request body is larger than allowed.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem(request, 415, 'unsupported_media_type', 'Send the body as application/json.');
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
