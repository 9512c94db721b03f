/**
 * Files kept in the database (EVIDENCE_STORAGE=database): one row per file, its bytes in chunks.
 * A file is `pending` from its first byte until the record that names it committed.
 */
export interface StoredFilesTable {
  name: string;
  state: 'pending' | 'final';
  size: number;
  created_at: number;
}

export interface StoredFileChunksTable {
  name: string;
  chunk_index: number;
  bytes: Uint8Array;
}

declare module '../db/schema.ts' {
  interface Database {
    stored_files: StoredFilesTable;
    stored_file_chunks: StoredFileChunksTable;
  }
}
