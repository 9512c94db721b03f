export { buildPackage, buildPackageJob, isPackageFile, PACKAGE_FOLDER } from './build.ts';
export {
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
export { evidencePackageWiring } from './wiring.ts';
export type { DocumentsProvider, Manifest } from './zip.ts';
