import {
  CreateTaskBody,
  createTask,
  deleteTask,
  getTask,
  listTasks,
  Task,
  TasksFilter,
  UpdateTaskBody,
  updateTask,
} from '../../compliance/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, DeletedRecord, IdParams } from '../context.ts';
import { NoContent, responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Tasks'];

export function taskRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Task, CreateTaskBody, UpdateTaskBody });
  catalog.events(Task, 'task.created', 'task.updated', 'task.completed', 'task.reopened');
  catalog.events(DeletedRecord, 'task.deleted');
  app.get(
    '/tasks',
    {
      schema: {
        operationId: 'listTasks',
        summary: 'List open and completed tasks',
        description: 'Oldest first. Filter with `status=open` or `status=completed`.',
        tags,
        querystring: listQuery(TasksFilter),
        response: responses({ 200: pageOf(Task) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'tasks', request.query, (workspaceId, filter, page) =>
        listTasks(deps, workspaceId, filter, page),
      ),
  );

  app.post(
    '/tasks',
    {
      schema: {
        operationId: 'createTask',
        summary: 'Create a task',
        tags,
        body: CreateTaskBody,
        response: responses({ 201: Task }, [404]),
      },
    },
    async (request, reply) => {
      const result = await createTask(deps, workspaceOf(request), request.body, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'task');
      return reply.code(201).send(result.value);
    },
  );

  app.get(
    '/tasks/:id',
    {
      schema: {
        operationId: 'getTask',
        summary: 'Get a task',
        tags,
        params: IdParams,
        response: responses({ 200: Task }, [404]),
      },
    },
    async (request, reply) =>
      (await getTask(deps, workspaceOf(request), request.params.id)) ?? sendNotFound(request, reply, 'task'),
  );

  app.patch(
    '/tasks/:id',
    {
      schema: {
        operationId: 'updateTask',
        summary: 'Change a task; `status` completes or reopens it',
        tags,
        params: IdParams,
        body: UpdateTaskBody,
        response: responses({ 200: Task }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateTask(
        deps,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'task');
    },
  );

  app.delete(
    '/tasks/:id',
    {
      schema: {
        operationId: 'deleteTask',
        summary: 'Delete a task',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [404]),
      },
    },
    async (request, reply) => {
      const result = await deleteTask(deps, workspaceOf(request), request.params.id, auditSourceOf(request));
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'task');
      return reply.code(204).send(null);
    },
  );
}
