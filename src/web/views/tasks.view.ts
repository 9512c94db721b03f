import type { Task } from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { Choice } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const TASK_VIEWS = [
  { value: 'open', label: 'Open' },
  { value: 'completed', label: 'Completed' },
  { value: 'mine', label: 'Mine (open, assigned to me)' },
  { value: 'overdue', label: 'Overdue' },
] as const;

export const TASK_FILTERS: readonly ListFilterField[] = [
  { name: 'show', label: 'Show', kind: 'select', allLabel: 'All tasks', options: TASK_VIEWS },
  { name: 'q', label: 'Search', kind: 'search' },
];

/** A task as the pages show it: with its assignee's and control's names and whether it is late. */
export type TaskRow = Task & { assigneeName: string | null; controlLabel: string | null; isOverdue: boolean };

/** The values of the task form, as typed (so a refused form comes back as it was sent). */
export interface TaskForm {
  title: string;
  description: string;
  due_date: string;
  assignee_id: string;
  control_id: string;
}

interface TaskPage {
  workspace: Workspace;
  canManage: boolean;
}

export interface TasksView extends TaskPage {
  list: ListView<TaskRow>;
  notice: string | undefined;
}

export interface TaskFormView extends TaskPage {
  form: TaskForm;
  people: Choice[];
  controls: Choice[];
  errors: FieldError[];
}

export interface TaskView extends TaskFormView {
  task: TaskRow;
  history: HistoryEntry[];
  notice: string | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    tasks: TasksView;
    'task-new': TaskFormView;
    task: TaskView;
  }
}

/** Names for a task's people and control, from the choices a page read anyway. */
export function taskRows(tasks: Task[], people: Choice[], controls: Choice[], today: string): TaskRow[] {
  const personNames = new Map(people.map((choice) => [choice.value, choice.label]));
  const controlNames = new Map(controls.map((choice) => [choice.value, choice.label]));
  return tasks.map((task) => ({
    ...task,
    assigneeName: task.assignee_id ? (personNames.get(task.assignee_id) ?? null) : null,
    controlLabel: task.control_id ? (controlNames.get(task.control_id) ?? null) : null,
    isOverdue: task.status === 'open' && task.due_date !== null && task.due_date < today,
  }));
}

export function taskForm(task: Task): TaskForm {
  return {
    title: task.title,
    description: task.description,
    due_date: task.due_date ?? '',
    assignee_id: task.assignee_id ?? '',
    control_id: task.control_id ?? '',
  };
}

/** How the form's fields are refused: the REST API's rules, in the page's words. */
export const TASK_FIELD_ERRORS: Record<string, FieldError> = {
  title: { field: 'title', message: 'Give the task a title of at most 200 characters.' },
  description: { field: 'description', message: 'Keep the description under 10,000 characters.' },
  due_date: { field: 'due_date', message: 'Enter the due date as a date, like 2026-12-31.' },
  assignee_id: { field: 'assignee_id', message: 'Choose the assignee from the list.' },
  control_id: { field: 'control_id', message: 'Choose the control from the list.' },
};
