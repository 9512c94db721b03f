import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { readsVersion } from '../../db/changes.ts';
import { invalidRequest, sendProblem } from '../../http/problem.ts';
import { Nullable, RecordId, Timestamp } from '../../shared/wire.ts';
import {
  getWorkspace,
  type RenameError,
  renameWorkspace,
  WORKSPACE_NAME_MAX,
  WORKSPACE_NAME_PATTERN,
} from '../../workspace/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import type { ApiDeps, ApiScope } from '../context.ts';
import { responses, sendNotFound } from '../errors.ts';
import { PageCache, sendJson } from '../page-cache.ts';

export const Me = Type.Object(
  {
    organization: Type.Object({ id: RecordId('ws'), name: Type.String() }),
    plan: Type.Enum(['free', 'starter', 'pro', 'enterprise', 'msp']),
    term: Nullable(
      Type.Object(
        {
          plan: Type.String(),
          term: Type.Enum(['month', 'year']),
          starts_at: Timestamp,
          ends_at: Timestamp,
          renews: Type.Literal(false, {
            description: 'Terms are prepaid; the workspace moves to Free at the end.',
          }),
        },
        { description: 'The prepaid term in force; null on the Free plan.' },
      ),
    ),
    api_key: Type.Object({
      id: RecordId('key'),
      name: Type.String(),
      prefix: Type.String({ description: 'The start of the key, to recognise it.' }),
    }),
  },
  {
    description: 'The organization (workspace) the API key belongs to.',
    examples: [
      {
        organization: { id: 'ws_06f1k2m3n4p5q6r7s8t9v0w1x2', name: 'Acme Ltd' },
        plan: 'pro',
        term: {
          plan: 'pro',
          term: 'year',
          starts_at: '2026-01-05T09:00:00.000Z',
          ends_at: '2027-01-05T09:00:00.000Z',
          renews: false,
        },
        api_key: { id: 'key_06f1k2m3n4p5q6r7s8t9v0w1x2', name: 'Compliance agent', prefix: 'svc_live_4fQx' },
      },
    ],
  },
);
type Me = Static<typeof Me>;

const WorkspaceName = Type.String({
  pattern: WORKSPACE_NAME_PATTERN,
  description:
    `The new name. Leading and trailing white space is dropped; what remains is 1 to ${WORKSPACE_NAME_MAX} ` +
    'characters, without control characters (line breaks, tabs) or text-direction controls ' +
    '(U+202A to U+202E, U+2066 to U+2069). The same rule as the Settings page.',
});

export const UpdateMeBody = Type.Object(
  {
    organization: Type.Object({ name: WorkspaceName }, { additionalProperties: false, minProperties: 1 }),
  },
  {
    additionalProperties: false,
    description: 'What can change of the organization: its name.',
    examples: [{ organization: { name: 'Acme Holdings Ltd' } }],
  },
);

const WorkspaceRenamed = Type.Object({
  previous_name: Type.String(),
  name: Type.String(),
});

const PlanChanged = Type.Object({
  previous_plan: Type.String(),
  plan: Type.String(),
  reason: Type.Enum(['term_ended', 'term_purchased', 'next_term_started'], {
    description:
      'Why the plan changed: the term ended (to Free), a term bought on Free started, or the next paid term started.',
  }),
});
const TermEnded = Type.Object({
  plan: Type.String(),
  term: Type.Enum(['month', 'year']),
  starts_at: Timestamp,
  ends_at: Timestamp,
  renews: Type.Literal(false),
});

export function meRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Me, UpdateMeBody });
  catalog.events(PlanChanged, 'workspace.plan_changed');
  catalog.events(WorkspaceRenamed, 'workspace.renamed');
  catalog.events(TermEnded, 'workspace.term_ended');
  // Each key's answer, kept under the database's version of what may be kept (src/db/changes.ts).
  const answers = new PageCache();
  app.get(
    '/me',
    {
      schema: {
        operationId: 'getMe',
        summary: 'Test the connection: the organization of the key, its plan and term',
        tags: ['Organization'],
        response: responses({ 200: Me }),
      },
    },
    (request, reply) => {
      const version = readsVersion(deps.db);
      if (version === undefined) return meOf(deps, request);
      const { keyId, name, prefix } = request.principal ?? {};
      const key = `${keyId}\n${name}\n${prefix}`;
      const kept = answers.get(key, version);
      if (kept !== undefined) {
        // Sent at once, without a promise: it would cost a turn of the microtask queue.
        sendJson(reply, kept);
        return;
      }
      // Async, answering the reply: Fastify then waits until it has been sent.
      const readAndKeep = async () => {
        // Built field by field in the schema's order, so it is serialized as it is.
        const body = JSON.stringify(await meOf(deps, request));
        return sendJson(reply, answers.set(key, version, body));
      };
      return readAndKeep();
    },
  );
  app.patch(
    '/me',
    {
      schema: {
        operationId: 'updateMe',
        summary: 'Rename the organization',
        description:
          'Renames the workspace, as an owner does on its Settings page, under the same rule. The key ' +
          'acts for the workspace: the audit log names it, and subscriptions get `workspace.renamed`. ' +
          'The same name again changes nothing and sends no event. Answers what GET /me answers.',
        tags: ['Organization'],
        body: UpdateMeBody,
        response: responses({ 200: Me }, [404]),
      },
    },
    async (request, reply) => {
      const result = await renameWorkspace(
        deps.db,
        deps.clock,
        { workspaceId: workspaceOf(request), name: request.body.organization.name, by: { kind: 'api_key' } },
        auditSourceOf(request),
      );
      if (!result.ok) return sendRenameError(request, reply, result.error);
      return meOf(deps, request);
    },
  );
}

async function meOf(deps: ApiDeps, request: FastifyRequest): Promise<Me> {
  const workspaceId = workspaceOf(request);
  const workspace = await getWorkspace(deps.db, workspaceId);
  const key = request.principal;
  if (!workspace || !key) throw new Error(`authenticated key of missing workspace ${workspaceId}`);
  const term = workspace.currentTerm;
  return {
    organization: { id: workspace.id, name: workspace.name },
    plan: workspace.plan,
    term: term && {
      plan: term.plan,
      term: term.term,
      starts_at: term.startsAt.toISOString(),
      ends_at: term.endsAt.toISOString(),
      renews: false,
    },
    api_key: { id: key.keyId, name: key.name, prefix: key.prefix },
  };
}

/** The schema refuses a bad name first; the domain's own check answers the same way. */
function sendRenameError(request: FastifyRequest, reply: FastifyReply, error: RenameError): FastifyReply {
  switch (error.code) {
    case 'invalid_name':
      return sendProblem(
        reply,
        invalidRequest(request, [{ path: 'body/organization/name', message: NAME_REFUSALS[error.reason] }]),
      );
    case 'not_found':
    case 'forbidden':
      // A key acts for its own workspace; it is gone only if the workspace is.
      return sendNotFound(request, reply, 'organization');
  }
}

const NAME_REFUSALS = {
  empty: 'must not be empty',
  too_long: `must be at most ${WORKSPACE_NAME_MAX} characters`,
  refused_characters: 'must not contain control or text-direction characters',
} as const;
