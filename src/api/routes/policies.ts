import { Type } from 'typebox';
import {
  approvePolicy,
  getPolicy,
  getPolicyVersion,
  listPolicies,
  listPolicyVersions,
  PoliciesFilter,
  Policy,
  PolicyAcknowledgement,
  PolicyAcknowledgements,
  PolicyVersionDetail,
  PolicyVersionSummary,
  policyAcknowledgements,
  UpdatePolicyBody,
  UpsertPolicyBody,
  updatePolicy,
  upsertPolicy,
} from '../../compliance/index.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import { listMembers } from '../../workspace/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Policies'];

const VersionParams = Type.Object({
  ...IdParams.properties,
  number: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The version number.' }),
});

export function policyRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({
    Policy,
    UpsertPolicyBody,
    UpdatePolicyBody,
    PolicyVersionSummary,
    PolicyVersionDetail,
    PolicyAcknowledgement,
    PolicyAcknowledgements,
  });
  catalog.events(Policy, 'policy.created', 'policy.updated', 'policy.approved');
  catalog.events(PolicyAcknowledgement, 'policy.acknowledged');
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
      const { policy, outcome } = await upsertPolicy(
        deps,
        workspaceOf(request),
        request.body,
        auditSourceOf(request),
      );
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
      const result = await updatePolicy(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'policy');
    },
  );

  app.post(
    '/policies/:id/approve',
    {
      schema: {
        operationId: 'approvePolicy',
        summary: 'Approve the current draft as the next numbered version',
        description:
          'The draft (the text as last changed) becomes version N for good, approved by this API key ' +
          'now; the policy gets `version` "N", `status` approved and `approved_at` today. With no draft ' +
          '(nothing changed since the last approval): 409 `nothing_to_approve`.',
        tags,
        params: IdParams,
        response: responses({ 200: Policy }, [404, 409]),
      },
    },
    async (request, reply) => {
      const result = await approvePolicy(
        deps,
        workspaceOf(request),
        request.params.id,
        { kind: 'api_key' },
        auditSourceOf(request),
      );
      if (result.ok) return result.value;
      switch (result.error.code) {
        case 'nothing_to_approve':
          return sendProblem(
            reply,
            problem(
              request,
              409,
              'nothing_to_approve',
              'The approved version is the current text: there is no draft.',
            ),
          );
        case 'not_allowed':
          return sendProblem(
            reply,
            problem(request, 403, 'not_allowed', 'Only owners and admins approve policies.'),
          );
        default:
          return sendComplianceError(request, reply, result.error, 'policy');
      }
    },
  );

  app.get(
    '/policies/:id/versions',
    {
      schema: {
        operationId: 'listPolicyVersions',
        summary: "List a policy's versions, oldest first",
        description:
          'The approved versions, which never change, and the current draft if there is one. No text: get a version for it.',
        tags,
        params: IdParams,
        querystring: listQuery(Type.Object({})),
        response: responses({ 200: pageOf(PolicyVersionSummary) }, [404]),
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!(await getPolicy(deps, workspaceOf(request), id))) return sendNotFound(request, reply, 'policy');
      return answerList(
        request,
        reply,
        `policy-versions:${id}`,
        request.query,
        async (workspaceId, _filter, page) =>
          (await listPolicyVersions(deps, workspaceId, id, page)) ?? { items: [], next: null },
      );
    },
  );

  app.get(
    '/policies/:id/versions/:number',
    {
      schema: {
        operationId: 'getPolicyVersion',
        summary: 'Get a version of a policy with its text',
        tags,
        params: VersionParams,
        response: responses({ 200: PolicyVersionDetail }, [404]),
      },
    },
    async (request, reply) =>
      (await getPolicyVersion(deps, workspaceOf(request), request.params.id, request.params.number)) ??
      sendNotFound(request, reply, 'policy version'),
  );

  app.get(
    '/policies/:id/acknowledgements',
    {
      schema: {
        operationId: 'listPolicyAcknowledgements',
        summary: 'Who has acknowledged the approved version of a policy, and who has not',
        description:
          'Members acknowledge the latest approved version in the app (API keys cannot: acknowledgements ' +
          "are people's). `pending_user_ids` are the workspace's members who have not yet.",
        tags,
        params: IdParams,
        response: responses({ 200: PolicyAcknowledgements }, [404]),
      },
    },
    async (request, reply) => {
      const workspaceId = workspaceOf(request);
      const members = await listMembers(deps.db, workspaceId);
      const memberUserIds = members.flatMap((member) => (member.userId ? [member.userId] : []));
      return (
        (await policyAcknowledgements(deps, workspaceId, request.params.id, memberUserIds)) ??
        sendNotFound(request, reply, 'policy')
      );
    },
  );
}
