import fastifyMultipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  applyPeopleImport,
  type ComplianceError,
  findPersonByEmail,
  getPerson,
  listPeople,
  PEOPLE_IMPORT_MAX_BYTES,
  PEOPLE_IMPORT_MAX_ROWS,
  type PeopleImportResult,
  type Person,
  previewPeopleImport,
  UpdatePersonBody,
  UpsertPersonBody,
  updatePerson,
  upsertPerson,
} from '../../compliance/index.ts';
import { frameworkError } from '../../http/errors.ts';
import { err, ok } from '../../shared/result.ts';
import { userSourceOf } from '../audit.ts';
import { type FieldError, schemaErrors } from '../form-errors.ts';
import { field } from '../forms.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
} from '../list-page.ts';
import { registerRecordPages } from '../record-pages.ts';
import { sendNotFound, sendPage, sendView } from '../render.ts';
import {
  EMPLOYMENT_STATUS_CHOICES,
  EMPLOYMENT_STATUS_LABELS,
  EMPTY_PERSON_FORM,
  importRowView,
  PEOPLE_FILTERS,
  PERSON_FIELD_ERRORS,
  type PeopleImportView,
  type PersonForm,
  personForm,
} from '../views/people.view.ts';
import { accessOf, pageBaseOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type ListQuery = Record<string, string | undefined>;
type PersonParams = { Params: { personId: string } };

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The person form as sent: text, bounded; the REST API's schema then judges the values. */
const PersonFormBody = Type.Object({
  email: FormText(1000),
  name: FormText(1000),
  title: FormText(1000),
  department: FormText(1000),
  employment_status: FormText(40),
});
const LeaveFormBody = Type.Object({ left_on: FormText(40) });

/**
 * The import form is `multipart/form-data`, so a file input works without script; the text may
 * also be pasted. The limits hold the file (1 MiB, one byte over so a larger one is recognised
 * as such) and the Apply form's base64 copy of it (a third larger).
 */
const IMPORT_UPLOAD_LIMITS = {
  fileSize: PEOPLE_IMPORT_MAX_BYTES + 1,
  files: 1,
  fields: 4,
  fieldSize: Math.ceil((PEOPLE_IMPORT_MAX_BYTES * 4) / 3) + 4,
  parts: 5,
};

const NOTICES: Record<string, string> = {
  created: 'Person added.',
  updated: 'Changes saved.',
  left: 'Marked as left.',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

function formOf(body: Partial<Record<keyof PersonForm, string>>): PersonForm {
  return {
    email: body.email ?? '',
    name: body.name ?? '',
    title: body.title ?? '',
    department: body.department ?? '',
    employment_status: body.employment_status ?? '',
  };
}

/** The change a form asks for, as the REST API takes it: an empty text field clears it. */
function changeOf(form: PersonForm) {
  const text = (value: string) => (value.trim() === '' ? null : value.trim());
  return {
    email: form.email.trim(),
    name: text(form.name),
    title: text(form.title),
    department: text(form.department),
    employment_status: form.employment_status,
  };
}

function refusal(error: ComplianceError): FieldError {
  if (error.code === 'conflict' && error.field === 'email') {
    return { field: 'email', message: error.message };
  }
  if (error.code === 'conflict' && error.field === 'left_on') {
    return { field: 'left_on', message: 'Only a former person has a leaving date.' };
  }
  return { message: 'The person could not be saved; try again.' };
}

const NO_FILE: FieldError = { field: 'file', message: 'Choose a CSV file, or paste its rows.' };

/** The CSV an import form sent: the chosen file, or else the pasted text. */
function uploadedCsv(request: FastifyRequest): { text: string } | { error: FieldError } {
  const file = (request.body as Record<string, unknown> | undefined)?.file;
  if (Buffer.isBuffer(file) && file.length > 0) {
    if (file.length > PEOPLE_IMPORT_MAX_BYTES) {
      return { error: { field: 'file', message: 'The file is larger than 1 MiB: split it in two.' } };
    }
    try {
      return { text: utf8.decode(file) };
    } catch {
      return {
        error: {
          field: 'file',
          message: 'The file is not UTF-8 text: save it as "CSV UTF-8" and try again.',
        },
      };
    }
  }
  const pasted = field(request, 'csv_text');
  return pasted.trim() === '' ? { error: NO_FILE } : { text: pasted };
}

/**
 * The import form's fields, as the app's form parser gives them (a name sent twice holds every
 * value), and the chosen file's bytes as `file`.
 */
async function readImportForm(request: FastifyRequest): Promise<Record<string, string | string[] | Buffer>> {
  const body: Record<string, string | string[] | Buffer> = Object.create(null);
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      if (part.fieldname === 'file') body.file = bytes;
      continue;
    }
    const value = typeof part.value === 'string' ? part.value : '';
    const earlier = body[part.fieldname];
    if (earlier === undefined) body[part.fieldname] = value;
    else body[part.fieldname] = [...(Array.isArray(earlier) ? earlier : [String(earlier)]), value];
  }
  return body;
}

/**
 * The people directory: every member lists, adds, edits and marks people as left, and imports a
 * CSV file (a preview first, then the same bytes applied), through the same functions as
 * `/api/v1/people`, so the audit log and the webhooks tell the same story whichever door was used.
 */
export function peopleRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const today = () => deps.clock.now().toISOString().slice(0, 10);

  const peopleList: ListDefinition<Person> = {
    name: 'people',
    fields: PEOPLE_FILTERS,
    pageSize: PAGE_SIZE,
    read: (workspaceId, filter, page) =>
      listPeople(
        deps,
        workspaceId,
        {
          ...(filter.q ? { q: filter.q } : {}),
          ...(filter.employment_status
            ? { employment_status: filter.employment_status as Person['employment_status'] }
            : {}),
        },
        page,
      ),
    csv: {
      header: ['email', 'name', 'title', 'department', 'employment_status', 'left_on', 'id', 'created_at'],
      row: (person) => [
        person.email,
        person.name,
        person.title,
        person.department,
        person.employment_status,
        person.left_on,
        person.id,
        person.created_at,
      ],
    },
  };
  const querystring = listQuerySchema(peopleList);

  function newPersonPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: PersonForm,
    errors: FieldError[] = [],
  ) {
    const base = pageBaseOf(request);
    return sendView(
      request,
      reply,
      'person-new',
      {
        title: `Add a person · ${base.workspace.name}`,
        ...base,
        form,
        statuses: EMPLOYMENT_STATUS_CHOICES,
        errors,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function personPage(
    request: FastifyRequest,
    reply: FastifyReply,
    person: Person,
    extra: { form?: PersonForm; errors?: FieldError[]; leaveErrors?: FieldError[]; notice?: string } = {},
  ) {
    const base = pageBaseOf(request);
    const errors = extra.errors ?? [];
    const leaveErrors = extra.leaveErrors ?? [];
    return sendView(
      request,
      reply,
      'person',
      {
        title: `${person.name ?? person.email} · People · ${base.workspace.name}`,
        ...base,
        person,
        statusLabels: EMPLOYMENT_STATUS_LABELS,
        form: extra.form ?? personForm(person),
        statuses: EMPLOYMENT_STATUS_CHOICES,
        errors,
        leftOn: person.left_on ?? today(),
        leaveErrors,
        history: await recordHistory(deps, base.workspace.id, person.id),
        notice: extra.notice,
      },
      errors.length + leaveErrors.length > 0 ? 400 : 200,
    );
  }

  function importPage(
    request: FastifyRequest,
    reply: FastifyReply,
    stage: PeopleImportView['stage'],
    extra: { errors?: FieldError[]; result?: PeopleImportResult; csvText?: string } = {},
  ) {
    const base = pageBaseOf(request);
    const rows = (extra.result?.rows ?? []).map(importRowView);
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'people-import',
      {
        title: `Import people · ${base.workspace.name}`,
        ...base,
        stage,
        errors,
        fileBase64: extra.csvText === undefined ? '' : Buffer.from(extra.csvText, 'utf8').toString('base64'),
        counts: extra.result?.counts ?? { add: 0, change: 0, unchanged: 0, refused: 0 },
        added: rows.filter((row) => row.action === 'add'),
        changed: rows.filter((row) => row.action === 'change'),
        refused: rows.filter((row) => row.action === 'refused'),
        maxRows: PEOPLE_IMPORT_MAX_ROWS,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  app.get<{ Querystring: ListQuery }>('/people', { schema: { querystring } }, async (request, reply) => {
    const base = pageBaseOf(request);
    const view = await readList(peopleList, base.workspace.id, request.query);
    if (!view) return sendInvalidListLink(request, reply);
    const notice = request.query.notice;
    return sendView(request, reply, 'people', {
      title: `People · ${base.workspace.name}`,
      ...base,
      list: view,
      statusLabels: EMPLOYMENT_STATUS_LABELS,
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/people.csv', { schema: { querystring } }, async (request, reply) =>
    sendListCsv(reply, peopleList, accessOf(request).membership.workspace.id, request.query),
  );

  app.get('/people/import', async (request, reply) => importPage(request, reply, 'upload'));

  app.register(async (upload) => {
    await upload.register(fastifyMultipart, { throwFileSizeLimit: false, limits: IMPORT_UPLOAD_LIMITS });
    // Before the cross-site check (a pre-handler), which reads the form's token from the body.
    upload.addHook('preValidation', async (request, reply) => {
      if (!request.isMultipart()) return;
      try {
        request.body = await readImportForm(request);
      } catch (error) {
        // The parser's limits and refusals keep their own answers; anything else it could not read.
        if (frameworkError(error as FastifyError)) throw error;
        return sendPage(
          request,
          reply,
          'error',
          {
            title: 'Form not readable',
            heading: 'This form could not be read',
            message: 'It arrived incomplete or damaged. Go back and send it again.',
          },
          400,
        );
      }
    });

    upload.post('/people/import', async (request, reply) => {
      const csv = uploadedCsv(request);
      if ('error' in csv) return importPage(request, reply, 'upload', { errors: [csv.error] });
      const workspaceId = accessOf(request).membership.workspace.id;
      const preview = await previewPeopleImport(deps, workspaceId, csv.text);
      if (!preview.ok) {
        return importPage(request, reply, 'upload', {
          errors: [{ field: 'file', message: preview.error.message }],
        });
      }
      return importPage(request, reply, 'preview', { result: preview.value, csvText: csv.text });
    });

    upload.post('/people/import/apply', async (request, reply) => {
      const access = accessOf(request);
      let csvText: string;
      try {
        csvText = utf8.decode(Buffer.from(field(request, 'csv_base64'), 'base64'));
      } catch {
        csvText = '';
      }
      if (csvText.trim() === '') return importPage(request, reply, 'upload', { errors: [NO_FILE] });
      const applied = await applyPeopleImport(
        deps,
        access.membership.workspace.id,
        csvText,
        userSourceOf(request, access.user),
      );
      if (!applied.ok) {
        return importPage(request, reply, 'upload', {
          errors: [{ field: 'file', message: applied.error.message }],
        });
      }
      return importPage(request, reply, 'applied', { result: applied.value });
    });
  });

  const { recordOf } = registerRecordPages<Person, PersonForm, UpsertPersonBody, UpdatePersonBody>(app, {
    path: 'people',
    param: 'personId',
    formBody: PersonFormBody,
    formOf,
    emptyForm: EMPTY_PERSON_FORM,
    fieldErrors: PERSON_FIELD_ERRORS,
    refusal,
    notices: NOTICES,
    load: (workspaceId, id) => getPerson(deps, workspaceId, id),
    create: {
      schema: UpsertPersonBody,
      changeOf: (form) => {
        const { name, title, department, ...rest } = changeOf(form);
        return {
          ...rest,
          ...(name ? { name } : {}),
          ...(title ? { title } : {}),
          ...(department ? { department } : {}),
        } as UpsertPersonBody;
      },
      run: async (workspaceId, body, source) => {
        // The API's upsert would update the person with this email; a form that says "add" must not.
        const existing = await findPersonByEmail(deps, workspaceId, body.email);
        if (existing)
          return err({
            code: 'conflict',
            field: 'email',
            message: `${existing.name ?? existing.email} already has this email.`,
          });
        const upserted = await upsertPerson(deps, workspaceId, body, source);
        return upserted.ok ? ok(upserted.value.person) : upserted;
      },
    },
    update: {
      schema: UpdatePersonBody,
      changeOf: (form) => changeOf(form) as UpdatePersonBody,
      run: (workspaceId, id, body, source) => updatePerson(deps, workspaceId, id, body, source),
    },
    newPage: newPersonPage,
    recordPage: personPage,
  });

  app.post<PersonParams & { Body: { left_on?: string } }>(
    '/people/:personId/leave',
    { schema: { body: LeaveFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const person = await recordOf(request);
      if (!person) return sendNotFound(request, reply);
      const body = { employment_status: 'former', left_on: (request.body.left_on ?? '').trim() };
      const invalid = schemaErrors(UpdatePersonBody, body, PERSON_FIELD_ERRORS);
      if (invalid.length > 0) return personPage(request, reply, person, { leaveErrors: invalid });
      const workspaceId = access.membership.workspace.id;
      const updated = await updatePerson(
        deps,
        workspaceId,
        person.id,
        body as UpdatePersonBody,
        userSourceOf(request, access.user),
      );
      if (!updated.ok) {
        if (updated.error.code === 'not_found') return sendNotFound(request, reply);
        return personPage(request, reply, person, { leaveErrors: [refusal(updated.error)] });
      }
      return reply.redirect(`/w/${workspaceId}/people/${person.id}?notice=left`, 303);
    },
  );
}
