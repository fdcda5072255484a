// The host's own small files in the storage folder (engine.lock, endpoint.json): written whole or
// not at all, and a failure that names the file and says what to do about the usual causes.
import { renameSync, rmSync, writeFileSync } from 'node:fs';

/** Writes `value` as JSON under a temporary name and renames it into place: never seen half written. */
export function writeAtomically(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** writeAtomically, failing with an error that names the file and the remedy. */
export function writeStorageFile(file: string, value: unknown): void {
  try {
    writeAtomically(file, value);
  } catch (err) {
    throw storageError('write', file, err);
  }
}

export function storageError(verb: string, file: string, err: unknown): Error {
  return new Error(`could not ${verb} ${file}: ${(err as Error).message}; ${storageRemedy(err as NodeJS.ErrnoException)}`);
}

function storageRemedy(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'EISDIR':
      return 'a folder is in the way: remove it, or choose another --storage folder';
    case 'ENOSPC':
    case 'EDQUOT':
      return 'the disk is full: free some space, or choose another --storage folder';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return 'the storage folder is not writable: fix its permissions, or choose another --storage folder';
    default:
      return 'fix the storage folder, or choose another --storage folder';
  }
}
