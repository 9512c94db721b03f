import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
import type { FieldError } from '../form-errors.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
} from '../list-page.ts';
import { type FormValues, formFields, formText, registerRecordPages } from '../record-pages.ts';
import { sendNotFound, sendView } from '../render.ts';
import { TASK_FIELD_ERRORS, TASK_FILTERS, type TaskForm, taskForm, taskRows } from '../views/tasks.view.ts';
import { accessOf, type WorkspaceAccess } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type ListQuery = Record<string, string | undefined>;
type TaskParams = { Params: { taskId: string } };

const TaskFormBody = formFields({
  title: 1000,
  description: 20_000,
  due_date: 40,
  assignee_id: 100,
  control_id: 100,
});

const NOTICES: Record<string, string> = {
  created: 'Task created.',
  updated: 'Task updated.',
  completed: 'Task completed.',
  reopened: 'Task reopened.',
};

function formOf(body: FormValues): TaskForm {
  return {
    title: formText(body, 'title'),
    description: formText(body, 'description'),
    due_date: formText(body, 'due_date'),
    assignee_id: formText(body, 'assignee_id'),
    control_id: formText(body, 'control_id'),
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

  const { recordOf } = registerRecordPages(app, {
    path: 'tasks',
    param: 'taskId',
    formBody: TaskFormBody,
    formOf,
    emptyForm: formOf({}),
    fieldErrors: TASK_FIELD_ERRORS,
    refusal,
    notices: NOTICES,
    load: (workspaceId, id) => getTask(deps, workspaceId, id),
    create: {
      schema: CreateTaskBody,
      changeOf: (form) => {
        const { due_date, assignee_id, control_id, ...text } = changeOf(form);
        return {
          ...text,
          ...(due_date ? { due_date } : {}),
          ...(assignee_id ? { assignee_id } : {}),
          ...(control_id ? { control_id } : {}),
        } as CreateTaskBody;
      },
      run: (workspaceId, body, source) => createTask(deps, workspaceId, body, source),
    },
    update: {
      schema: UpdateTaskBody,
      changeOf: (form) => changeOf(form) as UpdateTaskBody,
      run: (workspaceId, id, body, source) => updateTask(deps, workspaceId, id, body, source),
    },
    newPage: newTaskPage,
    recordPage: taskPage,
  });

  for (const [action, status] of [
    ['complete', 'completed'],
    ['reopen', 'open'],
  ] as const) {
    app.post<TaskParams>(`/tasks/:taskId/${action}`, async (request, reply) => {
      const access = accessOf(request);
      const task = await recordOf(request);
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
