import type { EvidencePackage } from '../../evidence-package/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';

/** A package as its row in the list and its own page show it. */
export interface PackageView {
  id: string;
  label: string;
  status: EvidencePackage['status'];
  statusLabel: string;
  requestedBy: string;
  createdAt: string;
  expiresAt: string | null;
  filesDone: number;
  filesTotal: number;
  /** 0 to 100, by bytes when there are any, else by files. */
  percent: number;
  sizeLabel: string | null;
  sha256: string | null;
  error: string | null;
}

export interface EvidencePackagesView {
  workspace: Workspace;
  canManage: boolean;
  packages: PackageView[];
  errors: FieldError[];
  form: { from: string; to: string };
  maxRangeDays: number;
  ttlDays: number;
}

export interface EvidencePackageView {
  workspace: Workspace;
  canManage: boolean;
  pkg: PackageView;
  /** Seconds until the page reloads itself while the package is built; null once it is done. */
  refreshSeconds: number | null;
}

declare module '../render.ts' {
  interface PageViews {
    'evidence-packages': EvidencePackagesView;
    'evidence-package': EvidencePackageView;
  }
}

export const STATUS_LABELS: Record<EvidencePackage['status'], string> = {
  queued: 'Waiting to start',
  building: 'Being built',
  ready: 'Ready to download',
  failed: 'Failed',
  expired: 'Expired',
};

export function packageView(
  pkg: EvidencePackage,
  label: string,
  sizeLabel: (bytes: number) => string,
): PackageView {
  const { files_done, files_total, bytes_done, bytes_total } = pkg.progress;
  const ratio =
    pkg.status === 'ready'
      ? 1
      : bytes_total > 0
        ? bytes_done / bytes_total
        : files_total > 0
          ? files_done / files_total
          : 0;
  return {
    id: pkg.id,
    label,
    status: pkg.status,
    statusLabel: STATUS_LABELS[pkg.status],
    requestedBy: pkg.requested_by,
    createdAt: pkg.created_at,
    expiresAt: pkg.expires_at,
    filesDone: files_done,
    filesTotal: files_total,
    percent: Math.min(100, Math.floor(ratio * 100)),
    sizeLabel: pkg.size === null ? null : sizeLabel(pkg.size),
    sha256: pkg.sha256,
    error: pkg.error,
  };
}
