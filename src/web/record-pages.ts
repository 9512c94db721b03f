import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import type { ComplianceError } from '../compliance/index.ts';
import type { Result } from '../shared/result.ts';
import { userSourceOf } from './audit.ts';
import { type FieldError, schemaErrors } from './form-errors.ts';
import { isIdInput } from './forms.ts';
import { sendNotFound } from './render.ts';
import { accessOf } from './workspace-scope.ts';

/** What a record page is told besides the record: the form as sent, its problems, a notice. */
export interface RecordPageExtra<Form> {
  form?: Form;
  errors?: FieldError[];
  notice?: string;
}

type Refusal = Exclude<ComplianceError, { code: 'not_found' }>;

/** A change a form asks for, checked against the REST API's schema of the same change. */
interface FormChange<Form, Change> {
  schema: TSchema;
  changeOf(form: Form): Change;
}

/**
 * The pages every kind of record has (a task, a risk, a vendor): a form to create one, its page
 * with the edit form, and delete. Each form is judged by the REST API's own schema and saved by
 * the domain function behind the API, with the member as the audit log's actor; a refusal comes
 * back as the form with its problems, worded per field.
 */
export interface RecordPages<Item extends { id: string }, Form, CreateBody, UpdateBody> {
  /** The list's path under the workspace (`risks`) and the record's URL parameter (`riskId`). */
  path: string;
  param: string;
  /** Whether an external auditor may read a record's page (never the forms). */
  auditorMayRead?: boolean;
  /** The form as sent: text, bounded, before the REST API's schema judges the values. */
  formBody: TSchema;
  formOf(body: FormValues): Form;
  /** The new record form's first values. */
  emptyForm: Form;
  fieldErrors: Record<string, FieldError>;
  refusal(error: Refusal): FieldError;
  notices: Record<string, string>;
  load(workspaceId: string, id: string): Promise<Item | undefined>;
  create: FormChange<Form, CreateBody> & {
    run(workspaceId: string, body: CreateBody, source: AuditSource): Promise<Result<Item, ComplianceError>>;
  };
  update: FormChange<Form, UpdateBody> & {
    run(
      workspaceId: string,
      id: string,
      body: UpdateBody,
      source: AuditSource,
    ): Promise<Result<Item, ComplianceError>>;
  };
  remove?(workspaceId: string, id: string, source: AuditSource): Promise<Result<unknown, ComplianceError>>;
  newPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: Form,
    errors: FieldError[],
  ): FastifyReply | Promise<FastifyReply>;
  recordPage(
    request: FastifyRequest,
    reply: FastifyReply,
    item: Item,
    extra: RecordPageExtra<Form>,
  ): FastifyReply | Promise<FastifyReply>;
}

type RecordRequest = FastifyRequest<{ Params: Record<string, string> }>;

/** A form's fields as sent: a value, or several for a group of checkboxes. */
export type FormValues = Record<string, string | string[] | undefined>;

/** One text field of a form as sent; empty when absent. */
export function formText(body: FormValues, name: string): string {
  const value = body[name];
  return typeof value === 'string' ? value : '';
}

const NoticeQuery = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });

/**
 * Registers `GET /{path}/new`, `POST /{path}`, `GET /{path}/:param`, `POST /{path}/:param` and,
 * with `remove`, `POST /{path}/:param/delete`; answers the loader the record's own actions use.
 */
export function registerRecordPages<Item extends { id: string }, Form, CreateBody, UpdateBody>(
  app: FastifyInstance,
  pages: RecordPages<Item, Form, CreateBody, UpdateBody>,
): { recordOf(request: FastifyRequest): Promise<Item | undefined> } {
  const base = (request: FastifyRequest) => `/w/${accessOf(request).membership.workspace.id}/${pages.path}`;
  const recordOf = async (request: FastifyRequest) => {
    const id = (request as RecordRequest).params[pages.param] ?? '';
    if (!isIdInput(id)) return undefined;
    return pages.load(accessOf(request).membership.workspace.id, id);
  };
  const noticeOf = (notice: string | undefined) => (notice ? pages.notices[notice] : undefined);
  const sourceOf = (request: FastifyRequest) => userSourceOf(request, accessOf(request).user);
  const refused = (error: ComplianceError) => (error.code === 'not_found' ? undefined : pages.refusal(error));

  app.get(`/${pages.path}/new`, async (request, reply) => pages.newPage(request, reply, pages.emptyForm, []));

  app.post<{ Body: FormValues }>(
    `/${pages.path}`,
    { schema: { body: pages.formBody } },
    async (request, reply) => {
      const form = pages.formOf(request.body);
      const body = pages.create.changeOf(form);
      const invalid = schemaErrors(pages.create.schema, body, pages.fieldErrors);
      if (invalid.length > 0) return pages.newPage(request, reply, form, invalid);
      const workspaceId = accessOf(request).membership.workspace.id;
      const created = await pages.create.run(workspaceId, body, sourceOf(request));
      if (!created.ok) {
        const refusal = refused(created.error);
        return refusal ? pages.newPage(request, reply, form, [refusal]) : sendNotFound(request, reply);
      }
      return reply.redirect(`${base(request)}/${created.value.id}?notice=created`, 303);
    },
  );

  app.get<{ Querystring: { notice?: string } }>(
    `/${pages.path}/:${pages.param}`,
    { schema: { querystring: NoticeQuery }, config: { auditorMayRead: pages.auditorMayRead ?? false } },
    async (request, reply) => {
      const item = await recordOf(request);
      if (!item) return sendNotFound(request, reply);
      return pages.recordPage(request, reply, item, { notice: noticeOf(request.query.notice) });
    },
  );

  app.post<{ Body: FormValues }>(
    `/${pages.path}/:${pages.param}`,
    { schema: { body: pages.formBody } },
    async (request, reply) => {
      const item = await recordOf(request);
      if (!item) return sendNotFound(request, reply);
      const form = pages.formOf(request.body);
      const body = pages.update.changeOf(form);
      const invalid = schemaErrors(pages.update.schema, body, pages.fieldErrors);
      if (invalid.length > 0) return pages.recordPage(request, reply, item, { form, errors: invalid });
      const workspaceId = accessOf(request).membership.workspace.id;
      const updated = await pages.update.run(workspaceId, item.id, body, sourceOf(request));
      if (!updated.ok) {
        const refusal = refused(updated.error);
        return refusal
          ? pages.recordPage(request, reply, item, { form, errors: [refusal] })
          : sendNotFound(request, reply);
      }
      return reply.redirect(`${base(request)}/${item.id}?notice=updated`, 303);
    },
  );

  const remove = pages.remove;
  if (remove) {
    app.post(`/${pages.path}/:${pages.param}/delete`, async (request, reply) => {
      const item = await recordOf(request);
      if (!item) return sendNotFound(request, reply);
      const workspaceId = accessOf(request).membership.workspace.id;
      const deleted = await remove(workspaceId, item.id, sourceOf(request));
      if (!deleted.ok) return sendNotFound(request, reply);
      return reply.redirect(`${base(request)}?notice=deleted`, 303);
    });
  }
  return { recordOf };
}

/** The text fields of a record form as sent: each optional and at most `maxLength` characters. */
export function formFields<Name extends string>(fields: Record<Name, number>) {
  return Type.Object(
    Object.fromEntries(
      Object.entries(fields).map(([name, maxLength]) => [
        name,
        Type.Optional(Type.String({ maxLength: maxLength as number })),
      ]),
    ),
  );
}
