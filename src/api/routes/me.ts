import { type Static, Type } from 'typebox';
import { Nullable, RecordId, Timestamp } from '../../shared/wire.ts';
import { getWorkspace } from '../../workspace/index.ts';
import { workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import type { ApiDeps, ApiScope } from '../context.ts';
import { responses } from '../errors.ts';

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
  catalog.name({ Me });
  catalog.events(PlanChanged, 'workspace.plan_changed');
  catalog.events(TermEnded, 'workspace.term_ended');
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
    async (request): Promise<Me> => {
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
    },
  );
}
