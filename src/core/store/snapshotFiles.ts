// The snapshot on disk: engine.sqlite, the database as sql.js exports it, and engine.sqlite.sum, its
// size and CRC-32 as written. A snapshot is written to a temporary name, fsynced and renamed into
// place; loading one checks it against its checksum, or SQLite's integrity check without one.
import { closeSync, existsSync, fstatSync, linkSync, openSync, readFileSync, readSync, readdirSync, renameSync, statSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import * as zlib from 'node:zlib';
import type { Database, SqlJsStatic } from 'sql.js';
import type { StoreNote } from './backend';
import { fsyncDir, JOURNAL_FILE, JOURNAL_NEXT_FILE, removeIfPresent, SNAPSHOT_FILE, SNAPSHOT_SUM_FILE, SNAPSHOT_TMP_PREFIX, writeDurably, writeDurablyInBackground } from './files';
import { emptyDatabase } from './emptyDatabase';
import { migrate, SCHEMA_VERSION, schemaMismatch, schemaVersion } from './schema';

const crc32: ((data: Uint8Array) => number) | undefined = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

/**
 * Loads engine.sqlite. A snapshot that will not open (garbage, zero length, a newer schema) is
 * moved aside as engine.sqlite.corrupt-<time> and the engine starts empty: nothing crashes and
 * the evidence is kept for a person to look at.
 */
export function openSnapshot(SQL: SqlJsStatic, dir: string, notes: StoreNote[]): Database | undefined {
  const file = path.join(dir, SNAPSHOT_FILE);
  if (!existsSync(file)) return undefined;
  let reason: string;
  try {
    const bytes = readSnapshotFile(dir);
    if (bytes.length === 0) throw new Error('the file is empty (0 bytes)');
    // A snapshot that is byte for byte what we wrote (size and CRC-32 match) was a complete,
    // checked export; the CRC costs a small fraction of SQLite's quick_check scan.
    const verified = matchesSum(dir, bytes);
    const db = new SQL.Database(bytes);
    try {
      if (!verified) {
        const check = String(db.exec('PRAGMA quick_check')[0]?.values[0]?.[0]);
        if (check !== 'ok') throw new Error(`integrity check failed: ${check}`);
      }
      const version = schemaVersion(db);
      if (version > SCHEMA_VERSION) {
        throw new Error(`it was written by a newer Engine Monitor (schema ${version}, this one reads up to ${SCHEMA_VERSION}); update the extension`);
      }
      // Compared with a new database of its own version: an older one is ours too, and is
      // migrated once it is open (recovery.ts).
      const freshVersion = Math.max(version, 1);
      const fresh = new SQL.Database(freshVersion === SCHEMA_VERSION ? emptyDatabase(SQL) : undefined);
      try {
        migrate(fresh, freshVersion);
        const mismatch = schemaMismatch(db, fresh);
        if (mismatch) throw new Error(`it is not an Engine Monitor database: ${mismatch}`);
      } finally {
        fresh.close();
      }
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  } catch (err) {
    reason = (err as Error).message;
  }
  const aside = `${file}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(file, aside);
  // The journal continues the snapshot we could not read; replaying it alone would be wrong.
  const journal = path.join(dir, JOURNAL_FILE);
  if (existsSync(journal)) renameSync(journal, `${aside}.journal`);
  notes.push({
    level: 'error',
    action: 'database_recovered',
    message: `database snapshot could not be opened (${reason}); moved it aside to ${path.basename(aside)} and started with an empty database`,
    details: { file, movedTo: aside, reason },
  });
  return undefined;
}

/** Loads engine.sqlite for a checkpoint builder; `verified` when it matches its checksum. */
export function loadVerified(SQL: SqlJsStatic, dir: string): { db: Database; verified: boolean } {
  const bytes = readSnapshotFile(dir);
  return { verified: matchesSum(dir, bytes), db: new SQL.Database(bytes) };
}

/**
 * Reads engine.sqlite into the buffer that sql.js then keeps as the database's in-memory file, with
 * room after the file's end for the journal replay that follows.
 *
 * sql.js's in-memory file system (Emscripten's MEMFS) takes the bytes with `slice()` and allocates a
 * file exactly that long, so the first page the replay appends makes it allocate 1.125 times the
 * size and copy: the snapshot's whole size twice over, until V8 happens to collect the first, so
 * the engine host's memory after startup depended on that timing (docs/PERFORMANCE.md). The view
 * returned here answers a `slice()` of its whole range with the whole buffer, spare room included,
 * which MEMFS records as capacity beyond the file's size: one buffer, and replay appends in place.
 * Pages past the file's end are not touched until written, so the room costs no memory until the
 * database grows into it. Any other slice is an ordinary copy, so an sql.js that took the bytes
 * differently would still load them, only with a copy again.
 */
function readSnapshotFile(dir: string): Uint8Array {
  const file = path.join(dir, SNAPSHOT_FILE);
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    let journalBytes = 0;
    for (const name of [JOURNAL_FILE, JOURNAL_NEXT_FILE]) {
      try {
        journalBytes += statSync(path.join(dir, name)).size;
      } catch {
        // no journal: nothing to replay
      }
    }
    // A journal record grows the database by less than twice its JSON; a quarter of the size more
    // keeps the next minutes of inserts in place too.
    const whole = new Uint8Array(Math.max(DATABASE_ROOM_BYTES, size + Math.ceil(size / 4) + 2 * journalBytes));
    let read = 0;
    while (read < size) {
      const n = readSync(fd, whole, read, size - read, read);
      if (n === 0) break; // the file shrank under us: SQLite's own checks judge what we got
      read += n;
    }
    return withRoom(whole, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * The room every database file gets in sql.js's in-memory file system, beyond its size. Past it,
 * MEMFS grows the file by copying it into a buffer 1.125 times as large, and each copy left behind
 * is the file's size again until V8 collects it: a new engine fed 100,000 items grows its file
 * from nothing to ~75 MB through some 40 such copies, and the host's peak RSS was 100+ MB over
 * what it held once collected (docs/PERFORMANCE.md). Pages of the room are not touched until the
 * database grows into them, so the room is address space, not memory.
 */
export const DATABASE_ROOM_BYTES = 256 << 20;

/**
 * The first `length` bytes of `whole`, as a view whose whole-range `slice()` (how MEMFS takes a
 * new file's bytes) answers `whole` itself: MEMFS then records the rest as capacity, and appends in
 * place. Any other slice is an ordinary copy.
 */
function withRoom(whole: Uint8Array<ArrayBuffer>, length: number): Uint8Array<ArrayBuffer> {
  const bytes = whole.subarray(0, length);
  const copy = bytes.slice.bind(bytes);
  bytes.slice = (start?: number, end?: number) => ((start ?? 0) === 0 && (end ?? length) >= length ? whole : copy(start, end));
  return bytes;
}

/** A new, empty database (schema applied) in a file with DATABASE_ROOM_BYTES of room. */
export function newDatabaseWithRoom(SQL: SqlJsStatic): Database {
  const image = emptyDatabase(SQL);
  const whole = new Uint8Array(Math.max(DATABASE_ROOM_BYTES, image.length * 2));
  whole.set(image);
  return new SQL.Database(withRoom(whole, image.length));
}

/** Writes the snapshot and its checksum to temporary files, each fsynced. */
export function writeSnapshotFiles(tmp: string, bytes: Uint8Array): void {
  writeDurably(tmp, bytes);
  const sum = snapshotSum(bytes);
  if (sum !== null) writeDurably(`${tmp}.sum`, sum);
}

/** writeSnapshotFiles with the writes and their fdatasyncs on the thread pool. */
export async function writeSnapshotFilesInBackground(tmp: string, bytes: Uint8Array): Promise<void> {
  await writeDurablyInBackground(tmp, bytes);
  const sum = snapshotSum(bytes);
  if (sum !== null) await writeDurablyInBackground(`${tmp}.sum`, sum);
}

/** The contents of `<snapshot>.sum`; null on Node before 20.15 (no zlib.crc32: startup runs quick_check instead). */
function snapshotSum(bytes: Uint8Array): string | null {
  return crc32 ? JSON.stringify({ bytes: bytes.length, crc32: crc32(bytes) }) : null;
}

/** Replaced snapshots being deleted on the thread pool (see installSnapshot). */
const freeing = new Set<string>();

/**
 * Deletes on this thread what installSnapshot left being deleted in the background in `dir`, so
 * a closed store leaves nothing happening in its folder: whoever copies, moves or deletes the
 * folder next does not race a delete. Only at close, where a moment's wait costs nothing.
 */
export function finishFreeing(dir: string): void {
  for (const old of freeing) {
    if (path.dirname(old) !== dir) continue;
    // If the background delete got there first this finds nothing; either way the file is gone.
    removeIfPresent(old);
    freeing.delete(old);
  }
}

/** Renames a written snapshot (and its checksum) into place, durably. */
export function installSnapshot(dir: string, tmp: string): void {
  const target = path.join(dir, SNAPSHOT_FILE);
  // A rename that replaces the last link to the old snapshot frees its blocks inside the system
  // call, on this thread: a second or more for a large snapshot on a busy disk. Keeping it linked
  // under a temporary name lets the thread pool delete it.
  let old: string | undefined = `${tmp}.old`;
  try {
    linkSync(target, old);
  } catch {
    old = undefined; // no snapshot yet, or a file system without hard links
  }
  renameSync(tmp, target);
  // A crash between the two renames leaves a checksum that does not match: startup then falls back
  // to quick_check, which is what it did before checksums.
  if (existsSync(`${tmp}.sum`)) renameSync(`${tmp}.sum`, path.join(dir, SNAPSHOT_SUM_FILE));
  else removeIfPresent(path.join(dir, SNAPSHOT_SUM_FILE));
  fsyncDir(dir);
  // A crash before this leaves it for removeStaleTemporaries at the next start.
  if (!old) return;
  const replaced = old;
  freeing.add(replaced);
  void unlink(replaced)
    .catch(() => undefined)
    .finally(() => freeing.delete(replaced));
}

/** True when engine.sqlite.sum describes exactly these bytes. */
function matchesSum(dir: string, bytes: Uint8Array): boolean {
  if (!crc32) return false;
  try {
    const sum = JSON.parse(readFileSync(path.join(dir, SNAPSHOT_SUM_FILE), 'utf8')) as { bytes?: unknown; crc32?: unknown };
    return sum.bytes === bytes.length && sum.crc32 === crc32(bytes);
  } catch {
    return false;
  }
}

/** Temporary snapshots left by a crash or an abandoned checkpoint (one engine per folder: all ours). */
export function removeStaleTemporaries(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (name.startsWith(SNAPSHOT_TMP_PREFIX)) removeIfPresent(path.join(dir, name));
  }
}

/** A temporary snapshot's name in the folder: `engine.sqlite.tmp-<pid>-<n>`. */
export function snapshotTemporaryName(dir: string, n: number): string {
  return path.join(dir, `${SNAPSHOT_TMP_PREFIX}${process.pid}-${n}`);
}

/** Removes a temporary snapshot and its checksum: a checkpoint that will not be installed. */
export function removeSnapshotTemporary(tmp: string): void {
  removeIfPresent(tmp);
  removeIfPresent(`${tmp}.sum`);
}
