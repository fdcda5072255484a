// The storage folder: the names of the files the store keeps there, and durable writes to them.
import { closeSync, fsyncSync, openSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import path from 'node:path';

export const SNAPSHOT_FILE = 'engine.sqlite';
export const JOURNAL_FILE = 'engine.journal';
/** Where the journal continues while a checkpoint folds engine.journal into a new snapshot. */
export const JOURNAL_NEXT_FILE = 'engine.journal.next';
/** Size and CRC-32 of engine.sqlite as written, so startup can skip SQLite's integrity scan. */
export const SNAPSHOT_SUM_FILE = 'engine.sqlite.sum';
/** Temporary snapshot files: `engine.sqlite.tmp-<pid>-<n>` (and `.sum` beside them). */
export const SNAPSHOT_TMP_PREFIX = `${SNAPSHOT_FILE}.tmp-`;

/** The snapshot and the journal in `dir`, in bytes: what the status reports. */
export function storageBytes(dir: string): number {
  let size = 0;
  for (const f of [SNAPSHOT_FILE, JOURNAL_FILE]) {
    try {
      size += statSync(path.join(dir, f)).size;
    } catch {
      // missing file: counts as 0
    }
  }
  return size;
}

export function removeIfPresent(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Writes a whole file and fsyncs it. */
export function writeDurably(file: string, data: string | Uint8Array): void {
  const fd = openSync(file, 'w');
  try {
    writeFully(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** writeDurably with the write and its fdatasync on the thread pool. */
export async function writeDurablyInBackground(file: string, data: string | Uint8Array): Promise<void> {
  const handle = await openFile(file, 'w');
  try {
    await handle.writeFile(data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

export function writeFully(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let offset = 0;
  while (offset < buf.length) offset += writeSync(fd, buf, offset, buf.length - offset);
}

export function fsyncDir(dir: string): void {
  // The rename is durable only once the folder's entry is on disk. Not supported on Windows.
  if (process.platform === 'win32') return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
