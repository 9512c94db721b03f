import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type ComplianceError,
  type Control,
  CreateRiskBody,
  countOpenRisksByRating,
  createRisk,
  deleteRisk,
  getRisk,
  listRisks,
  type Risk,
  type RisksFilter,
  UpdateRiskBody,
  updateRisk,
} from '../../compliance/index.ts';
import { canManageWorkspace } from '../../workspace/index.ts';
import {
  allControls,
  allPeople,
  type Choice,
  type ControlGroup,
  controlChoices,
  controlGroups,
  personChoices,
} from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import { heatMap, IMPACT_LABELS, RATING_LABELS } from '../glance.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  type ListFilter,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
  withRecordChoices,
} from '../list-page.ts';
import { registerRecordPages } from '../record-pages.ts';
import { sendView } from '../render.ts';
import {
  EMPTY_RISK_FORM,
  RISK_FIELD_ERRORS,
  RISK_FILTERS,
  RISK_FORM_CHOICES,
  RISK_LABELS,
  type RiskForm,
  riskForm,
  riskRows,
} from '../views/risks.view.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type ListQuery = Record<string, string | undefined>;

/** What the risk pages offer to choose from: the workspace's people and its Annex A controls. */
interface RiskChoices {
  people: Choice[];
  controls: Choice[];
  controlList: Control[];
  controlGroups: ControlGroup[];
}

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The risk form as sent: text, bounded, controls as checkboxes; the REST API's schema then judges the values. */
const RiskFormBody = Type.Object({
  title: FormText(1000),
  description: FormText(20_000),
  likelihood: FormText(10),
  impact: FormText(10),
  owner_id: FormText(100),
  treatment: FormText(40),
  treatment_plan: FormText(20_000),
  residual_likelihood: FormText(10),
  residual_impact: FormText(10),
  due_date: FormText(40),
  status: FormText(40),
  control_ids: Type.Optional(
    Type.Union([
      Type.String({ maxLength: 100 }),
      Type.Array(Type.String({ maxLength: 100 }), { maxItems: 200 }),
    ]),
  ),
});
type RiskFormBody = Partial<Record<Exclude<keyof RiskForm, 'control_ids'>, string>> & {
  control_ids?: string | string[];
};

const NOTICES: Record<string, string> = {
  created: 'Risk created.',
  updated: 'Risk updated.',
  deleted: 'Risk deleted.',
};

function formOf(body: RiskFormBody): RiskForm {
  const controls = body.control_ids;
  return {
    title: body.title ?? '',
    description: body.description ?? '',
    likelihood: body.likelihood ?? '',
    impact: body.impact ?? '',
    owner_id: body.owner_id ?? '',
    treatment: body.treatment ?? '',
    treatment_plan: body.treatment_plan ?? '',
    residual_likelihood: body.residual_likelihood ?? '',
    residual_impact: body.residual_impact ?? '',
    due_date: body.due_date ?? '',
    status: body.status ?? '',
    control_ids: controls === undefined ? [] : typeof controls === 'string' ? [controls] : controls,
  };
}

/** A rating as the API takes it; anything but a digit 1-5 stays text, which the schema refuses for its field. */
const ratingOf = (text: string): number | string => (/^[1-5]$/.test(text) ? Number(text) : text);

/** The risk a form describes, as the REST API takes it: an empty choice clears the field. */
function changeOf(form: RiskForm) {
  const orNull = (text: string) => (text === '' ? null : text);
  return {
    title: form.title.trim(),
    description: form.description,
    likelihood: ratingOf(form.likelihood),
    impact: ratingOf(form.impact),
    owner_id: orNull(form.owner_id),
    treatment: form.treatment,
    treatment_plan: orNull(form.treatment_plan),
    residual_likelihood: form.residual_likelihood === '' ? null : ratingOf(form.residual_likelihood),
    residual_impact: form.residual_impact === '' ? null : ratingOf(form.residual_impact),
    due_date: orNull(form.due_date),
    status: form.status,
    control_ids: form.control_ids,
  };
}

function refusal(error: Exclude<ComplianceError, { code: 'not_found' }>): FieldError {
  if (error.code === 'reference_not_found') {
    const field = error.field.split('/')[0] ?? '';
    return RISK_FIELD_ERRORS[field] ?? { message: 'Choose from the lists.' };
  }
  return { message: 'The risk could not be saved; try again.' };
}

/** The list's filter as the domain takes it: the ratings as numbers. */
function domainFilter(filter: ListFilter): RisksFilter {
  const { likelihood, impact, ...rest } = filter;
  return {
    ...(rest as Omit<RisksFilter, 'likelihood' | 'impact'>),
    ...(likelihood ? { likelihood: Number(likelihood) } : {}),
    ...(impact ? { impact: Number(impact) } : {}),
  };
}

/**
 * The risk register: every member lists it (most severe first, with the 5x5 map of open risks),
 * creates, edits, treats and deletes risks, through the same functions as `/api/v1/risks`, so the
 * audit log and the webhooks tell the same story whichever door was used.
 */
export function riskRoutes(app: FastifyInstance, deps: RouteDeps): void {
  /** The register with its filters' choices, and its CSV naming owners and controls as people read them. */
  function risksList(options: RiskChoices): ListDefinition<Risk> {
    const ownerNames = new Map(options.people.map((choice) => [choice.value, choice.label]));
    const references = new Map(options.controlList.map((control) => [control.id, control.reference]));
    return {
      name: 'risks',
      fields: withRecordChoices(RISK_FILTERS, { owner_id: options.people, control_id: options.controls }),
      pageSize: PAGE_SIZE,
      read: (workspaceId, filter, page) => listRisks(deps, workspaceId, domainFilter(filter), page),
      csv: {
        header: [
          'title',
          'status',
          'likelihood',
          'impact',
          'score',
          'severity',
          'treatment',
          'treatment_plan',
          'residual_likelihood',
          'residual_impact',
          'residual_score',
          'due_date',
          'owner',
          'controls',
          'description',
          'owner_id',
          'updated_at',
          'id',
        ],
        row: (risk) => [
          risk.title,
          risk.status,
          risk.likelihood,
          risk.impact,
          risk.score,
          risk.severity,
          risk.treatment,
          risk.treatment_plan,
          risk.residual_likelihood,
          risk.residual_impact,
          risk.residual_score,
          risk.due_date,
          risk.owner_id ? ownerNames.get(risk.owner_id) : null,
          risk.control_ids.map((id) => references.get(id) ?? id).join(' '),
          risk.description,
          risk.owner_id,
          risk.updated_at,
          risk.id,
        ],
      },
    };
  }
  const querystring = listQuerySchema({ name: 'risks', fields: RISK_FILTERS });
  /** The list and its CSV, which an external auditor reads too. */
  const auditorReads = { schema: { querystring }, config: { auditorMayRead: true } };

  async function choices(workspaceId: string): Promise<RiskChoices> {
    const [people, controls] = await Promise.all([
      allPeople(deps, workspaceId),
      allControls(deps, workspaceId),
    ]);
    return {
      people: personChoices(people),
      controls: controlChoices(controls),
      controlList: controls,
      controlGroups: controlGroups(controls),
    };
  }

  async function newRiskPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: RiskForm,
    errors: FieldError[] = [],
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const options = await choices(workspace.id);
    return sendView(
      request,
      reply,
      'risk-new',
      {
        title: `New risk · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        form,
        people: options.people,
        controlGroups: options.controlGroups,
        ...RISK_FORM_CHOICES,
        errors,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function riskPage(
    request: FastifyRequest,
    reply: FastifyReply,
    risk: Risk,
    extra: { form?: RiskForm; errors?: FieldError[]; notice?: string } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const options = await choices(workspace.id);
    const [row] = riskRows([risk], options.people, options.controls);
    if (!row) throw new Error('a risk has a row');
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'risk',
      {
        title: `${risk.title} · Risks · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        risk: row,
        form: extra.form ?? riskForm(risk),
        people: options.people,
        controlGroups: options.controlGroups,
        ...RISK_FORM_CHOICES,
        ...RISK_LABELS,
        errors,
        history: await recordHistory(deps, workspace.id, risk.id),
        notice: extra.notice,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  app.get<{ Querystring: ListQuery }>('/risks', auditorReads, async (request, reply) => {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const options = await choices(workspace.id);
    const view = await readList(risksList(options), workspace.id, request.query);
    if (!view) return sendInvalidListLink(request, reply);
    const cells = await countOpenRisksByRating(deps, workspace.id);
    const notice = request.query.notice;
    return sendView(request, reply, 'risks', {
      title: `Risks · ${workspace.name}`,
      workspace,
      canManage: canManageWorkspace(membership.role),
      list: { ...view, items: riskRows(view.items, options.people, options.controls) },
      heat: heatMap(cells),
      openRiskCount: cells.reduce((sum, cell) => sum + cell.count, 0),
      ratingLabels: RATING_LABELS,
      impactLabels: IMPACT_LABELS,
      ...RISK_LABELS,
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/risks.csv', auditorReads, async (request, reply) => {
    const workspaceId = accessOf(request).membership.workspace.id;
    return sendListCsv(reply, risksList(await choices(workspaceId)), workspaceId, request.query);
  });

  registerRecordPages(app, {
    path: 'risks',
    param: 'riskId',
    auditorMayRead: true,
    formBody: RiskFormBody,
    formOf,
    emptyForm: EMPTY_RISK_FORM,
    fieldErrors: RISK_FIELD_ERRORS,
    refusal,
    notices: NOTICES,
    load: (workspaceId, id) => getRisk(deps, workspaceId, id),
    create: {
      schema: CreateRiskBody,
      changeOf: (form) => changeOf(form) as CreateRiskBody,
      run: (workspaceId, body, source) => createRisk(deps, workspaceId, body, source),
    },
    update: {
      schema: UpdateRiskBody,
      changeOf: (form) => changeOf(form) as UpdateRiskBody,
      run: (workspaceId, id, body, source) => updateRisk(deps, workspaceId, id, body, source),
    },
    remove: (workspaceId, id, source) => deleteRisk(deps, workspaceId, id, source),
    newPage: newRiskPage,
    recordPage: riskPage,
  });
}
