// Backups of the embedded database (docs/operations.md "Backups and restore").
export { mb, writeBackup, type BackupResult } from './base-backup.js';
export { ArchiveError } from './tar.js';
export { restoreDataDir, RestoreRefused, type RestoreResult } from './restore-data-dir.js';
