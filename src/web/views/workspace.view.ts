import type { MemberRole, Workspace } from '../../workspace/index.ts';
import type { BAR_ORDER, Glance, IMPACT_LABELS, RATING_LABELS, STATUS_LABELS } from '../glance.ts';

/** The workspace at a glance (`workspace.eta`): plan and terms, readiness, tasks, evidence, risks. */
export interface WorkspaceView {
  workspace: Workspace;
  role: MemberRole;
  planName: string;
  nextTerms: (Workspace['nextTerms'][number] & { planName: string })[];
  canManage: boolean;
  glance: Glance;
  barOrder: typeof BAR_ORDER;
  statusLabels: typeof STATUS_LABELS;
  ratingLabels: typeof RATING_LABELS;
  impactLabels: typeof IMPACT_LABELS;
}

declare module '../render.ts' {
  interface PageViews {
    workspace: WorkspaceView;
  }
}
