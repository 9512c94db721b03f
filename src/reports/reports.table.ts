/** Tables of the reports module: approved versions of the Statement of Applicability. */

/** One approved version; never updated once written. */
export interface SoaVersionsTable {
  id: string;
  workspace_id: string;
  /** 1, 2, 3... per workspace. */
  number: number;
  approved_at: number;
  /** The approver's label as the audit log shows it (an account's email, an API key). */
  approved_by: string;
  /** SHA-256 (hex) of `document`. */
  sha256: string;
  /** The version's content as canonical JSON (RFC 8785): workspace, number, approval and rows. */
  document: string;
}

export type SoaFileFormat = 'csv' | 'xlsx' | 'pdf';

/** The files of a version, rendered once at approval and served as stored. */
export interface SoaVersionFilesTable {
  version_id: string;
  workspace_id: string;
  format: SoaFileFormat;
  sha256: string;
  size: number;
  content: Uint8Array;
}

declare module '../db/schema.ts' {
  interface Database {
    soa_versions: SoaVersionsTable;
    soa_version_files: SoaVersionFilesTable;
  }
}
