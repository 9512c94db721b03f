import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import { type Param, preparedQuery } from '../db/prepared.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { IdInput, iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { ControlStatus, ControlsTable, ControlTheme } from './compliance.table.ts';
import annexA from './iso27001-2022-annex-a.json' with { type: 'json' };
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  fieldChanges,
  lockWorkspaceRow,
  missingReference,
  notFound,
  recordChange,
} from './shared.ts';

export const CONTROL_STATUSES = [
  'not_started',
  'in_progress',
  'implemented',
  'not_applicable',
] as const satisfies readonly ControlStatus[];
export const CONTROL_THEMES = [
  'organizational',
  'people',
  'physical',
  'technological',
] as const satisfies readonly ControlTheme[];

const ControlStatusSchema = Type.Enum(CONTROL_STATUSES, {
  description: 'not_applicable excludes the control from the Statement of Applicability.',
});
const ControlThemeSchema = Type.Enum(CONTROL_THEMES);

export const Control = Type.Object(
  {
    id: RecordId('ctl'),
    reference: Type.String({ description: 'The Annex A reference.', examples: ['A.5.1'] }),
    title: Type.String({ examples: ['Policies for information security'] }),
    theme: ControlThemeSchema,
    status: ControlStatusSchema,
    owner_id: Nullable(RecordId('per', 'The person responsible (see /people).')),
    notes: Nullable(Type.String()),
    justification: Nullable(
      Type.String({
        description:
          'Why the control is included in or excluded from the Statement of Applicability (ISO/IEC 27001 6.1.3 d).',
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'An ISO/IEC 27001:2022 Annex A control of the workspace.',
    examples: [
      {
        id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x2',
        reference: 'A.5.15',
        title: 'Access control',
        theme: 'organizational',
        status: 'in_progress',
        owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
        notes: 'Role-based access in the identity provider; quarterly reviews start in December.',
        justification: 'Customer data is reached only through named accounts; required by our contracts.',
        created_at: '2026-01-05T09:00:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Control = Static<typeof Control>;

export const UpdateControlBody = Type.Object(
  {
    status: Type.Optional(ControlStatusSchema),
    owner_id: Type.Optional(Nullable(IdInput('A person of the workspace, or null for no owner.'))),
    notes: Type.Optional(Nullable(Text(10_000))),
    justification: Type.Optional(
      Nullable(
        Text(10_000, {
          description:
            'Why the control is in or out of the Statement of Applicability. Required (here or already stored) to set status not_applicable; 400 justification_required otherwise.',
        }),
      ),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [
      { status: 'implemented', owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2' },
      { status: 'not_applicable', justification: 'No offices: all staff work remotely.' },
    ],
  },
);
export type UpdateControlBody = Static<typeof UpdateControlBody>;

export const ControlsFilter = Type.Object({
  q: Type.Optional(Text(200, { description: 'Matches part of the reference or title, case-insensitively.' })),
  status: Type.Optional(ControlStatusSchema),
  theme: Type.Optional(ControlThemeSchema),
  owner_id: Type.Optional(IdInput('Only controls owned by this person.')),
});
export type ControlsFilter = Static<typeof ControlsFilter>;

function toControl(row: ControlsTable): Control {
  return {
    id: row.id,
    reference: row.reference,
    title: row.title,
    theme: row.theme,
    status: row.status,
    owner_id: row.owner_id,
    notes: row.notes,
    justification: row.justification,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** How many workspaces a process remembers as seeded before it forgets them all and asks again. */
const SEEDED_REMEMBERED = 100_000;

/** Per database handle: the workspaces known to have their controls, which nothing takes away. */
const seededWorkspaces = new WeakMap<Db, Set<string>>();

/**
 * Gives the workspace the 93 Annex A controls, not started, in the order of the standard, unless
 * it has them: every function here that reads or changes controls calls this first. A workspace is
 * seeded on first use rather than when it is bought, which keeps 93 rows and their pages out of
 * the purchase (see docs/decisions.md). Two first uses at once, in any instances, seed once: the
 * second insert finds every reference taken and adds nothing. A control id exists only once
 * seeded, so a body naming a control id needs no seed to be checked.
 */
export async function ensureControls({ db, clock }: ComplianceDeps, workspaceId: string): Promise<void> {
  const rememberable = !db.isTransaction;
  if (rememberable && seededWorkspaces.get(db)?.has(workspaceId)) return;
  const seeded = await db
    .selectFrom('controls')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .limit(1)
    .executeTakeFirst();
  if (!seeded) {
    const at = clock.now();
    const values: SeedValues = { workspaceId, at: at.getTime() };
    for (let position = 0; position < annexA.length; position++) values[`id${position}`] = newId('ctl', at);
    await insertAnnexA(db, values);
  }
  if (!rememberable) return;
  // Read after the awaits: another first use on this handle may have made the set meanwhile.
  const remembered = seededWorkspaces.get(db) ?? new Set<string>();
  seededWorkspaces.set(db, remembered);
  if (remembered.size >= SEEDED_REMEMBERED) remembered.clear();
  remembered.add(workspaceId);
}

type SeedValues = Record<string, string | number>;

/**
 * The 93-row insert of the seed, compiled once: only the ids, the workspace and the time vary.
 * Built through the query builder on every seed, it cost more than running it.
 */
const insertAnnexA = preparedQuery((db, param: Param<SeedValues>) =>
  db
    .insertInto('controls')
    .values(
      annexA.map(
        (control, position): ControlsTable => ({
          id: param(`id${position}`),
          workspace_id: param('workspaceId'),
          reference: `A.${control.id}`,
          title: control.title,
          theme: control.theme as ControlTheme,
          position,
          status: 'not_started',
          owner_id: null,
          notes: null,
          justification: null,
          created_at: param('at'),
          updated_at: param('at'),
        }),
      ),
    )
    .onConflict((conflict) => conflict.columns(['workspace_id', 'reference']).doNothing()),
);

export async function listControls(
  deps: ComplianceDeps,
  workspaceId: string,
  filter: ControlsFilter,
  page: PageRequest,
): Promise<Page<Control>> {
  await ensureControls(deps, workspaceId);
  let query = deps.db.selectFrom('controls').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.theme) query = query.where('theme', '=', filter.theme);
  if (filter.owner_id) query = query.where('owner_id', '=', filter.owner_id);
  if (filter.q) query = query.where(containsText(['reference', 'title'], filter.q));
  const { rows, next } = await fetchPage(
    query,
    {
      direction: 'asc',
      columns: [
        { column: 'position', type: 'integer' },
        { column: 'id', type: 'string' },
      ],
    },
    page,
  );
  return { items: rows.map(toControl), next };
}

/** A control of the workspace by its id or its Annex A reference (`A.5.1`). */
export async function getControl(
  deps: ComplianceDeps,
  workspaceId: string,
  idOrReference: string,
): Promise<Control | undefined> {
  await ensureControls(deps, workspaceId);
  const row = await deps.db
    .selectFrom('controls')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('id', '=', idOrReference), eb('reference', '=', idOrReference)]))
    .executeTakeFirst();
  return row ? toControl(row) : undefined;
}

/**
 * A control marked not_applicable is excluded from the Statement of Applicability, which must say
 * why (ISO/IEC 27001 6.1.3 d). Checked only when a change sets the status or the justification, so
 * a control excluded before justifications existed can still be given an owner.
 */
function lacksJustification(body: UpdateControlBody, row: ControlsTable): boolean {
  const touchesApplicability = body.status !== undefined || body.justification !== undefined;
  return touchesApplicability && row.status === 'not_applicable' && !row.justification?.trim();
}

export async function updateControl(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdateControlBody,
  source: AuditSource,
): Promise<Result<Control, ComplianceError>> {
  await ensureControls(deps, workspaceId);
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'controls', workspaceId, id);
    if (!existing) return err(notFound);
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    const keys = changedKeys(existing, body);
    if (keys.length === 0) return ok(toControl(existing));
    const row: ControlsTable = { ...existing, ...body, updated_at: deps.clock.now().getTime() };
    if (lacksJustification(body, row)) return err({ code: 'justification_required' });
    await trx
      .updateTable('controls')
      .set({
        status: row.status,
        owner_id: row.owner_id,
        notes: row.notes,
        justification: row.justification,
        updated_at: row.updated_at,
      })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const control = toControl(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'control.updated',
      data: control,
      target: { type: 'control', id: control.id, label: `${control.reference} ${control.title}` },
      changes: fieldChanges(existing, body),
    });
    return ok(control);
  });
}

const StatusCounts = Type.Object(
  Object.fromEntries(CONTROL_STATUSES.map((status) => [status, Type.Integer({ minimum: 0 })])) as Record<
    ControlStatus,
    ReturnType<typeof Type.Integer>
  >,
);

const ThemeReadiness = Type.Object({
  total: Type.Integer(),
  by_status: StatusCounts,
  percent_implemented: Type.Number({ description: 'Implemented of applicable controls, 0-100.' }),
});

export const Readiness = Type.Object(
  {
    framework: Type.Literal('iso27001:2022'),
    total: Type.Integer({ description: 'Annex A controls in the workspace (93).' }),
    applicable: Type.Integer({ description: 'Controls not marked not_applicable.' }),
    implemented: Type.Integer(),
    percent_implemented: Type.Number({
      description: 'Implemented of applicable controls, 0-100, one decimal; 0 when none is applicable.',
    }),
    by_status: StatusCounts,
    by_theme: Type.Object(
      Object.fromEntries(CONTROL_THEMES.map((theme) => [theme, ThemeReadiness])) as Record<
        ControlTheme,
        typeof ThemeReadiness
      >,
    ),
  },
  {
    description: 'ISO 27001 readiness: where the Annex A controls stand.',
    examples: [
      {
        framework: 'iso27001:2022',
        total: 93,
        applicable: 88,
        implemented: 30,
        percent_implemented: 34.1,
        by_status: { not_started: 38, in_progress: 20, implemented: 30, not_applicable: 5 },
        by_theme: {
          organizational: {
            total: 37,
            by_status: { not_started: 15, in_progress: 9, implemented: 12, not_applicable: 1 },
            percent_implemented: 33.3,
          },
          people: {
            total: 8,
            by_status: { not_started: 2, in_progress: 2, implemented: 4, not_applicable: 0 },
            percent_implemented: 50,
          },
          physical: {
            total: 14,
            by_status: { not_started: 6, in_progress: 1, implemented: 3, not_applicable: 4 },
            percent_implemented: 30,
          },
          technological: {
            total: 34,
            by_status: { not_started: 15, in_progress: 8, implemented: 11, not_applicable: 0 },
            percent_implemented: 32.4,
          },
        },
      },
    ],
  },
);
export type Readiness = Static<typeof Readiness>;

type StatusCount = Record<ControlStatus, number>;

function emptyCounts(): StatusCount {
  return { not_started: 0, in_progress: 0, implemented: 0, not_applicable: 0 };
}

function percentImplemented(counts: StatusCount): number {
  const applicable = Object.values(counts).reduce((a, b) => a + b, 0) - counts.not_applicable;
  return applicable === 0 ? 0 : Math.round((counts.implemented / applicable) * 1000) / 10;
}

export async function readiness(deps: ComplianceDeps, workspaceId: string): Promise<Readiness> {
  await ensureControls(deps, workspaceId);
  const rows = await deps.db
    .selectFrom('controls')
    .select(['theme', 'status', (eb) => eb.fn.countAll<number>().as('count')])
    .where('workspace_id', '=', workspaceId)
    .groupBy(['theme', 'status'])
    .execute();
  const byStatus = emptyCounts();
  const byTheme = Object.fromEntries(CONTROL_THEMES.map((theme) => [theme, emptyCounts()])) as Record<
    ControlTheme,
    StatusCount
  >;
  for (const row of rows) {
    const count = Number(row.count);
    byStatus[row.status] += count;
    byTheme[row.theme][row.status] += count;
  }
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  return {
    framework: 'iso27001:2022',
    total,
    applicable: total - byStatus.not_applicable,
    implemented: byStatus.implemented,
    percent_implemented: percentImplemented(byStatus),
    by_status: byStatus,
    by_theme: Object.fromEntries(
      CONTROL_THEMES.map((theme) => {
        const counts = byTheme[theme];
        const themeTotal = Object.values(counts).reduce((a, b) => a + b, 0);
        return [
          theme,
          { total: themeTotal, by_status: counts, percent_implemented: percentImplemented(counts) },
        ];
      }),
    ) as Readiness['by_theme'],
  };
}
