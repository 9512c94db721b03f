import {
  getPerson,
  listPeople,
  PeopleFilter,
  Person,
  UpdatePersonBody,
  UpsertPersonBody,
  updatePerson,
  upsertPerson,
} from '../../compliance/index.ts';
import { workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['People'];

export function peopleRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Person, UpsertPersonBody, UpdatePersonBody });
  catalog.events(Person, 'person.created', 'person.updated');
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
      const { person, outcome } = await upsertPerson(deps, workspaceOf(request), request.body);
      return reply.code(outcome === 'created' ? 201 : 200).send(person);
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
        summary: 'Change a person',
        tags,
        params: IdParams,
        body: UpdatePersonBody,
        response: responses({ 200: Person }, [404, 409]),
      },
    },
    async (request, reply) => {
      const result = await updatePerson(deps, workspaceOf(request), request.params.id, request.body);
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'person');
    },
  );
}
