import {
  getPolicy,
  listPolicies,
  PoliciesFilter,
  Policy,
  UpdatePolicyBody,
  UpsertPolicyBody,
  updatePolicy,
  upsertPolicy,
} from '../../compliance/index.ts';
import { workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Policies'];

export function policyRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Policy, UpsertPolicyBody, UpdatePolicyBody });
  catalog.events(Policy, 'policy.created', 'policy.updated');
  app.get(
    '/policies',
    {
      schema: {
        operationId: 'listPolicies',
        summary: 'List policies',
        description: 'Oldest first. `q` searches the key and the title; filter by `status`.',
        tags,
        querystring: listQuery(PoliciesFilter),
        response: responses({ 200: pageOf(Policy) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'policies', request.query, (workspaceId, filter, page) =>
        listPolicies(deps, workspaceId, filter, page),
      ),
  );

  app.post(
    '/policies',
    {
      schema: {
        operationId: 'upsertPolicy',
        summary: 'Create a policy, or update the one with this key (idempotent)',
        description:
          '201 when the key is new; 200 with the policy otherwise, updated when the body differs ' +
          '(fields not sent stay). Sending the same body twice changes nothing.',
        tags,
        body: UpsertPolicyBody,
        response: responses({ 200: Policy, 201: Policy }),
      },
    },
    async (request, reply) => {
      const { policy, outcome } = await upsertPolicy(deps, workspaceOf(request), request.body);
      return reply.code(outcome === 'created' ? 201 : 200).send(policy);
    },
  );

  app.get(
    '/policies/:id',
    {
      schema: {
        operationId: 'getPolicy',
        summary: 'Get a policy',
        tags,
        params: IdParams,
        response: responses({ 200: Policy }, [404]),
      },
    },
    async (request, reply) =>
      (await getPolicy(deps, workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'policy'),
  );

  app.patch(
    '/policies/:id',
    {
      schema: {
        operationId: 'updatePolicy',
        summary: 'Change a policy; archive it with `status: archived`',
        description: 'A new `key` must not be taken by another policy of the workspace (409).',
        tags,
        params: IdParams,
        body: UpdatePolicyBody,
        response: responses({ 200: Policy }, [404, 409]),
      },
    },
    async (request, reply) => {
      const result = await updatePolicy(deps, workspaceOf(request), request.params.id, request.body);
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'policy');
    },
  );
}
