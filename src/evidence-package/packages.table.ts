export type PackageStatus = 'queued' | 'building' | 'ready' | 'failed' | 'expired';

/** A requested evidence package: its range, the build's progress and the finished zip's place. */
export interface EvidencePackagesTable {
  id: string;
  workspace_id: string;
  status: PackageStatus;
  /** `YYYY-MM-DD`, inclusive, UTC; null: from the workspace's first evidence. */
  range_from: string | null;
  /** `YYYY-MM-DD`, inclusive, UTC; null: up to the build. */
  range_to: string | null;
  /** Who asked: the audit actor's label. */
  requested_by: string;
  /** SHA-256 of the download link's token. */
  download_token_hash: string;
  /** The build that owns the row now; a build that lost it (a lease that ran out) keeps nothing. */
  build_id: string | null;
  /** The zip's name in the file store, from the build's start (so a crashed build's file is found). */
  storage_name: string | null;
  files_total: number;
  files_done: number;
  bytes_total: number;
  bytes_done: number;
  /** The finished zip's size and SHA-256. */
  size: number | null;
  sha256: string | null;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  expires_at: number | null;
}

declare module '../db/schema.ts' {
  interface Database {
    evidence_packages: EvidencePackagesTable;
  }
}
