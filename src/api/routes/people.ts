import { Type } from 'typebox';
import {
  applyPeopleImport,
  getPerson,
  listPeople,
  PEOPLE_IMPORT_MAX_BYTES,
  PeopleFilter,
  PeopleImportResult,
  Person,
  previewPeopleImport,
  UpdatePersonBody,
  UpsertPersonBody,
  updatePerson,
  upsertPerson,
} from '../../compliance/index.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['People'];

const ImportQuery = Type.Object({
  dry_run: Type.Optional(Type.Boolean({ description: 'true: preview the import, write nothing.' })),
});

const CsvText = Type.String({
  description: 'UTF-8 CSV (RFC 4180): a header row, then one person a row.',
  examples: ['email,name,title\r\nada@example.com,"Lovelace, Ada",CTO\r\n'],
});

export function peopleRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Person, UpsertPersonBody, UpdatePersonBody, PeopleImportResult });
  catalog.events(Person, 'person.created', 'person.updated', 'person.left');
  app.addContentTypeParser(
    'text/csv',
    { parseAs: 'string', bodyLimit: PEOPLE_IMPORT_MAX_BYTES },
    (_request, body, done) => done(null, body),
  );
  app.get(
    '/people',
    {
      schema: {
        operationId: 'listPeople',
        summary: 'List the people of the directory',
        description: 'Oldest first. `q` searches the name and the email.',
        tags,
        querystring: listQuery(PeopleFilter),
        response: responses({ 200: pageOf(Person) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'people', request.query, (workspaceId, filter, page) =>
        listPeople(deps, workspaceId, filter, page),
      ),
  );

  app.post(
    '/people',
    {
      schema: {
        operationId: 'upsertPerson',
        summary: 'Add or update a person by email (idempotent)',
        description:
          '201 when the email is new; 200 with the person otherwise, updated when the body differs. ' +
          'Sending the same body twice changes nothing.',
        tags,
        body: UpsertPersonBody,
        response: responses({ 200: Person, 201: Person }),
      },
    },
    async (request, reply) => {
      const result = await upsertPerson(deps, workspaceOf(request), request.body, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'person');
      return reply.code(result.value.outcome === 'created' ? 201 : 200).send(result.value.person);
    },
  );

  app.post(
    '/people/import',
    {
      schema: {
        operationId: 'importPeople',
        summary: 'Import people from a CSV file (idempotent), or preview the import',
        description:
          'A `text/csv` body of at most 1 MiB and 5,000 rows; its header names the columns: `email` ' +
          '(required), `name`, `title`, `department`, `employment_status`. Each row is an upsert by ' +
          'email, as `POST /people`: a column not in the header leaves that field alone, an empty cell ' +
          'clears a text field. Rows with a bad email, a value too long, an unknown employment status ' +
          'or an email another row also has are refused and reported; the others are applied, in one ' +
          'transaction. `dry_run=true` reports the same classification without writing anything. ' +
          'Importing the same file twice changes nothing the second time. A file that cannot be read ' +
          'as a whole is a 400 `invalid_import`.',
        tags,
        querystring: ImportQuery,
        body: { content: { 'text/csv': { schema: CsvText } } },
        response: responses({ 200: PeopleImportResult }, [413, 415]),
      },
    },
    async (request, reply) => {
      // Only the text/csv parser gives a string; any other media type is not a file.
      const csvText = request.body;
      if (request.mediaType !== 'text/csv' || typeof csvText !== 'string') {
        return sendProblem(
          reply,
          problem(request, 415, 'unsupported_media_type', 'Send the file as text/csv.'),
        );
      }
      const workspaceId = workspaceOf(request);
      const result = request.query.dry_run
        ? await previewPeopleImport(deps, workspaceId, csvText)
        : await applyPeopleImport(deps, workspaceId, csvText, auditSourceOf(request));
      if (result.ok) return result.value;
      return sendProblem(
        reply,
        problem(request, 400, result.error.code, result.error.message, [
          { path: 'body', message: result.error.message },
        ]),
      );
    },
  );

  app.get(
    '/people/:id',
    {
      schema: {
        operationId: 'getPerson',
        summary: 'Get a person',
        tags,
        params: IdParams,
        response: responses({ 200: Person }, [404]),
      },
    },
    async (request, reply) =>
      (await getPerson(deps, workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'person'),
  );

  app.patch(
    '/people/:id',
    {
      schema: {
        operationId: 'updatePerson',
        summary: 'Change a person; mark them as left with `employment_status: former` and `left_on`',
        tags,
        params: IdParams,
        body: UpdatePersonBody,
        response: responses({ 200: Person }, [404, 409]),
      },
    },
    async (request, reply) => {
      const result = await updatePerson(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'person');
    },
  );
}
