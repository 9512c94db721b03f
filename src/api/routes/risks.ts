import {
  CreateRiskBody,
  createRisk,
  deleteRisk,
  getRisk,
  listRisks,
  Risk,
  RisksFilter,
  UpdateRiskBody,
  updateRisk,
} from '../../compliance/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, DeletedRecord, IdParams } from '../context.ts';
import { NoContent, responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Risks'];

export function riskRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Risk, CreateRiskBody, UpdateRiskBody });
  catalog.events(Risk, 'risk.created', 'risk.updated');
  catalog.events(DeletedRecord, 'risk.deleted');
  app.get(
    '/risks',
    {
      schema: {
        operationId: 'listRisks',
        summary: 'List risks, most severe first',
        description:
          'By score (likelihood x impact) from highest to lowest; among equal scores the newest first. ' +
          '`q` searches the title and the description; filter by `status`, `severity`, `treatment`, ' +
          '`likelihood`, `impact` (one cell of the risk matrix), `owner_id` or `control_id` (risks ' +
          'that control treats).',
        tags,
        querystring: listQuery(RisksFilter),
        response: responses({ 200: pageOf(Risk) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'risks', request.query, (workspaceId, filter, page) =>
        listRisks(deps, workspaceId, filter, page),
      ),
  );

  app.post(
    '/risks',
    {
      schema: {
        operationId: 'createRisk',
        summary: 'Create a risk',
        description:
          '`score` and `severity` are derived from `likelihood` and `impact`, `residual_score` from ' +
          '`residual_likelihood` and `residual_impact`; they are never sent. `control_ids` links the ' +
          'Annex A controls that treat the risk.',
        tags,
        body: CreateRiskBody,
        response: responses({ 201: Risk }, [404]),
      },
    },
    async (request, reply) => {
      const result = await createRisk(deps, workspaceOf(request), request.body, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'risk');
      return reply.code(201).send(result.value);
    },
  );

  app.get(
    '/risks/:id',
    {
      schema: {
        operationId: 'getRisk',
        summary: 'Get a risk',
        tags,
        params: IdParams,
        response: responses({ 200: Risk }, [404]),
      },
    },
    async (request, reply) =>
      (await getRisk(deps, workspaceOf(request), request.params.id)) ?? sendNotFound(request, reply, 'risk'),
  );

  app.patch(
    '/risks/:id',
    {
      schema: {
        operationId: 'updateRisk',
        summary: 'Change a risk; a new likelihood or impact recomputes its score',
        description: '`control_ids` replaces the linked controls; `null` clears a nullable field.',
        tags,
        params: IdParams,
        body: UpdateRiskBody,
        response: responses({ 200: Risk }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateRisk(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'risk');
    },
  );

  app.delete(
    '/risks/:id',
    {
      schema: {
        operationId: 'deleteRisk',
        summary: 'Delete a risk',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [404]),
      },
    },
    async (request, reply) => {
      const result = await deleteRisk(deps, workspaceOf(request), request.params.id, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'risk');
      return reply.code(204).send(null);
    },
  );
}
