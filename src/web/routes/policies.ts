import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  acknowledgePolicy,
  approvePolicy,
  findPolicyByKey,
  getPolicy,
  getPolicyVersion,
  listPolicies,
  listPolicyVersions,
  type Policy,
  type PolicyVersionSummary,
  policyAcknowledgements,
  UpdatePolicyBody,
  UpsertPolicyBody,
  updatePolicy,
  upsertPolicy,
} from '../../compliance/index.ts';
import { canManageWorkspace, listMembers } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { readAll } from '../choices.ts';
import { type FieldError, schemaErrors } from '../form-errors.ts';
import { isIdInput } from '../forms.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
} from '../list-page.ts';
import { renderMarkdown } from '../markdown.ts';
import { sendForbidden, sendNotFound, sendView } from '../render.ts';
import {
  type AcknowledgementsView,
  EMPTY_POLICY_FORM,
  POLICY_FIELD_ERRORS,
  POLICY_FILTERS,
  POLICY_STATUS_LABELS,
  type PolicyForm,
  type PolicyView,
  policyForm,
} from '../views/policies.view.ts';
import { accessOf, isAuditor, pageBaseOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;
const VERSIONS_PAGE = 200;

/**
 * A policy's text is up to 200,000 characters, which a form sends percent-encoded (up to nine
 * bytes a character): these two forms take more than the app's 16 KiB.
 */
const POLICY_FORM_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

type ListQuery = Record<string, string | undefined>;
type PolicyParams = { Params: { policyId: string } };
type NoticeQuery = { Querystring: { notice?: string } };

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The policy form as sent: text, bounded; the REST API's schema then judges the values. */
const PolicyFormBody = Type.Object({
  key: FormText(1000),
  title: FormText(1000),
  summary: FormText(20_000),
  body: FormText(400_000),
  intent: FormText(20),
});
const NoticeQuerystring = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });

const NOTICES: Record<string, string> = {
  created: 'Policy created. Its text is the draft of version 1, to be approved by an owner or admin.',
  saved: 'Draft saved.',
  approved: 'Draft approved: it is now the current version.',
  nothing_to_approve: 'There is no draft to approve: the approved version is the current text.',
  acknowledged: 'Thank you: your acknowledgement is recorded.',
  not_approved: 'There is no approved version to acknowledge yet.',
};

function formOf(body: Partial<Record<keyof PolicyForm, string>>): PolicyForm {
  return { key: body.key ?? '', title: body.title ?? '', summary: body.summary ?? '', body: body.body ?? '' };
}

/** The draft a form asks for, as the REST API takes it: an empty summary clears it. */
function contentOf(form: PolicyForm) {
  return {
    title: form.title.trim(),
    summary: form.summary.trim() === '' ? null : form.summary.trim(),
    body: form.body,
  };
}

/**
 * Policies: every member lists and reads them, writes drafts and acknowledges the approved
 * version; owners and admins approve drafts (the domain decides, from the member's role). Through
 * the same functions as `/api/v1/policies`, so the audit log tells one story.
 */
export function policyRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const policiesList: ListDefinition<Policy> = {
    name: 'policies',
    fields: POLICY_FILTERS,
    pageSize: PAGE_SIZE,
    read: (workspaceId, filter, page) =>
      listPolicies(
        deps,
        workspaceId,
        {
          ...(filter.q ? { q: filter.q } : {}),
          ...(filter.status ? { status: filter.status as Policy['status'] } : {}),
        },
        page,
      ),
    csv: {
      header: ['key', 'title', 'status', 'version', 'approved_at', 'summary', 'id', 'updated_at'],
      row: (policy) => [
        policy.key,
        policy.title,
        policy.status,
        policy.version,
        policy.approved_at,
        policy.summary,
        policy.id,
        policy.updated_at,
      ],
    },
  };
  const querystring = listQuerySchema(policiesList);
  /** The list and its CSV, which an external auditor reads too. */
  const auditorReads = { schema: { querystring }, config: { auditorMayRead: true } };

  function newPolicyPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: PolicyForm,
    errors: FieldError[] = [],
  ) {
    const base = pageBaseOf(request);
    return sendView(
      request,
      reply,
      'policy-new',
      { title: `New policy · ${base.workspace.name}`, ...base, form, errors },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function versionsOf(workspaceId: string, policyId: string): Promise<PolicyVersionSummary[]> {
    return readAll(
      async (after) =>
        (await listPolicyVersions(deps, workspaceId, policyId, { limit: VERSIONS_PAGE, after })) ?? {
          items: [],
          next: null,
        },
    );
  }

  async function acknowledgementsOf(request: FastifyRequest, policy: Policy) {
    const { membership, user } = accessOf(request);
    const workspaceId = membership.workspace.id;
    const members = await listMembers(deps.db, workspaceId);
    const memberUserIds = members.flatMap((member) => (member.userId ? [member.userId] : []));
    const acknowledgements = await policyAcknowledgements(deps, workspaceId, policy.id, memberUserIds);
    const data = acknowledgements?.data ?? [];
    const mine = data.find((acknowledgement) => acknowledgement.user_id === user.id);
    let listed: AcknowledgementsView | null = null;
    if (canManageWorkspace(membership.role) && acknowledgements?.version) {
      const emailOf = new Map(members.map((member) => [member.userId, member.email]));
      listed = {
        acknowledged: data.map((acknowledgement) => ({
          email: emailOf.get(acknowledgement.user_id) ?? 'A former member',
          at: acknowledgement.acknowledged_at,
        })),
        pending: acknowledgements.pending_user_ids.map((userId) => emailOf.get(userId) ?? userId),
      };
    }
    return { acknowledgedAt: mine?.acknowledged_at ?? null, acknowledgements: listed };
  }

  async function policyPage(
    request: FastifyRequest,
    reply: FastifyReply,
    policy: Policy,
    extra: { form?: PolicyForm; errors?: FieldError[]; notice?: string; preview?: boolean } = {},
  ) {
    const base = pageBaseOf(request);
    const workspaceId = base.workspace.id;
    // An external auditor reads the approved versions only: never the draft being written.
    const auditor = isAuditor(request);
    const versions = (await versionsOf(workspaceId, policy.id)).filter(
      (version) => !auditor || version.status === 'approved',
    );
    const latestApproved = versions.filter((version) => version.status === 'approved').at(-1);
    const approvedDetail = latestApproved
      ? await getPolicyVersion(deps, workspaceId, policy.id, latestApproved.number)
      : undefined;
    const savedDraft = auditor ? undefined : versions.find((version) => version.status === 'draft');
    let draft: PolicyView['draft'] = null;
    if (extra.preview && extra.form) {
      draft = { number: savedDraft?.number ?? null, html: renderMarkdown(extra.form.body), unsaved: true };
    } else if (savedDraft) {
      draft = { number: savedDraft.number, html: renderMarkdown(policy.body), unsaved: false };
    }
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'policy',
      {
        title: `${policy.title} · Policies · ${base.workspace.name}`,
        ...base,
        policy,
        statusLabels: POLICY_STATUS_LABELS,
        approved: approvedDetail
          ? { version: approvedDetail, html: renderMarkdown(approvedDetail.body) }
          : null,
        draft,
        versions,
        ...(await acknowledgementsOf(request, policy)),
        form: extra.form ?? policyForm(policy),
        errors,
        history: await recordHistory(deps, workspaceId, policy.id),
        notice: extra.notice,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function policyOf(request: FastifyRequest<PolicyParams>) {
    const { policyId } = request.params;
    if (!isIdInput(policyId)) return undefined;
    return getPolicy(deps, accessOf(request).membership.workspace.id, policyId);
  }

  const policyUrl = (workspaceId: string, policyId: string, notice: string) =>
    `/w/${workspaceId}/policies/${policyId}?notice=${notice}`;

  app.get<{ Querystring: ListQuery }>('/policies', auditorReads, async (request, reply) => {
    const base = pageBaseOf(request);
    const view = await readList(policiesList, base.workspace.id, request.query);
    if (!view) return sendInvalidListLink(request, reply);
    const notice = request.query.notice;
    return sendView(request, reply, 'policies', {
      title: `Policies · ${base.workspace.name}`,
      ...base,
      list: view,
      statusLabels: POLICY_STATUS_LABELS,
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/policies.csv', auditorReads, async (request, reply) =>
    sendListCsv(reply, policiesList, accessOf(request).membership.workspace.id, request.query),
  );

  app.get('/policies/new', async (request, reply) => newPolicyPage(request, reply, EMPTY_POLICY_FORM));

  app.post<{ Body: Partial<PolicyForm> }>(
    '/policies',
    { bodyLimit: POLICY_FORM_BODY_LIMIT_BYTES, schema: { body: PolicyFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspaceId = access.membership.workspace.id;
      const form = formOf(request.body);
      const { summary, ...content } = contentOf(form);
      const body = { key: form.key.trim(), ...content, ...(summary ? { summary } : {}) };
      const invalid = schemaErrors(UpsertPolicyBody, body, POLICY_FIELD_ERRORS);
      if (invalid.length > 0) return newPolicyPage(request, reply, form, invalid);
      // The API's upsert would update the policy with this key; a form that says "new" must not.
      const existing = await findPolicyByKey(deps, workspaceId, body.key);
      if (existing) {
        return newPolicyPage(request, reply, form, [
          { field: 'key', message: `The policy “${existing.title}” already has this key.` },
        ]);
      }
      const { policy } = await upsertPolicy(deps, workspaceId, body, userSourceOf(request, access.user));
      return reply.redirect(policyUrl(workspaceId, policy.id, 'created'), 303);
    },
  );

  app.get<PolicyParams & NoticeQuery>(
    '/policies/:policyId',
    { schema: { querystring: NoticeQuerystring }, config: { auditorMayRead: true } },
    async (request, reply) => {
      const policy = await policyOf(request);
      if (!policy) return sendNotFound(request, reply);
      const notice = request.query.notice;
      return policyPage(request, reply, policy, { notice: notice ? NOTICES[notice] : undefined });
    },
  );

  app.post<PolicyParams & { Body: Partial<PolicyForm> & { intent?: string } }>(
    '/policies/:policyId',
    { bodyLimit: POLICY_FORM_BODY_LIMIT_BYTES, schema: { body: PolicyFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const policy = await policyOf(request);
      if (!policy) return sendNotFound(request, reply);
      const form = { ...formOf(request.body), key: policy.key };
      const body = contentOf(form);
      const invalid = schemaErrors(UpdatePolicyBody, body, POLICY_FIELD_ERRORS);
      if (invalid.length > 0) return policyPage(request, reply, policy, { form, errors: invalid });
      if (request.body.intent === 'preview')
        return policyPage(request, reply, policy, { form, preview: true });
      const workspaceId = access.membership.workspace.id;
      const updated = await updatePolicy(
        deps,
        workspaceId,
        policy.id,
        body,
        userSourceOf(request, access.user),
      );
      if (!updated.ok) return sendNotFound(request, reply);
      return reply.redirect(policyUrl(workspaceId, policy.id, 'saved'), 303);
    },
  );

  app.post<PolicyParams>('/policies/:policyId/approve', async (request, reply) => {
    const access = accessOf(request);
    const policy = await policyOf(request);
    if (!policy) return sendNotFound(request, reply);
    const workspaceId = access.membership.workspace.id;
    const approved = await approvePolicy(
      deps,
      workspaceId,
      policy.id,
      // Auditors never get here (the workspace scope refuses them every form); they approve nothing.
      { kind: 'member', role: access.membership.role === 'auditor' ? 'member' : access.membership.role },
      userSourceOf(request, access.user),
    );
    if (approved.ok) return reply.redirect(policyUrl(workspaceId, policy.id, 'approved'), 303);
    switch (approved.error.code) {
      case 'not_allowed':
        return sendForbidden(request, reply, 'Only owners and admins approve policies; ask one of them.');
      case 'nothing_to_approve':
        return reply.redirect(policyUrl(workspaceId, policy.id, 'nothing_to_approve'), 303);
      default:
        return sendNotFound(request, reply);
    }
  });

  app.post<PolicyParams>('/policies/:policyId/acknowledge', async (request, reply) => {
    const access = accessOf(request);
    const policy = await policyOf(request);
    if (!policy) return sendNotFound(request, reply);
    const workspaceId = access.membership.workspace.id;
    const acknowledged = await acknowledgePolicy(
      deps,
      workspaceId,
      policy.id,
      access.user.id,
      userSourceOf(request, access.user),
    );
    if (acknowledged.ok) return reply.redirect(policyUrl(workspaceId, policy.id, 'acknowledged'), 303);
    if (acknowledged.error.code === 'not_approved') {
      return reply.redirect(policyUrl(workspaceId, policy.id, 'not_approved'), 303);
    }
    return sendNotFound(request, reply);
  });

  app.get<PolicyParams & { Params: { number: string } }>(
    '/policies/:policyId/versions/:number',
    { config: { auditorMayRead: true } },
    async (request, reply) => {
      const base = pageBaseOf(request);
      const policy = await policyOf(request);
      const { number } = request.params;
      if (!policy || !/^[1-9][0-9]{0,8}$/.test(number)) return sendNotFound(request, reply);
      const version = await getPolicyVersion(deps, base.workspace.id, policy.id, Number(number));
      if (!version || (isAuditor(request) && version.status !== 'approved'))
        return sendNotFound(request, reply);
      return sendView(request, reply, 'policy-version', {
        title: `Version ${version.number} · ${policy.title} · ${base.workspace.name}`,
        ...base,
        policy,
        version: { version, html: renderMarkdown(version.body) },
      });
    },
  );
}
