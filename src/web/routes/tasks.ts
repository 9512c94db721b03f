import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type ComplianceError,
  CreateTaskBody,
  createTask,
  getTask,
  listTasks,
  type Task,
  type TasksFilter,
  UpdateTaskBody,
  updateTask,
} from '../../compliance/index.ts';
import { canManageWorkspace } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { allControls, allPeople, controlChoices, personChoices } from '../choices.ts';
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
import { sendNotFound, sendView } from '../render.ts';
import {
  EMPTY_TASK_FORM,
  TASK_FIELD_ERRORS,
  TASK_FILTERS,
  type TaskForm,
  taskForm,
  taskRows,
} from '../views/tasks.view.ts';
import { accessOf, type WorkspaceAccess } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type ListQuery = Record<string, string | undefined>;
type TaskParams = { Params: { taskId: string } };

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The task form as sent: text, bounded; the REST API's schema then judges the values. */
const TaskFormBody = Type.Object({
  title: FormText(1000),
  description: FormText(20_000),
  due_date: FormText(40),
  assignee_id: FormText(100),
  control_id: FormText(100),
});

const NOTICES: Record<string, string> = {
  created: 'Task created.',
  updated: 'Task updated.',
  completed: 'Task completed.',
  reopened: 'Task reopened.',
};

function formOf(body: Partial<Record<keyof TaskForm, string>>): TaskForm {
  return {
    title: body.title ?? '',
    description: body.description ?? '',
    due_date: body.due_date ?? '',
    assignee_id: body.assignee_id ?? '',
    control_id: body.control_id ?? '',
  };
}

/** The change a form asks for, as the REST API takes it: an empty choice clears the field. */
function changeOf(form: TaskForm) {
  return {
    title: form.title.trim(),
    description: form.description,
    due_date: form.due_date === '' ? null : form.due_date,
    assignee_id: form.assignee_id === '' ? null : form.assignee_id,
    control_id: form.control_id === '' ? null : form.control_id,
  };
}

function refusal(error: Exclude<ComplianceError, { code: 'not_found' }>): FieldError {
  if (error.code === 'reference_not_found') {
    return TASK_FIELD_ERRORS[error.field] ?? { message: 'Choose from the lists.' };
  }
  return { message: 'The task could not be saved; try again.' };
}

/**
 * Tasks: every member lists them (open, completed, mine, overdue), creates, edits, assigns,
 * completes and reopens them, through the same functions as `/api/v1/tasks`, so the audit log and
 * the webhooks tell the same story whichever door was used.
 */
export function taskRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const today = () => deps.clock.now().toISOString().slice(0, 10);

  async function choices(workspaceId: string) {
    const [people, controls] = await Promise.all([
      allPeople(deps, workspaceId),
      allControls(deps, workspaceId),
    ]);
    return { people, personChoices: personChoices(people), controlChoices: controlChoices(controls) };
  }

  /** The list, read as `show` asks: `mine` is the open tasks of the person with the member's address. */
  function tasksList(access: WorkspaceAccess, people: { id: string; email: string }[]): ListDefinition<Task> {
    const myEmail = access.user.email.toLowerCase();
    const me = people.find((person) => person.email.toLowerCase() === myEmail);
    return {
      name: 'tasks',
      fields: TASK_FILTERS,
      pageSize: PAGE_SIZE,
      read: async (workspaceId, filter, page) => {
        const show = filter.show;
        const domain: TasksFilter = { ...(filter.q ? { q: filter.q } : {}) };
        if (show === 'open' || show === 'completed') domain.status = show;
        if (show === 'overdue') domain.due_before = today();
        if (show === 'mine') {
          if (!me) return { items: [], next: null };
          Object.assign(domain, { status: 'open', assignee_id: me.id });
        }
        return listTasks(deps, workspaceId, domain, page);
      },
      csv: {
        header: [
          'title',
          'status',
          'due_date',
          'assignee_id',
          'control_id',
          'description',
          'completed_at',
          'id',
        ],
        row: (task) => [
          task.title,
          task.status,
          task.due_date,
          task.assignee_id,
          task.control_id,
          task.description,
          task.completed_at,
          task.id,
        ],
      },
    };
  }
  const querystring = listQuerySchema({ name: 'tasks', fields: TASK_FILTERS });

  async function newTaskPage(
    request: FastifyRequest,
    reply: FastifyReply,
    form: TaskForm,
    errors: FieldError[] = [],
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const options = await choices(workspace.id);
    return sendView(
      request,
      reply,
      'task-new',
      {
        title: `New task · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        form,
        people: options.personChoices,
        controls: options.controlChoices,
        errors,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function taskPage(
    request: FastifyRequest,
    reply: FastifyReply,
    task: Task,
    extra: { form?: TaskForm; errors?: FieldError[]; notice?: string } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const options = await choices(workspace.id);
    const [row] = taskRows([task], options.personChoices, options.controlChoices, today());
    if (!row) throw new Error('a task has a row');
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'task',
      {
        title: `${task.title} · Tasks · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        task: row,
        form: extra.form ?? taskForm(task),
        people: options.personChoices,
        controls: options.controlChoices,
        errors,
        history: await recordHistory(deps, workspace.id, task.id),
        notice: extra.notice,
      },
      errors.length > 0 ? 400 : 200,
    );
  }

  async function taskOf(request: FastifyRequest<TaskParams>) {
    const { taskId } = request.params;
    if (!isIdInput(taskId)) return undefined;
    return getTask(deps, accessOf(request).membership.workspace.id, taskId);
  }

  app.get<{ Querystring: ListQuery }>('/tasks', { schema: { querystring } }, async (request, reply) => {
    const access = accessOf(request);
    const { workspace } = access.membership;
    const options = await choices(workspace.id);
    const view = await readList(tasksList(access, options.people), workspace.id, request.query);
    if (!view) return sendInvalidListLink(request, reply);
    const notice = request.query.notice;
    return sendView(request, reply, 'tasks', {
      title: `Tasks · ${workspace.name}`,
      workspace,
      canManage: canManageWorkspace(access.membership.role),
      list: { ...view, items: taskRows(view.items, options.personChoices, options.controlChoices, today()) },
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/tasks.csv', { schema: { querystring } }, async (request, reply) => {
    const access = accessOf(request);
    const people = await allPeople(deps, access.membership.workspace.id);
    return sendListCsv(reply, tasksList(access, people), access.membership.workspace.id, request.query);
  });

  app.get('/tasks/new', async (request, reply) => newTaskPage(request, reply, EMPTY_TASK_FORM));

  app.post<{ Body: Partial<TaskForm> }>(
    '/tasks',
    { schema: { body: TaskFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const form = formOf(request.body);
      const { due_date, assignee_id, control_id, ...text } = changeOf(form);
      const body = {
        ...text,
        ...(due_date ? { due_date } : {}),
        ...(assignee_id ? { assignee_id } : {}),
        ...(control_id ? { control_id } : {}),
      };
      const invalid = schemaErrors(CreateTaskBody, body, TASK_FIELD_ERRORS);
      if (invalid.length > 0) return newTaskPage(request, reply, form, invalid);
      const workspaceId = access.membership.workspace.id;
      const created = await createTask(
        deps,
        workspaceId,
        body as CreateTaskBody,
        userSourceOf(request, access.user),
      );
      if (!created.ok) {
        if (created.error.code === 'not_found') return sendNotFound(request, reply);
        return newTaskPage(request, reply, form, [refusal(created.error)]);
      }
      return reply.redirect(`/w/${workspaceId}/tasks/${created.value.id}?notice=created`, 303);
    },
  );

  app.get<TaskParams & { Querystring: { notice?: string } }>(
    '/tasks/:taskId',
    { schema: { querystring: Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) }) } },
    async (request, reply) => {
      const task = await taskOf(request);
      if (!task) return sendNotFound(request, reply);
      const notice = request.query.notice;
      return taskPage(request, reply, task, { notice: notice ? NOTICES[notice] : undefined });
    },
  );

  app.post<TaskParams & { Body: Partial<TaskForm> }>(
    '/tasks/:taskId',
    { schema: { body: TaskFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const task = await taskOf(request);
      if (!task) return sendNotFound(request, reply);
      const form = formOf(request.body);
      const body = changeOf(form);
      const invalid = schemaErrors(UpdateTaskBody, body, TASK_FIELD_ERRORS);
      if (invalid.length > 0) return taskPage(request, reply, task, { form, errors: invalid });
      const workspaceId = access.membership.workspace.id;
      const updated = await updateTask(
        deps,
        workspaceId,
        task.id,
        body as UpdateTaskBody,
        userSourceOf(request, access.user),
      );
      if (!updated.ok) {
        if (updated.error.code === 'not_found') return sendNotFound(request, reply);
        return taskPage(request, reply, task, { form, errors: [refusal(updated.error)] });
      }
      return reply.redirect(`/w/${workspaceId}/tasks/${task.id}?notice=updated`, 303);
    },
  );

  for (const [action, status] of [
    ['complete', 'completed'],
    ['reopen', 'open'],
  ] as const) {
    app.post<TaskParams>(`/tasks/:taskId/${action}`, async (request, reply) => {
      const access = accessOf(request);
      const task = await taskOf(request);
      if (!task) return sendNotFound(request, reply);
      const workspaceId = access.membership.workspace.id;
      const updated = await updateTask(
        deps,
        workspaceId,
        task.id,
        { status },
        userSourceOf(request, access.user),
      );
      if (!updated.ok) return sendNotFound(request, reply);
      const notice = status === 'completed' ? 'completed' : 'reopened';
      return reply.redirect(`/w/${workspaceId}/tasks/${task.id}?notice=${notice}`, 303);
    });
  }
}
