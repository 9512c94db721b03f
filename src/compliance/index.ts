export type {
  ControlStatus,
  ControlTheme,
  EmploymentStatus,
  EvidenceKind,
  PolicyStatus,
  RiskStatus,
  RiskTreatment,
  TaskStatus,
  VendorRiskLevel,
  VendorStatus,
} from './compliance.table.ts';
export {
  CONTROL_STATUSES,
  CONTROL_THEMES,
  Control,
  ControlsFilter,
  controlsVersion,
  getControl,
  listControls,
  Readiness,
  readiness,
  seedControls,
  UpdateControlBody,
  updateControl,
} from './controls.ts';
export {
  createFileEvidence,
  createLinkEvidence,
  deleteEvidence,
  getEvidence,
  listEvidence,
  openEvidenceFile,
  updateEvidence,
} from './evidence.ts';
export {
  ACCEPTED_FILE_TYPES,
  discardStaged,
  type StagedFile,
  stageUpload,
  type UploadRefusal,
} from './evidence-files.ts';
export {
  CreateEvidenceLinkBody,
  Evidence,
  type EvidenceDeps,
  type EvidenceFailpointName,
  type EvidenceFailpoints,
  EvidenceFile,
  EvidenceFilter,
  EvidenceUploadFields,
  EvidenceUploadForm,
  UpdateEvidenceBody,
} from './evidence-shapes.ts';
export {
  type CopyOutcome,
  checkEvidenceFiles,
  copyEvidenceFiles,
  countEvidenceFiles,
  evidenceWithoutFiles,
  type FileCheck,
  PENDING_FILE_GRACE_MS,
  type SweepOutcome,
  sweepEvidenceFiles,
} from './evidence-store.ts';
export {
  getPerson,
  listPeople,
  PeopleFilter,
  Person,
  UpdatePersonBody,
  type UpsertOutcome,
  UpsertPersonBody,
  updatePerson,
  upsertPerson,
} from './people.ts';
export {
  applyPeopleImport,
  PEOPLE_IMPORT_MAX_BYTES,
  type PeopleImportError,
  PeopleImportResult,
  previewPeopleImport,
} from './people-import.ts';
export {
  getPolicy,
  listPolicies,
  PoliciesFilter,
  Policy,
  UpdatePolicyBody,
  UpsertPolicyBody,
  updatePolicy,
  upsertPolicy,
} from './policies.ts';
export {
  CreateRiskBody,
  createRisk,
  deleteRisk,
  getRisk,
  listRisks,
  Risk,
  type RiskSeverity,
  RisksFilter,
  severityOf,
  UpdateRiskBody,
  updateRisk,
} from './risks.ts';
export type { ComplianceDeps, ComplianceError } from './shared.ts';
export {
  CreateTaskBody,
  createTask,
  deleteTask,
  getTask,
  listTasks,
  Task,
  TasksFilter,
  UpdateTaskBody,
  updateTask,
} from './tasks.ts';
export {
  CreateVendorBody,
  createVendor,
  deleteVendor,
  getVendor,
  listVendors,
  UpdateVendorBody,
  updateVendor,
  Vendor,
  VendorsFilter,
} from './vendors.ts';
