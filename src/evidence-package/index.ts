export { buildPackage, buildPackageJob, isPackageFile, PACKAGE_FOLDER } from './build.ts';
export {
  BUILD_PACKAGE_JOB,
  CreatedEvidencePackage,
  CreateEvidencePackageBody,
  EvidencePackage,
  getPackage,
  listPackages,
  MAX_RANGE_DAYS,
  type OpenedPackage,
  openPackage,
  openPackageByToken,
  PACKAGE_TTL_MS,
  type PackageDeps,
  type PackageError,
  type PackageLinks,
  packageFileName,
  packageLabel,
  recordDownload,
  requestPackage,
  sweepPackages,
  toEvidencePackage,
} from './packages.ts';
export type { DocumentsProvider, Manifest } from './zip.ts';
