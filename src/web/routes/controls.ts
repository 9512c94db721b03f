import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type Control,
  type EvidenceDeps,
  evidenceFileUrl,
  getControl,
  getEvidence,
  listControls,
  listEvidence,
  listRisks,
  listTasks,
  UpdateControlBody,
  updateControl,
  updateEvidence,
} from '../../compliance/index.ts';
import type { Position } from '../../db/keyset.ts';
import { canManageWorkspace, lockWorkspace, type Membership } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { allControls, allPeople, personChoices } from '../choices.ts';
import { type FieldError, schemaErrors } from '../form-errors.ts';
import { type FormBody, field, isIdInput } from '../forms.ts';
import { recordHistory } from '../history.ts';
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
  CONTROL_FIELD_ERRORS,
  CONTROL_FILTERS,
  CONTROL_VIEW_LABELS,
  type ControlForm,
  type ControlRow,
  controlForm,
  controlPath,
  controlRows,
  JUSTIFICATION_REQUIRED,
  STATUS_OPTIONS,
} from '../views/controls.view.ts';
import { evidenceRows } from '../views/evidence.view.ts';
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
type ControlParams = { Params: { controlId: string } };

/** How many linked records of each kind a control's page shows; the lists have the rest. */
const SHOWN_ON_CONTROL = 50;

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The control form as sent: text, bounded; the REST API's schema then judges the values. */
const ControlFormBody = Type.Object({
  status: FormText(40),
  owner_id: FormText(100),
  notes: FormText(20_000),
  justification: FormText(20_000),
});
const EvidenceLinkBody = Type.Object({ evidence_id: FormText(100) });

const DETAIL_NOTICES: Record<string, string> = {
  updated: 'Control updated.',
  linked: 'Evidence linked.',
  unlinked: 'Evidence unlinked.',
};

/** The change the control form asks for, as the REST API takes it: blank text clears a field. */
function controlChange(form: ControlForm) {
  const text = (value: string) => (value.trim() === '' ? null : value);
  return {
    status: form.status,
    owner_id: form.owner_id === '' ? null : form.owner_id,
    notes: text(form.notes),
    justification: text(form.justification),
  };
}

/**
 * The controls list: every member searches and filters it, and changes a control's status and
 * owner in place. Changing compliance data is a member's work (only Integrations, Billing and the
 * audit log are for owners and admins); the change goes through `updateControl`, as
 * `PATCH /api/v1/controls/{id}` does, and so publishes the same `control.updated` event.
 */
export function controlRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const list = controlsList(deps);
  const querystring = listQuerySchema(list);
  /** The list and its CSV, which an external auditor reads too. */
  const auditorReads = { schema: { querystring }, config: { auditorMayRead: true } };

  async function controlsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    membership: Membership,
    query: ListQuery,
    extra: {
      notice?: string;
      error?: { code: string; message: string; controlId?: string };
      status?: number;
    } = {},
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

  app.get<{ Querystring: ListQuery }>('/controls', auditorReads, async (request, reply) => {
    const notice = request.query.notice === 'updated' ? 'Control updated.' : undefined;
    return controlsPage(request, reply, accessOf(request).membership, request.query, { notice });
  });

  app.get<{ Querystring: ListQuery }>('/controls.csv', auditorReads, async (request, reply) =>
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
              controlId,
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

  const evidenceDeps = (request: FastifyRequest): EvidenceDeps => ({
    db: deps.db,
    clock: deps.clock,
    store: deps.evidence.store,
    lockWorkspace,
    downloadUrl: (id) => evidenceFileUrl(deps.config.baseUrl, id),
    log: request.log,
  });

  /** Every current evidence of the workspace, newest first: what a control may be linked to. */
  async function currentEvidence(request: FastifyRequest, workspaceId: string) {
    const items = [];
    let after: Position | undefined;
    do {
      const page = await listEvidence(evidenceDeps(request), workspaceId, {}, { limit: 200, after });
      items.push(...page.items);
      after = page.next ?? undefined;
    } while (after);
    return items;
  }

  async function controlOf(request: FastifyRequest<ControlParams>) {
    const { controlId } = request.params;
    if (!isIdInput(controlId)) return undefined;
    return getControl(deps, accessOf(request).membership.workspace.id, controlId);
  }

  async function controlPage(
    request: FastifyRequest,
    reply: FastifyReply,
    control: Control,
    extra: {
      form?: ControlForm;
      errors?: FieldError[];
      errorsOf?: 'control' | 'evidence';
      notice?: string;
      status?: number;
    } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const [people, controls, linked, evidence, tasks, risks, history] = await Promise.all([
      allPeople(deps, workspace.id),
      allControls(deps, workspace.id),
      listEvidence(
        evidenceDeps(request),
        workspace.id,
        { control_id: control.id },
        { limit: SHOWN_ON_CONTROL },
      ),
      currentEvidence(request, workspace.id),
      listTasks(deps, workspace.id, { status: 'open', control_id: control.id }, { limit: SHOWN_ON_CONTROL }),
      listRisks(deps, workspace.id, { control_id: control.id }, { limit: SHOWN_ON_CONTROL }),
      recordHistory(deps, workspace.id, control.id),
    ]);
    const [row] = controlRows([control], people);
    if (!row) throw new Error('a control has a row');
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'control',
      {
        title: `${control.reference} ${control.title} · Controls · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        control: row,
        form: extra.form ?? controlForm(control),
        people: personChoices(people),
        statuses: STATUS_OPTIONS,
        ...CONTROL_VIEW_LABELS,
        evidence: evidenceRows(linked.items, controls),
        moreEvidence: linked.next !== null,
        evidenceChoices: evidence
          .filter((item) => !item.control_ids.includes(control.id))
          .map((item) => ({ value: item.id, label: item.title })),
        openTasks: tasks.items,
        risks: risks.items,
        history,
        errors,
        errorsOf: extra.errorsOf,
        notice: extra.notice,
      },
      extra.status ?? (errors.length > 0 ? 400 : 200),
    );
  }

  app.get<ControlParams & { Querystring: { notice?: string } }>(
    '/controls/:controlId',
    {
      schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) },
      config: { auditorMayRead: true },
    },
    async (request, reply) => {
      const control = await controlOf(request);
      if (!control) return sendNotFound(request, reply);
      const workspaceId = accessOf(request).membership.workspace.id;
      // The page's address is the Annex A reference; an id (the API's, the list's anchors) leads there.
      if (request.params.controlId !== control.reference) {
        return reply.redirect(controlPath(workspaceId, control), 301);
      }
      const notice = request.query.notice;
      return controlPage(request, reply, control, { notice: notice ? DETAIL_NOTICES[notice] : undefined });
    },
  );

  app.post<ControlParams & { Body: FormBody }>(
    '/controls/:controlId/details',
    { schema: { body: ControlFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const control = await controlOf(request);
      if (!control) return sendNotFound(request, reply);
      const form: ControlForm = {
        status: field(request, 'status'),
        owner_id: field(request, 'owner_id'),
        notes: field(request, 'notes'),
        justification: field(request, 'justification'),
      };
      const body = controlChange(form);
      const invalid = schemaErrors(UpdateControlBody, body, CONTROL_FIELD_ERRORS);
      if (invalid.length > 0)
        return controlPage(request, reply, control, { form, errors: invalid, errorsOf: 'control' });
      const workspaceId = access.membership.workspace.id;
      const updated = await updateControl(
        deps,
        workspaceId,
        control.id,
        body as UpdateControlBody,
        userSourceOf(request, access.user),
      );
      if (!updated.ok) {
        if (updated.error.code === 'not_found') return sendNotFound(request, reply);
        const error =
          updated.error.code === 'justification_required'
            ? JUSTIFICATION_REQUIRED
            : (CONTROL_FIELD_ERRORS.owner_id as FieldError);
        return controlPage(request, reply, control, {
          form,
          errors: [error],
          errorsOf: 'control',
          status: updated.error.code === 'justification_required' ? 400 : 409,
        });
      }
      return reply.redirect(`${controlPath(workspaceId, control)}?notice=updated`, 303);
    },
  );

  for (const action of ['link', 'unlink'] as const) {
    app.post<ControlParams & { Body: FormBody }>(
      `/controls/:controlId/evidence/${action}`,
      { schema: { body: EvidenceLinkBody } },
      async (request, reply) => {
        const access = accessOf(request);
        const control = await controlOf(request);
        if (!control) return sendNotFound(request, reply);
        const workspaceId = access.membership.workspace.id;
        const evidenceId = field(request, 'evidence_id');
        const refused = () =>
          controlPage(request, reply, control, {
            errors: [{ field: 'evidence_id', message: 'Choose the evidence from the list.' }],
            errorsOf: 'evidence',
          });
        if (!isIdInput(evidenceId)) return refused();
        const evidence = await getEvidence(evidenceDeps(request), workspaceId, evidenceId);
        if (!evidence) return refused();
        const others = evidence.control_ids.filter((id) => id !== control.id);
        const updated = await updateEvidence(
          evidenceDeps(request),
          workspaceId,
          evidence.id,
          { control_ids: action === 'link' ? [...others, control.id] : others },
          userSourceOf(request, access.user),
        );
        if (!updated.ok) return refused();
        return reply.redirect(`${controlPath(workspaceId, control)}?notice=${action}ed#evidence-title`, 303);
      },
    );
  }
}
