import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { type Control, listControls, updateControl } from '../../compliance/index.ts';
import { canManageWorkspace, type Membership } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { allPeople, personChoices } from '../choices.ts';
import { isIdInput } from '../forms.ts';
import {
  filterOf,
  type ListDefinition,
  type ListFilter,
  listQuerySchema,
  listUrl,
  readList,
  sendInvalidListLink,
  sendListCsv,
} from '../list-page.ts';
import { sendNotFound, sendView } from '../render.ts';
import {
  CONTROL_FILTERS,
  CONTROL_VIEW_LABELS,
  type ControlRow,
  controlRows,
  STATUS_OPTIONS,
} from '../views/controls.view.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

/** The REST API's default page size, so a page here is a page there. */
const PAGE_SIZE = 50;

function controlsList(deps: RouteDeps): ListDefinition<Control> {
  return {
    name: 'controls',
    fields: CONTROL_FILTERS,
    pageSize: PAGE_SIZE,
    read: (workspaceId, filter, page) => listControls(deps, workspaceId, filter, page),
    csv: {
      header: ['reference', 'title', 'theme', 'status', 'owner_id', 'notes', 'updated_at', 'id'],
      row: (control) => [
        control.reference,
        control.title,
        control.theme,
        control.status,
        control.owner_id,
        control.notes,
        control.updated_at,
        control.id,
      ],
    },
  };
}

const ChangeBody = Type.Object({
  status: Type.String({ maxLength: 40 }),
  owner_id: Type.String({ maxLength: 100 }),
  /** Optional: a form without it keeps the stored justification. As the REST API bounds it. */
  justification: Type.Optional(Type.String({ maxLength: 10_000 })),
  ...Object.fromEntries(
    CONTROL_FILTERS.map((field) => [`list_${field.name}`, Type.Optional(Type.String({ maxLength: 200 }))]),
  ),
  list_cursor: Type.Optional(Type.String({ maxLength: 2000 })),
});

type ListQuery = Record<string, string | undefined>;

/**
 * The controls list: every member searches and filters it, and changes a control's status and
 * owner in place. Changing compliance data is a member's work (only Integrations, Billing and the
 * audit log are for owners and admins); the change goes through `updateControl`, as
 * `PATCH /api/v1/controls/{id}` does, and so publishes the same `control.updated` event.
 */
export function controlRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const list = controlsList(deps);
  const querystring = listQuerySchema(list);

  async function controlsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    membership: Membership,
    query: ListQuery,
    extra: { notice?: string; error?: { code: string; message: string }; status?: number } = {},
  ) {
    const { workspace } = membership;
    const view = await readList(list, workspace.id, query);
    if (!view) return sendInvalidListLink(request, reply);
    const people = await allPeople(deps, workspace.id);
    return sendView(
      request,
      reply,
      'controls',
      {
        title: `Controls · ${workspace.name}`,
        errorCode: extra.error?.code,
        workspace,
        canManage: canManageWorkspace(membership.role),
        list: { ...view, items: controlRows(view.items, people) satisfies ControlRow[] },
        listState: { ...view.filter, ...(query.cursor ? { cursor: query.cursor } : {}) },
        people: personChoices(people),
        statuses: STATUS_OPTIONS,
        ...CONTROL_VIEW_LABELS,
        notice: extra.notice,
        error: extra.error,
      },
      extra.status ?? (extra.error ? 400 : 200),
    );
  }

  app.get<{ Querystring: ListQuery }>('/controls', { schema: { querystring } }, async (request, reply) => {
    const notice = request.query.notice === 'updated' ? 'Control updated.' : undefined;
    return controlsPage(request, reply, accessOf(request).membership, request.query, { notice });
  });

  app.get<{ Querystring: ListQuery }>('/controls.csv', { schema: { querystring } }, async (request, reply) =>
    sendListCsv(reply, list, accessOf(request).membership.workspace.id, request.query),
  );

  app.post<{ Params: { controlId: string }; Body: Record<string, string | undefined> }>(
    '/controls/:controlId',
    { schema: { body: ChangeBody } },
    async (request, reply) => {
      const { membership } = accessOf(request);
      const workspaceId = membership.workspace.id;
      const back: ListQuery = Object.fromEntries(
        [...CONTROL_FILTERS.map((field) => field.name), 'cursor'].map((name) => [
          name,
          request.body[`list_${name}`],
        ]),
      );
      const state: ListFilter = filterOf(list, back);
      const status = request.body.status ?? '';
      const ownerId = request.body.owner_id ?? '';
      const justification = request.body.justification?.trim() ?? '';
      const controlId = request.params.controlId;
      if (
        !STATUS_OPTIONS.some((option) => option.value === status) ||
        (ownerId !== '' && !isIdInput(ownerId))
      ) {
        return controlsPage(request, reply, membership, back, {
          error: { code: 'invalid_request', message: 'Choose a status and an owner from the lists.' },
        });
      }
      if (!isIdInput(controlId)) return sendNotFound(request, reply);
      const result = await updateControl(
        deps,
        workspaceId,
        controlId,
        {
          status: status as Control['status'],
          owner_id: ownerId === '' ? null : ownerId,
          ...(justification ? { justification } : {}),
        },
        userSourceOf(request, accessOf(request).user),
      );
      if (!result.ok) {
        if (result.error.code === 'not_found') return sendNotFound(request, reply);
        if (result.error.code === 'justification_required') {
          return controlsPage(request, reply, membership, back, {
            error: {
              code: result.error.code,
              message: 'Say why the control is not applicable before marking it so.',
            },
          });
        }
        return controlsPage(request, reply, membership, back, {
          error: {
            code: result.error.code,
            message: 'That person is no longer in the workspace’s directory; choose another owner.',
          },
          status: 409,
        });
      }
      const cursor: Record<string, string> = back.cursor ? { cursor: back.cursor } : {};
      return reply.redirect(
        `${listUrl(workspaceId, list, state, { ...cursor, notice: 'updated' })}#${controlId}`,
        303,
      );
    },
  );
}
