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
import { readsVersion } from '../../db/changes.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList, asksForCsv } from '../lists.ts';
import { PageCache, sendJson } from '../page-cache.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Controls'];

export function controlRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Control, UpdateControlBody, Readiness });
  catalog.events(Control, 'control.updated');
  // Kept under the database's version of what may be kept (src/db/changes.ts), which costs no
  // query; while that is unknown (PostgreSQL's notifications down), nothing is kept.
  const pages = new PageCache();
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
    (request, reply) => {
      // The version first: the page read after it is at least as new, so it may be kept under it.
      const workspaceId = workspaceOf(request);
      const version = readsVersion(deps.db);
      const key = `${workspaceId} ${request.url}`;
      const kept = version === undefined || asksForCsv(request) ? undefined : pages.get(key, version);
      if (kept !== undefined) {
        // Sent at once, without a promise: it would cost a turn of the microtask queue.
        sendJson(reply, kept);
        return;
      }
      // Async, answering the reply: Fastify then waits until it has been sent.
      const readAndKeep = async () => {
        const answer = await answerList(request, reply, 'controls', request.query, (id, filter, page) =>
          listControls(deps, id, filter, page),
        );
        // Undefined when answerList has answered (a CSV file, or a cursor it refused).
        if (answer === undefined) return reply;
        // The page is built field by field from the Control schema, so it is serialized as it is.
        const body = JSON.stringify(answer);
        return sendJson(reply, version === undefined ? body : pages.set(key, version, body));
      };
      return readAndKeep();
    },
  );

  app.get(
    '/controls/:id',
    {
      schema: {
        operationId: 'getControl',
        summary: 'Get a control by its id or its Annex A reference',
        description: "`{id}` is the control's id (`ctl_...`) or its reference (`A.5.1`).",
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
        summary: "Change a control's status, owner, notes or justification",
        description:
          'Setting status `not_applicable` needs a justification, in the same body or already stored: ' +
          'otherwise 400 `justification_required`.',
        tags,
        params: IdParams,
        body: UpdateControlBody,
        response: responses({ 200: Control }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateControl(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
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
