// Opening the store after a clean stop or a crash: the database as the snapshot holds it (empty
// for a new folder, or when the snapshot will not open and snapshotFiles.ts moved it aside), its
// schema brought up to date, then every journal record the snapshot does not hold replayed into
// it. The store then either continues the journal or, when it cannot, takes a snapshot at once.
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Database } from 'sql.js';
import type { StoreNote } from './backend';
import { JOURNAL_FILE, JOURNAL_NEXT_FILE, SNAPSHOT_FILE } from './files';
import { replayJournal } from './journal';
import { applyPragmas, migrate, readJournalSeq } from './schema';
import { newDatabaseWithRoom, openSnapshot, removeStaleTemporaries } from './snapshotFiles';
import { loadSqlJs, SqlDatabase } from './sqlJs';

/** The database of `dir`'s snapshot (creating the folder if need be), or a new one; schema up to date. */
export async function openDatabase(dir: string | null, notes: StoreNote[]): Promise<SqlDatabase> {
  const SQL = await loadSqlJs();
  let db: Database | undefined;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    db = openSnapshot(SQL, dir, notes);
  }
  // A new database gets room to grow in place, as a loaded snapshot does.
  db ??= newDatabaseWithRoom(SQL);
  const sql = new SqlDatabase(db);
  applyPragmas(db);
  migrate(db);
  return sql;
}

export interface ReplayedJournal {
  /** The last journal record the database now holds. */
  seq: number;
  /** The last record the snapshot on disk holds. */
  snapshotSeq: number;
  /**
   * The snapshot on disk, when the journal can simply continue after it (replay skips what the
   * snapshot holds, and the engine's next periodic snapshot folds the journal in). null when a
   * snapshot is needed now.
   */
  snapshotFile: { mtimeMs: number; size: number } | null;
}

/** Removes a crash's temporary snapshots and replays the journal of `dir` into `sql`. */
export function replayJournals(dir: string, sql: SqlDatabase, notes: StoreNote[]): ReplayedJournal {
  removeStaleTemporaries(dir);
  const snapshotSeq = readJournalSeq(sql);
  // A crash during a checkpoint leaves the journal in two parts: the old one (records up to the
  // checkpoint) and its continuation. Replay skips whatever the snapshot already holds.
  let { seq, appendable } = replayJournal(path.join(dir, JOURNAL_FILE), sql, snapshotSeq, notes);
  const next = path.join(dir, JOURNAL_NEXT_FILE);
  const split = existsSync(next);
  if (split) {
    const second = replayJournal(next, sql, seq, notes);
    seq = second.seq;
    appendable = second.appendable && appendable;
  }
  const snapshotFile = path.join(dir, SNAPSHOT_FILE);
  // A torn or unreadable record must not have new records appended after it, a split journal is
  // folded back into one, and a new database needs its first snapshot. Otherwise the journal
  // continues: a full export here costs more than the rest of startup together on a large
  // database (docs/PERFORMANCE.md).
  if (!appendable || split || !existsSync(snapshotFile)) return { seq, snapshotSeq, snapshotFile: null };
  const st = statSync(snapshotFile);
  return { seq, snapshotSeq, snapshotFile: { mtimeMs: st.mtimeMs, size: st.size } };
}
