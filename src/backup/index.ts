export { BackupError } from '../db/backup.ts';
export { type BackupManifest, type RestoreOutcome, restoreBackup, takeBackup } from './backup.ts';
