import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeCursor, encodeCursor } from '../../api/index.ts';
import {
  CONTROL_STATUSES,
  CONTROL_THEMES,
  type ControlStatus,
  type ControlTheme,
  listControls,
  listPeople,
  type Person,
  updateControl,
} from '../../compliance/index.ts';
import { type Position, PositionMismatchError } from '../../db/keyset.ts';
import { canManageWorkspace, type Membership } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { field, isIdInput, isStorable } from '../forms.ts';
import { STATUS_LABELS, THEME_LABELS } from '../glance.ts';
import { membershipFor } from '../guard.ts';
import { sendNotFound, sendPage } from '../render.ts';
import type { RouteDeps } from './deps.ts';

/** The REST API's default page size, so a page here is a page there. */
const PAGE_SIZE = 50;
const MAX_QUERY_LENGTH = 200;
const PEOPLE_PAGE = 200;
/** As the REST API bounds it. */
const MAX_JUSTIFICATION_LENGTH = 10_000;

type ControlsRequest = {
  Params: { workspaceId: string };
  Querystring: Record<string, unknown>;
};
type ControlChange = { Params: { workspaceId: string; controlId: string } };

/** What the list shows: its filters, and the page they start at. */
interface ListState {
  filter: { q?: string; status?: ControlStatus; theme?: ControlTheme };
  cursor?: string;
}

function isStatus(value: string): value is ControlStatus {
  return (CONTROL_STATUSES as readonly string[]).includes(value);
}

function isTheme(value: string): value is ControlTheme {
  return (CONTROL_THEMES as readonly string[]).includes(value);
}

/**
 * The list's state from a query string (or a form's hidden fields): undefined when a value is not
 * one this list offers (an unknown status, text too long, a parameter sent twice).
 */
function listState(read: (name: string) => unknown): ListState | undefined {
  const text = (name: string) => {
    const value = read(name);
    if (value === undefined) return '';
    return typeof value === 'string' && isStorable(value) ? value : undefined;
  };
  const q = text('q')?.trim();
  const status = text('status');
  const theme = text('theme');
  const cursor = text('cursor');
  if (q === undefined || status === undefined || theme === undefined || cursor === undefined)
    return undefined;
  if (q.length > MAX_QUERY_LENGTH) return undefined;
  if (status !== '' && !isStatus(status)) return undefined;
  if (theme !== '' && !isTheme(theme)) return undefined;
  return {
    filter: {
      ...(q ? { q } : {}),
      ...(status ? { status } : {}),
      ...(theme ? { theme } : {}),
    },
    ...(cursor ? { cursor } : {}),
  };
}

function listUrl(workspaceId: string, state: ListState, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({
    ...state.filter,
    ...(state.cursor ? { cursor: state.cursor } : {}),
    ...extra,
  });
  const text = params.toString();
  return `/w/${workspaceId}/controls${text ? `?${text}` : ''}`;
}

function cursorScope(workspaceId: string, filter: ListState['filter']) {
  return { workspaceId, list: 'app/controls', filter };
}

function sendBadList(request: FastifyRequest, reply: FastifyReply, code: string, message: string) {
  return sendPage(
    request,
    reply,
    'error',
    { title: 'Not a filter of this list', heading: 'This list cannot be shown', message, errorCode: code },
    400,
  );
}

/** Every person of the workspace, for the owner choices; a directory is read a page at a time. */
async function allPeople(deps: RouteDeps, workspaceId: string): Promise<Person[]> {
  const people: Person[] = [];
  let after: Position | undefined;
  do {
    const page = await listPeople(deps, workspaceId, {}, { limit: PEOPLE_PAGE, after });
    people.push(...page.items);
    after = page.next ?? undefined;
  } while (after);
  return people;
}

async function controlsPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  membership: Membership,
  state: ListState,
  extra: { notice?: string; error?: { code: string; message: string }; status?: number } = {},
) {
  const { workspace } = membership;
  const scope = cursorScope(workspace.id, state.filter);
  const after = state.cursor === undefined ? undefined : decodeCursor(state.cursor, scope);
  const badCursor = 'The link to this page of the list is not valid; start again from the first page.';
  if (state.cursor !== undefined && !after) return sendBadList(request, reply, 'invalid_cursor', badCursor);
  let page: Awaited<ReturnType<typeof listControls>>;
  try {
    page = await listControls(deps, workspace.id, state.filter, { limit: PAGE_SIZE, after });
  } catch (error) {
    if (error instanceof PositionMismatchError) {
      return sendBadList(request, reply, 'invalid_cursor', badCursor);
    }
    throw error;
  }
  const people = await allPeople(deps, workspace.id);
  const names = new Map(people.map((person) => [person.id, person.name || person.email]));
  const firstPage = { filter: state.filter };
  return sendPage(
    request,
    reply,
    'controls',
    {
      title: `Controls · ${workspace.name}`,
      errorCode: extra.error?.code,
      workspace,
      canManage: canManageWorkspace(membership.role),
      controls: page.items.map((control) => ({
        ...control,
        ownerName: control.owner_id ? (names.get(control.owner_id) ?? control.owner_id) : null,
      })),
      people: people.map((person) => ({ id: person.id, label: names.get(person.id) ?? person.email })),
      state,
      statuses: CONTROL_STATUSES.map((value) => ({ value, label: STATUS_LABELS[value] })),
      themes: CONTROL_THEMES.map((value) => ({ value, label: THEME_LABELS[value] })),
      statusLabels: STATUS_LABELS,
      themeLabels: THEME_LABELS,
      isFiltered: Object.keys(state.filter).length > 0,
      isFirstPage: after === undefined,
      firstPageUrl: listUrl(workspace.id, firstPage),
      nextPageUrl: page.next
        ? listUrl(workspace.id, { ...firstPage, cursor: encodeCursor(page.next, scope) })
        : null,
      notice: extra.notice,
      error: extra.error,
    },
    extra.status ?? (extra.error ? 400 : 200),
  );
}

/**
 * The controls list: every member searches and filters it, and changes a control's status and
 * owner in place. Changing compliance data is a member's work (only Integrations, Billing and the
 * audit log are for owners and admins); the change goes through `updateControl`, as
 * `PATCH /api/v1/controls/{id}` does, and so publishes the same `control.updated` event.
 */
export function controlRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<ControlsRequest>('/w/:workspaceId/controls', async (request, reply) => {
    const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'view');
    if (!access) return reply;
    const state = listState((name) => request.query[name]);
    if (!state) {
      return sendBadList(
        request,
        reply,
        'invalid_filter',
        'Choose a status and a theme from the lists, and search for at most 200 characters.',
      );
    }
    const notice = request.query.notice === 'updated' ? 'Control updated.' : undefined;
    return controlsPage(deps, request, reply, access.membership, state, { notice });
  });

  app.post<ControlChange>('/w/:workspaceId/controls/:controlId', async (request, reply) => {
    const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'view');
    if (!access) return reply;
    const workspaceId = access.membership.workspace.id;
    const state = listState((name) => {
      const value = field(request, `list_${name}`);
      return value === '' ? undefined : value;
    }) ?? { filter: {} };
    const status = field(request, 'status');
    const ownerId = field(request, 'owner_id');
    // Optional: a form without it keeps the stored justification.
    const justification = field(request, 'justification').trim();
    const controlId = request.params.controlId;
    if (
      !isStatus(status) ||
      (ownerId !== '' && !isIdInput(ownerId)) ||
      !isStorable(justification) ||
      justification.length > MAX_JUSTIFICATION_LENGTH
    ) {
      return controlsPage(deps, request, reply, access.membership, state, {
        error: { code: 'invalid_request', message: 'Choose a status and an owner from the lists.' },
      });
    }
    if (!isIdInput(controlId)) return sendNotFound(request, reply);
    const result = await updateControl(
      deps,
      workspaceId,
      controlId,
      {
        status,
        owner_id: ownerId === '' ? null : ownerId,
        ...(justification ? { justification } : {}),
      },
      userSourceOf(request, access.user),
    );
    if (!result.ok) {
      if (result.error.code === 'not_found') return sendNotFound(request, reply);
      if (result.error.code === 'justification_required') {
        return controlsPage(deps, request, reply, access.membership, state, {
          error: {
            code: result.error.code,
            message: 'Say why the control is not applicable before marking it so.',
          },
        });
      }
      return controlsPage(deps, request, reply, access.membership, state, {
        error: {
          code: result.error.code,
          message: 'That person is no longer in the workspace’s directory; choose another owner.',
        },
        status: 409,
      });
    }
    return reply.redirect(`${listUrl(workspaceId, state, { notice: 'updated' })}#${controlId}`, 303);
  });
}
