import {
  CONTROL_STATUSES,
  CONTROL_THEMES,
  type ControlStatus,
  type ControlTheme,
  countOpenRisksByRating,
  type Evidence,
  evidenceFileUrl,
  getControl,
  listEvidence,
  listRisks,
  listTasks,
  type Readiness,
  type Risk,
  type RiskCell,
  type RiskSeverity,
  readiness,
  severityOf,
  type Task,
} from '../compliance/index.ts';
import type { WebDeps } from './context.ts';

export const STATUS_LABELS: Record<ControlStatus, string> = {
  implemented: 'Implemented',
  in_progress: 'In progress',
  not_started: 'Not started',
  not_applicable: 'Not applicable',
};

export const THEME_LABELS: Record<ControlTheme, string> = {
  organizational: 'Organizational',
  people: 'People',
  physical: 'Physical',
  technological: 'Technological',
};

/** Bars stack the statuses in this order, done first; the legend and the tables follow it. */
export const BAR_ORDER: readonly ControlStatus[] = [
  'implemented',
  'in_progress',
  'not_started',
  'not_applicable',
];

/** One status's share of a bar, in the units of the bar's viewBox (0-100). */
interface BarSegment {
  status: ControlStatus;
  count: number;
  x: number;
  width: number;
}

export interface ReadinessBar {
  key: ControlTheme | 'all';
  label: string;
  total: number;
  applicable: number;
  implemented: number;
  percent: number;
  counts: Record<ControlStatus, number>;
  segments: BarSegment[];
  /** What the bar shows, in words: the text equivalent of the drawing. */
  description: string;
}

function bar(
  key: ReadinessBar['key'],
  label: string,
  counts: Record<ControlStatus, number>,
  percent: number,
): ReadinessBar {
  const total = CONTROL_STATUSES.reduce((sum, status) => sum + counts[status], 0);
  const applicable = total - counts.not_applicable;
  let x = 0;
  const segments = BAR_ORDER.flatMap((status) => {
    if (counts[status] === 0) return [];
    const width = (counts[status] / total) * 100;
    const segment = { status, count: counts[status], x, width };
    x += width;
    return [segment];
  });
  const parts = BAR_ORDER.map((status) => `${counts[status]} ${STATUS_LABELS[status].toLowerCase()}`);
  return {
    key,
    label,
    total,
    applicable,
    implemented: counts.implemented,
    percent,
    counts,
    segments,
    description: `${label}: ${percent}% of applicable controls implemented (${counts.implemented} of ${applicable}); ${parts.join(', ')}.`,
  };
}

export function readinessBars(summary: Readiness): { overall: ReadinessBar; themes: ReadinessBar[] } {
  return {
    overall: bar('all', 'All controls', summary.by_status, summary.percent_implemented),
    themes: CONTROL_THEMES.map((theme) =>
      bar(
        theme,
        THEME_LABELS[theme],
        summary.by_theme[theme].by_status,
        summary.by_theme[theme].percent_implemented,
      ),
    ),
  };
}

export const RATING_LABELS = ['', 'rare', 'unlikely', 'possible', 'likely', 'almost certain'] as const;
export const IMPACT_LABELS = ['', 'negligible', 'minor', 'moderate', 'major', 'severe'] as const;

export interface HeatCell {
  likelihood: number;
  impact: number;
  count: number;
  severity: RiskSeverity;
}

/** Rows from impact 5 down to 1, columns from likelihood 1 to 5: the usual orientation of a risk matrix. */
export function heatMap(cells: readonly RiskCell[]): HeatCell[][] {
  const rows: HeatCell[][] = [];
  for (let impact = 5; impact >= 1; impact--) {
    const row: HeatCell[] = [];
    for (let likelihood = 1; likelihood <= 5; likelihood++) {
      row.push({
        likelihood,
        impact,
        count: cells.find((cell) => cell.likelihood === likelihood && cell.impact === impact)?.count ?? 0,
        severity: severityOf(likelihood * impact),
      });
    }
    rows.push(row);
  }
  return rows;
}

const SHOWN_TASKS = 5;
const SHOWN_EVIDENCE = 5;
const SHOWN_RISKS = 5;

export interface Glance {
  readiness: Readiness;
  bars: { overall: ReadinessBar; themes: ReadinessBar[] };
  /** Open tasks, each with the reference of its control when it has one (the link to the controls list). */
  openTasks: (Task & { controlReference: string | null })[];
  moreOpenTasks: boolean;
  recentEvidence: Evidence[];
  openRiskCount: number;
  highestRisks: Risk[];
  heat: HeatCell[][];
}

/**
 * What the overview page shows of a workspace, read through the same compliance functions the
 * REST API answers with, so the page and `GET /api/v1/readiness` cannot disagree.
 */
export async function workspaceGlance(deps: WebDeps, workspaceId: string): Promise<Glance> {
  const summary = await readiness(deps, workspaceId);
  const tasks = await listTasks(deps, workspaceId, { status: 'open' }, { limit: SHOWN_TASKS + 1 });
  const evidence = await listEvidence(
    { db: deps.db, downloadUrl: (id) => evidenceFileUrl(deps.config.baseUrl, id) },
    workspaceId,
    {},
    { limit: SHOWN_EVIDENCE },
  );
  const highestRisks = await listRisks(deps, workspaceId, { status: 'open' }, { limit: SHOWN_RISKS });
  const riskCells = await countOpenRisksByRating(deps, workspaceId);
  return {
    readiness: summary,
    bars: readinessBars(summary),
    openTasks: await Promise.all(
      tasks.items.slice(0, SHOWN_TASKS).map(async (task) => ({
        ...task,
        controlReference: task.control_id
          ? ((await getControl(deps, workspaceId, task.control_id))?.reference ?? null)
          : null,
      })),
    ),
    moreOpenTasks: tasks.items.length > SHOWN_TASKS,
    recentEvidence: evidence.items,
    openRiskCount: riskCells.reduce((sum, cell) => sum + cell.count, 0),
    highestRisks: highestRisks.items,
    heat: heatMap(riskCells),
  };
}
