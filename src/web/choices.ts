import {
  type Control,
  type ControlTheme,
  listControls,
  listPeople,
  type Person,
} from '../compliance/index.ts';
import type { Position } from '../db/keyset.ts';
import type { WebDeps } from './context.ts';
import { THEME_LABELS } from './glance.ts';

const PAGE = 200;

/** A value a form offers in a list, with what people read. */
export interface Choice {
  value: string;
  label: string;
}

/** Every item of a paged list, read a page at a time. */
export async function readAll<Item>(
  read: (after: Position | undefined) => Promise<{ items: Item[]; next: Position | null }>,
) {
  const items: Item[] = [];
  let after: Position | undefined;
  do {
    const page = await read(after);
    items.push(...page.items);
    after = page.next ?? undefined;
  } while (after);
  return items;
}

/** Every person of the workspace's directory, read a page at a time: the choices of owners and assignees. */
export function allPeople(deps: WebDeps, workspaceId: string): Promise<Person[]> {
  return readAll((after) => listPeople(deps, workspaceId, {}, { limit: PAGE, after }));
}

/** Every control of the workspace in the order of Annex A: the choices of links to controls. */
export function allControls(deps: WebDeps, workspaceId: string): Promise<Control[]> {
  return readAll((after) => listControls(deps, workspaceId, {}, { limit: PAGE, after }));
}

/** How people are named in choices: their name, or their address when they have none. */
export function personLabel(person: Person): string {
  return person.name || person.email;
}

export function personChoices(people: Person[]): Choice[] {
  return people.map((person) => ({ value: person.id, label: personLabel(person) }));
}

export function controlChoices(controls: Control[]): Choice[] {
  return controls.map((control) => ({ value: control.id, label: `${control.reference} ${control.title}` }));
}

/** The Annex A controls of one theme, as a group of checkboxes. */
export interface ControlGroup {
  theme: ControlTheme;
  label: string;
  controls: Choice[];
}

/** The controls by theme, in Annex A order within each. */
export function controlGroups(controls: Control[]): ControlGroup[] {
  return (Object.keys(THEME_LABELS) as ControlTheme[]).map((theme) => ({
    theme,
    label: THEME_LABELS[theme],
    controls: controlChoices(controls.filter((control) => control.theme === theme)),
  }));
}
