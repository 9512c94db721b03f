import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import {
  CalendarDate,
  IdInput,
  iso,
  isoOrNull,
  Nullable,
  RecordId,
  Text,
  Timestamp,
} from '../shared/wire.ts';
import type { EventType } from '../webhooks/index.ts';
import type { TaskStatus, TasksTable } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  deleteRecord,
  fieldChanges,
  findWorkspaceRow,
  lockWorkspaceRow,
  missingReference,
  notFound,
  recordChange,
} from './shared.ts';

const TASK_STATUSES = ['open', 'completed'] as const satisfies readonly TaskStatus[];
const TaskStatusSchema = Type.Enum(TASK_STATUSES);

export const Task = Type.Object(
  {
    id: RecordId('tsk'),
    title: Type.String(),
    description: Type.String(),
    status: TaskStatusSchema,
    due_date: Nullable(CalendarDate),
    assignee_id: Nullable(RecordId('per', 'The person the task is assigned to.')),
    control_id: Nullable(RecordId('ctl', 'The control the task helps implement.')),
    completed_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A piece of work towards readiness, open or completed.',
    examples: [
      {
        id: 'tsk_06f1k2m3n4p5q6r7s8t9v0w1x2',
        title: 'Run the quarterly access review',
        description: 'Check admin and production access against the leavers list.',
        status: 'open',
        due_date: '2026-12-15',
        assignee_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
        control_id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x2',
        completed_at: null,
        created_at: '2026-11-23T10:15:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Task = Static<typeof Task>;

const references = {
  due_date: Type.Optional(Nullable(CalendarDate)),
  assignee_id: Type.Optional(Nullable(IdInput('A person of the workspace.'))),
  control_id: Type.Optional(Nullable(IdInput('A control of the workspace.'))),
};

export const CreateTaskBody = Type.Object(
  {
    title: Text(200, { minLength: 1 }),
    description: Type.Optional(Text(10_000)),
    ...references,
  },
  {
    additionalProperties: false,
    examples: [
      {
        title: 'Write the access control policy',
        description: 'Draft, review with the CTO, publish.',
        due_date: '2026-12-15',
      },
    ],
  },
);
export type CreateTaskBody = Static<typeof CreateTaskBody>;

export const UpdateTaskBody = Type.Object(
  {
    title: Type.Optional(Text(200, { minLength: 1 })),
    description: Type.Optional(Text(10_000)),
    status: Type.Optional(
      Type.Enum(TASK_STATUSES, { description: 'completed completes the task; open reopens it.' }),
    ),
    ...references,
  },
  { additionalProperties: false, minProperties: 1, examples: [{ status: 'completed' }] },
);
export type UpdateTaskBody = Static<typeof UpdateTaskBody>;

export const TasksFilter = Type.Object({
  status: Type.Optional(TaskStatusSchema),
  assignee_id: Type.Optional(IdInput('Only tasks assigned to this person.')),
  control_id: Type.Optional(IdInput('Only tasks linked to this control.')),
  due_before: Type.Optional(
    Type.String({
      format: 'date',
      description: 'Only open tasks due before this date: overdue ones, given today.',
    }),
  ),
  q: Type.Optional(
    Text(200, { description: 'Matches part of the title or description, case-insensitively.' }),
  ),
});
export type TasksFilter = Static<typeof TasksFilter>;

function toTask(row: TasksTable): Task {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    status: row.status,
    due_date: row.due_date,
    assignee_id: row.assignee_id,
    control_id: row.control_id,
    completed_at: isoOrNull(row.completed_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function referencesOf(body: CreateTaskBody | UpdateTaskBody) {
  return [
    { field: 'assignee_id', kind: 'person' as const, id: body.assignee_id },
    { field: 'control_id', kind: 'control' as const, id: body.control_id },
  ];
}

export async function listTasks(
  { db }: ComplianceDeps,
  workspaceId: string,
  filter: TasksFilter,
  page: PageRequest,
): Promise<Page<Task>> {
  let query = db.selectFrom('tasks').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.assignee_id) query = query.where('assignee_id', '=', filter.assignee_id);
  if (filter.control_id) query = query.where('control_id', '=', filter.control_id);
  if (filter.due_before) {
    query = query.where('status', '=', 'open').where('due_date', '<', filter.due_before);
  }
  if (filter.q) query = query.where(containsText(['title', 'description'], filter.q));
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  return { items: rows.map(toTask), next };
}

export async function getTask(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Task | undefined> {
  const row = await findWorkspaceRow(db, 'tasks', workspaceId, id);
  return row ? toTask(row) : undefined;
}

export async function createTask(
  deps: ComplianceDeps,
  workspaceId: string,
  body: CreateTaskBody,
  source: AuditSource,
): Promise<Result<Task, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const missing = await missingReference(trx, workspaceId, referencesOf(body));
    if (missing) return err(missing);
    const now = deps.clock.now();
    const row: TasksTable = {
      id: newId('tsk', now),
      workspace_id: workspaceId,
      title: body.title,
      description: body.description ?? '',
      status: 'open',
      due_date: body.due_date ?? null,
      assignee_id: body.assignee_id ?? null,
      control_id: body.control_id ?? null,
      completed_at: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('tasks').values(row).execute();
    const task = toTask(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'task.created',
      data: task,
      target: { type: 'task', id: task.id, label: task.title },
    });
    return ok(task);
  });
}

/** Completing sets `completed_at`; reopening clears it. One event says what happened. */
export async function updateTask(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdateTaskBody,
  source: AuditSource,
): Promise<Result<Task, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'tasks', workspaceId, id);
    if (!existing) return err(notFound);
    const missing = await missingReference(trx, workspaceId, referencesOf(body));
    if (missing) return err(missing);
    if (changedKeys(existing, body).length === 0) return ok(toTask(existing));
    const now = deps.clock.now().getTime();
    const row: TasksTable = { ...existing, ...body, updated_at: now };
    let type: EventType = 'task.updated';
    if (existing.status === 'open' && row.status === 'completed') {
      row.completed_at = now;
      type = 'task.completed';
    } else if (existing.status === 'completed' && row.status === 'open') {
      row.completed_at = null;
      type = 'task.reopened';
    }
    const { id: _id, workspace_id: _workspace, created_at: _created, ...columns } = row;
    await trx
      .updateTable('tasks')
      .set(columns)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const task = toTask(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type,
      data: task,
      target: { type: 'task', id: task.id, label: task.title },
      changes: fieldChanges(existing, body),
    });
    return ok(task);
  });
}

export async function deleteTask(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  source: AuditSource,
): Promise<Result<{ id: string }, ComplianceError>> {
  return deleteRecord(deps, source, 'tasks', workspaceId, id);
}
