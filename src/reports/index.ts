import type { Db } from '../db/schema.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { type ReportFile, soaDocuments } from './soa.ts';
import { treatmentPlanDocuments } from './treatment-plan.ts';

export type { SoaFileFormat } from './reports.table.ts';
export {
  approveSoa,
  currentSoa,
  currentSoaFile,
  FILE_TYPES,
  getSoaVersion,
  listSoaVersions,
  type ReportFile,
  type ReportsDeps,
  reportFileName,
  SOA_FILE_FORMATS,
  Soa,
  type SoaApprovalError,
  SoaChange,
  SoaControl,
  SoaFileFormatSchema,
  SoaGap,
  SoaVersion,
  SoaVersionSummary,
  soaVersionFile,
} from './soa.ts';
export {
  TreatmentPlan,
  TreatmentPlanRisk,
  treatmentPlan,
  treatmentPlanFile,
} from './treatment-plan.ts';

/**
 * What an auditor is given of the workspace's reports: the current Statement of Applicability and
 * risk treatment plan (CSV, XLSX, PDF) and every approved SoA version's frozen files, under
 * `statement-of-applicability/` and `risk-treatment-plan/`.
 */
export async function auditDocuments(
  db: Db,
  workspaceId: string,
  clock: Clock = systemClock,
): Promise<ReportFile[]> {
  const deps = { db, clock };
  return [...(await soaDocuments(deps, workspaceId)), ...(await treatmentPlanDocuments(deps, workspaceId))];
}
