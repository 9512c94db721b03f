import {
  Control,
  ControlsFilter,
  getControl,
  listControls,
  Readiness,
  readiness,
  UpdateControlBody,
  updateControl,
} from '../../compliance/index.ts';
import { workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Controls'];

export function controlRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Control, UpdateControlBody, Readiness });
  catalog.events(Control, 'control.updated');
  app.get(
    '/controls',
    {
      schema: {
        operationId: 'listControls',
        summary: 'List the Annex A controls with their status and owner',
        description: 'In the order of Annex A. `q` searches the reference and the title.',
        tags,
        querystring: listQuery(ControlsFilter),
        response: responses({ 200: pageOf(Control) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'controls', request.query, (workspaceId, filter, page) =>
        listControls(deps, workspaceId, filter, page),
      ),
  );

  app.get(
    '/controls/:id',
    {
      schema: {
        operationId: 'getControl',
        summary: 'Get a control',
        tags,
        params: IdParams,
        response: responses({ 200: Control }, [404]),
      },
    },
    async (request, reply) =>
      (await getControl(deps, workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'control'),
  );

  app.patch(
    '/controls/:id',
    {
      schema: {
        operationId: 'updateControl',
        summary: "Change a control's status, owner or notes",
        tags,
        params: IdParams,
        body: UpdateControlBody,
        response: responses({ 200: Control }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateControl(deps, workspaceOf(request), request.params.id, request.body);
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'control');
    },
  );

  app.get(
    '/readiness',
    {
      schema: {
        operationId: 'getReadiness',
        summary: 'ISO 27001 readiness: controls per status and theme, percentage implemented',
        tags: ['Readiness'],
        response: responses({ 200: Readiness }),
      },
    },
    (request) => readiness(deps, workspaceOf(request)),
  );
}
