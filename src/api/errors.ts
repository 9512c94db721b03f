import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { describePlanLimit, type PlanLimitReached } from '../catalog/index.ts';
import type { ComplianceError } from '../compliance/index.ts';
import { ProblemSchema, problem, sendProblem } from '../http/problem.ts';

/** Every operation can answer these: invalid input, no valid key, too many requests. */
const COMMON_ERRORS = [400, 401, 429] as const;
type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 429 | 503 | 507;

/** The response schemas of an operation: its successes plus problem+json for each error status. */
export function responses<S extends Record<number, TSchema>, E extends ErrorStatus = never>(
  success: S,
  errors: readonly E[] = [],
): S & Record<(typeof COMMON_ERRORS)[number] | E, typeof ProblemSchema> {
  const problems = Object.fromEntries([...COMMON_ERRORS, ...errors].map((status) => [status, ProblemSchema]));
  return { ...success, ...problems } as S & Record<(typeof COMMON_ERRORS)[number] | E, typeof ProblemSchema>;
}

/** The 204 of a DELETE: no body. */
export const NoContent = Type.Null({ description: 'No content.' });

export function sendNotFound(request: FastifyRequest, reply: FastifyReply, resource: string): FastifyReply {
  return sendProblem(reply, problem(request, 404, 'not_found', `No such ${resource} in this workspace.`));
}

/**
 * 403 `plan_limit_reached`: the workspace's plan allows no more of this; the problem names the
 * limit, the plan and the Billing page where an owner or admin chooses a larger one.
 */
export function sendPlanLimit(
  request: FastifyRequest,
  reply: FastifyReply,
  refusal: PlanLimitReached,
): FastifyReply {
  const billing = request.upgradeUrl ?? '';
  const detail = describePlanLimit(refusal, billing);
  return sendProblem(reply, {
    ...problem(request, 403, refusal.code, detail),
    resource: refusal.resource,
    limit: refusal.limit,
    plan: refusal.plan,
    upgrade_url: billing,
  });
}

export function sendComplianceError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: ComplianceError,
  resource: string,
): FastifyReply {
  switch (error.code) {
    case 'not_found':
      return sendNotFound(request, reply, resource);
    case 'reference_not_found':
      return sendProblem(
        reply,
        problem(
          request,
          404,
          'reference_not_found',
          `The ${error.kind} named in the body is not in this workspace.`,
          [{ path: `body/${error.field}`, message: `no such ${error.kind} in this workspace` }],
        ),
      );
    case 'plan_limit_reached':
      return sendPlanLimit(request, reply, error);
    case 'justification_required':
      return sendProblem(
        reply,
        problem(
          request,
          400,
          'justification_required',
          'A control marked not_applicable needs a justification: say why it is excluded.',
          [{ path: 'body/justification', message: 'is required when the status is not_applicable' }],
        ),
      );
    case 'conflict':
      return sendProblem(
        reply,
        problem(request, 409, 'conflict', error.message, [
          { path: `body/${error.field}`, message: error.message },
        ]),
      );
  }
}
