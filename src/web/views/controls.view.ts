import {
  CONTROL_STATUSES,
  CONTROL_THEMES,
  type Control,
  type ControlStatus,
  type ControlTheme,
  type Person,
} from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import { type Choice, personLabel } from '../choices.ts';
import { STATUS_LABELS, THEME_LABELS } from '../glance.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const STATUS_OPTIONS = CONTROL_STATUSES.map((value) => ({ value, label: STATUS_LABELS[value] }));
export const THEME_OPTIONS = CONTROL_THEMES.map((value) => ({ value, label: THEME_LABELS[value] }));

export const CONTROL_FILTERS: readonly ListFilterField[] = [
  { name: 'q', label: 'Search', kind: 'search' },
  { name: 'status', label: 'Status', kind: 'select', allLabel: 'All statuses', options: STATUS_OPTIONS },
  { name: 'theme', label: 'Theme', kind: 'select', allLabel: 'All themes', options: THEME_OPTIONS },
];

/** A control as a row of the list: with its owner's name, for the owner choice it shows. */
export type ControlRow = Control & { ownerName: string | null };

export interface ControlsView {
  workspace: Workspace;
  canManage: boolean;
  list: ListView<ControlRow>;
  /** The list's filters and page, which each row's form carries back (as `list_*`). */
  listState: Record<string, string>;
  people: Choice[];
  statuses: typeof STATUS_OPTIONS;
  themeLabels: Record<ControlTheme, string>;
  statusLabels: Record<ControlStatus, string>;
  notice: string | undefined;
  error: { code: string; message: string } | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    controls: ControlsView;
  }
}

export function controlRows(controls: Control[], people: Person[]): ControlRow[] {
  const names = new Map(people.map((person) => [person.id, personLabel(person)]));
  return controls.map((control) => ({
    ...control,
    ownerName: control.owner_id ? (names.get(control.owner_id) ?? control.owner_id) : null,
  }));
}

export const CONTROL_VIEW_LABELS = { themeLabels: THEME_LABELS, statusLabels: STATUS_LABELS };
