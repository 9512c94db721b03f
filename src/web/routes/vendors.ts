import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type ComplianceError,
  CreateVendorBody,
  createVendor,
  deleteVendor,
  getVendor,
  listVendors,
  UpdateVendorBody,
  updateVendor,
  type Vendor,
  type VendorsFilter,
} from '../../compliance/index.ts';
import { canManageWorkspace } from '../../workspace/index.ts';
import { allPeople, type Choice, personChoices } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
  withRecordChoices,
} from '../list-page.ts';
import { registerRecordPages } from '../record-pages.ts';
import { sendView } from '../render.ts';
import {
  EMPTY_VENDOR_FORM,
  REVIEW_DUE_DAYS,
  VENDOR_FIELD_ERRORS,
  VENDOR_FILTERS,
  VENDOR_FORM_CHOICES,
  VENDOR_LABELS,
  type VendorForm,
  vendorForm,
  vendorRows,
} from '../views/vendors.view.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;
const DAY_MS = 24 * 60 * 60 * 1000;

type ListQuery = Record<string, string | undefined>;

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The vendor form as sent: text, bounded; the REST API's schema then judges the values. */
const VendorFormBody = Type.Object({
  name: FormText(1000),
  website: FormText(4000),
  description: FormText(20_000),
  risk_level: FormText(40),
  status: FormText(40),
  owner_id: FormText(100),
  next_review_date: FormText(40),
});

const NOTICES: Record<string, string> = {
  created: 'Vendor created.',
  updated: 'Vendor updated.',
  deleted: 'Vendor deleted.',
};

function formOf(body: Partial<VendorForm>): VendorForm {
  return {
    name: body.name ?? '',
    website: body.website ?? '',
    description: body.description ?? '',
    risk_level: body.risk_level ?? '',
    status: body.status ?? '',
    owner_id: body.owner_id ?? '',
    next_review_date: body.next_review_date ?? '',
  };
}

/** The vendor a form describes, as the REST API takes it: an empty field clears it. */
function changeOf(form: VendorForm) {
  const orNull = (text: string) => (text === '' ? null : text);
  return {
    name: form.name.trim(),
    website: orNull(form.website.trim()),
    description: orNull(form.description),
    risk_level: form.risk_level,
    status: form.status,
    owner_id: orNull(form.owner_id),
    next_review_date: orNull(form.next_review_date),
  };
}

function refusal(error: Exclude<ComplianceError, { code: 'not_found' }>): FieldError {
  if (error.code === 'reference_not_found') {
    return VENDOR_FIELD_ERRORS[error.field] ?? { message: 'Choose from the lists.' };
  }
  return { message: 'The vendor could not be saved; try again.' };
}

/**
 * Vendors: every member lists them (by status, risk level, owner, reviews due), creates, edits and
 * deletes them, through the same functions as `/api/v1/vendors`, so the audit log and the webhooks
 * tell the same story whichever door was used.
 */
export function vendorRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const dayFromToday = (days: number) =>
    new Date(deps.clock.now().getTime() + days * DAY_MS).toISOString().slice(0, 10);

  function vendorsList(people: Choice[]): ListDefinition<Vendor> {
    const ownerNames = new Map(people.map((choice) => [choice.value, choice.label]));
    return {
      name: 'vendors',
      fields: withRecordChoices(VENDOR_FILTERS, { owner_id: people }),
      pageSize: PAGE_SIZE,
      read: (workspaceId, filter, page) => {
        const { review, ...rest } = filter;
        const domain = rest as VendorsFilter;
        if (review === 'overdue') domain.review_due_before = dayFromToday(0);
        if (review === 'due') domain.review_due_before = dayFromToday(REVIEW_DUE_DAYS + 1);
        return listVendors(deps, workspaceId, domain, page);
      },
      csv: {
        header: [
          'name',
          'website',
          'status',
          'risk_level',
          'owner',
          'next_review_date',
          'description',
          'owner_id',
          'updated_at',
          'id',
        ],
        row: (vendor) => [
          vendor.name,
          vendor.website,
          vendor.status,
          vendor.risk_level,
          vendor.owner_id ? ownerNames.get(vendor.owner_id) : null,
          vendor.next_review_date,
          vendor.description,
          vendor.owner_id,
          vendor.updated_at,
          vendor.id,
        ],
      },
    };
  }
  const querystring = listQuerySchema({ name: 'vendors', fields: VENDOR_FILTERS });

  async function people(workspaceId: string): Promise<Choice[]> {
    return personChoices(await allPeople(deps, workspaceId));
  }

  const rowsOf = (vendors: Vendor[], choices: Choice[]) =>
    vendorRows(vendors, choices, dayFromToday(0), dayFromToday(REVIEW_DUE_DAYS + 1));

  async function newVendorPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: VendorForm,
    errors: FieldError[] = [],
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    return sendView(
      request,
      reply,
      'vendor-new',
      {
        title: `New vendor · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        form,
        people: await people(workspace.id),
        ...VENDOR_FORM_CHOICES,
        errors,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function vendorPage(
    request: FastifyRequest,
    reply: FastifyReply,
    vendor: Vendor,
    extra: { form?: VendorForm; errors?: FieldError[]; notice?: string } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const choices = await people(workspace.id);
    const [row] = rowsOf([vendor], choices);
    if (!row) throw new Error('a vendor has a row');
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'vendor',
      {
        title: `${vendor.name} · Vendors · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        vendor: row,
        form: extra.form ?? vendorForm(vendor),
        people: choices,
        ...VENDOR_FORM_CHOICES,
        ...VENDOR_LABELS,
        errors,
        history: await recordHistory(deps, workspace.id, vendor.id),
        notice: extra.notice,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  app.get<{ Querystring: ListQuery }>('/vendors', { schema: { querystring } }, async (request, reply) => {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const choices = await people(workspace.id);
    const view = await readList(vendorsList(choices), workspace.id, request.query);
    if (!view) return sendInvalidListLink(request, reply);
    const notice = request.query.notice;
    return sendView(request, reply, 'vendors', {
      title: `Vendors · ${workspace.name}`,
      workspace,
      canManage: canManageWorkspace(membership.role),
      list: { ...view, items: rowsOf(view.items, choices) },
      ...VENDOR_LABELS,
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/vendors.csv', { schema: { querystring } }, async (request, reply) => {
    const workspaceId = accessOf(request).membership.workspace.id;
    return sendListCsv(reply, vendorsList(await people(workspaceId)), workspaceId, request.query);
  });

  registerRecordPages(app, {
    path: 'vendors',
    param: 'vendorId',
    formBody: VendorFormBody,
    formOf,
    emptyForm: EMPTY_VENDOR_FORM,
    fieldErrors: VENDOR_FIELD_ERRORS,
    refusal,
    notices: NOTICES,
    load: (workspaceId, id) => getVendor(deps, workspaceId, id),
    create: {
      schema: CreateVendorBody,
      changeOf: (form) => changeOf(form) as CreateVendorBody,
      run: (workspaceId, body, source) => createVendor(deps, workspaceId, body, source),
    },
    update: {
      schema: UpdateVendorBody,
      changeOf: (form) => changeOf(form) as UpdateVendorBody,
      run: (workspaceId, id, body, source) => updateVendor(deps, workspaceId, id, body, source),
    },
    remove: (workspaceId, id, source) => deleteVendor(deps, workspaceId, id, source),
    newPage: newVendorPage,
    recordPage: vendorPage,
  });
}
