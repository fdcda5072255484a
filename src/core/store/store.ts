// The engine's state: an in-memory sql.js database, persisted as a snapshot (Database.export()
// written to a temporary file, fsynced, renamed) plus an append-only journal of every mutation
// since that snapshot. Startup loads the snapshot and replays the journal (recovery.ts), so a
// kill -9 at any moment loses at most what was not yet journaled, and the engine journals before
// every spawn.
//
// The engine's periodic snapshot is a checkpoint built off the main thread: the journal is rotated
// (new records go to engine.journal.next) and a builder loads the last snapshot, replays the old
// journal into it and writes the result; the main thread only renames files (checkpoint.ts).
// Exporting a large live database instead blocks the event loop for seconds (docs/PERFORMANCE.md).
// Shutdown, recovery and first start still export synchronously.//
// The journal itself, mutations and commits are JournaledStore's (journaledStore.ts); this class
// adds the reads, the log's full-text index, and the snapshots.
import path from 'node:path';
import type { SqlValue } from 'sql.js';
import type { ItemMatches, LogSearch, StoreBackend, StoreNote } from './backend';
import { itemIndexReady, matchingItemSeqs } from '../features/search';
import { searchLogsInSqlJs } from './logSearch';
import { narrowMatches } from './reads';
import { Checkpoint, DEFAULT_EXPORT_CHECKPOINT_MAX_BYTES, startCheckpointThread, writeExportedCheckpoint, type CheckpointJob, type CheckpointMessage, type CheckpointRun, type CheckpointRunner } from './checkpoint';
import { JOURNAL_FILE, JOURNAL_NEXT_FILE, removeIfPresent } from './files';
import { JournaledStore } from './journaledStore';
import { openDatabase, replayJournals } from './recovery';
import { writeJournalSeq } from './schema';
import { finishFreeing, installSnapshot, removeSnapshotTemporary, snapshotTemporaryName, writeSnapshotFiles } from './snapshotFiles';
import type { SqlDatabase } from './sqlJs';

export interface StoreOptions {
  /** Folder for engine.sqlite and its journal; null keeps everything in memory (for tests). */
  storageDir: string | null;
  /** Called when persisting starts or stops failing, so the engine can log and report health. */
  onHealthChange?: (ok: boolean, error: string | null) => void;
  /** Called for what the engine should log but that changes no health: a background snapshot that fell back. */
  onNote?: (note: StoreNote) => void;
  /**
   * Runs a checkpoint in a process of its own (the engine asks a launch helper to start it; one
   * asked for while the helpers start waits for them). Returns undefined when no helper will run
   * it; the checkpoint then runs on a worker thread of this process, as it does without this option.
   */
  runCheckpoint?: CheckpointRunner;
  /**
   * A snapshot on disk smaller than this is checkpointed by exporting the live database (a few
   * milliseconds of the event loop) and writing it on the thread pool, rather than by a process
   * that loads it again (far more CPU, mostly starting Node.js and sql.js). Default 2 MiB; 0
   * always builds off the main thread.
   */
  exportCheckpointMaxBytes?: number;
}

export interface SnapshotInfo {
  /** Built off the main thread (true) or exported on the main thread (false). */
  background: boolean;
  /** For a background snapshot: where it was built ("worker thread", "process <pid>"). */
  builtIn?: string;
  /** For one built in a process: that process's peak RSS in bytes. */
  builderPeakRss?: number;
  /** Wall time: the worker's whole job, or the main thread's export and write. */
  ms: number;
  bytes: number;
  at: number;
}

/** The sql.js store: the engine's state in memory, persisted by a journal and snapshots. */
export class Store extends JournaledStore implements StoreBackend {
  /** The checkpoint in flight, if any; a synchronous snapshot abandons it. */
  private checkpoint: Checkpoint | null = null;
  private tmpCounter = 0;
  /**
   * The newest log entry the full-text index is known to hold (-1: not known yet, e.g. after
   * replay): while the newest written (logsWritten) is not past it, indexLogs() has nothing to add
   * and need not ask SQLite (two reads, about 100 µs, before every search that reads the index and
   * every second).
   */
  private logsIndexed = -1;
  private snapshotInfo: SnapshotInfo | null = null;
  /** Size of the snapshot on disk (loaded or last written). */
  private snapshotFileBytes = 0;

  private constructor(sql: SqlDatabase, options: StoreOptions) {
    super(sql, options);
  }

  /** Opens (or creates) the store; `notes` says what recovery did, for the engine to log. */
  static async open(options: StoreOptions): Promise<{ store: Store; notes: StoreNote[] }> {
    const notes: StoreNote[] = [];
    const store = new Store(await openDatabase(options.storageDir, notes), options);
    if (options.storageDir) store.recover(options.storageDir, notes);
    return { store, notes };
  }

  /** Brings the database up to date with the journal (recovery.ts), then continues the journal or snapshots. */
  private recover(dir: string, notes: StoreNote[]): void {
    const { seq, snapshotSeq, snapshotFile } = replayJournals(dir, this.sql, notes);
    this.seq = seq;
    this.snapshotSeq = snapshotSeq;
    this.journal.open();
    if (snapshotFile === null) {
      this.snapshot();
    } else {
      this.lastPersistAt = snapshotFile.mtimeMs;
      this.snapshotFileBytes = snapshotFile.size;
    }
  }

  /**
   * Adds the log entries the full-text index (logs_fts) does not hold yet to it, oldest first, at
   * most `max` of them; returns how many it added. Entries are indexed here in batches rather than
   * as each is written: one FTS4 row in a transaction of its own cost 25-85 µs, a batch 4 µs a row
   * (docs/PERFORMANCE.md). The index holds exactly the entries up to its largest
   * docid (entries are indexed in id order and pruned from the oldest), so what is missing is
   * everything after it. Not journaled: the index is derived from `logs`, and after a crash this
   * catches up on whatever the snapshot's index did not hold. Searches that read the index call it
   * first (logQuery.ts), so they see every entry.
   */
  indexLogs(max = Number.MAX_SAFE_INTEGER): number {
    if (this.logsIndexed >= this.logsWritten) return 0;
    const indexed = (this.sql.rows('SELECT docid FROM logs_fts_docsize ORDER BY docid DESC LIMIT 1')[0]?.[0] as number | undefined) ?? 0;
    const newest = (this.sql.rows('SELECT id FROM logs ORDER BY id DESC LIMIT 1')[0]?.[0] as number | undefined) ?? 0;
    if (newest <= indexed) {
      this.logsIndexed = newest;
      return 0;
    }
    const added = this.sql.batch(() => {
      this.sql.statement('INSERT INTO logs_fts (docid, message) SELECT id, message FROM logs WHERE id > ? ORDER BY id LIMIT ?').run([indexed, max]);
      return this.sql.db.getRowsModified();
    });
    // Fewer than asked: every entry up to the newest is in.
    if (added < max) this.logsIndexed = newest;
    return added;
  }

  // ---- queries ---------------------------------------------------------------------------

  /** Rows as objects. Statements are prepared once and cached by SQL text. */
  all<T = Record<string, SqlValue>>(sql: string, params: SqlValue[] = []): T[] {
    return this.sql.all<T>(sql, params);
  }

  /** Rows as arrays in column order: for large result pages (see SqlDatabase.rows). */
  rows(sql: string, params: SqlValue[] = []): SqlValue[][] {
    return this.sql.rows(sql, params);
  }

  get<T = Record<string, SqlValue>>(sql: string, params: SqlValue[] = []): T | undefined {
    return this.sql.get<T>(sql, params);
  }

  /** One engine's own store: rows do not say which engine wrote them. */
  readonly recordsWriter = false;

  /** From the word index of the items kept in memory (itemSearch.ts); the other filters in SQL. */
  searchItems(words: readonly string[], where: string[], params: SqlValue[]): ItemMatches {
    // Only the page's seqs are read when nothing else filters: a word in every item is 100,000 matches.
    return narrowMatches(this, matchingItemSeqs(this, words), where, params);
  }

  /** The word index is built when first needed, in steps between turns of the event loop. */
  searchItemsReady(): Promise<void> | undefined {
    return itemIndexReady(this);
  }

  searchLogs(search: LogSearch): number[] {
    return searchLogsInSqlJs(this, search);
  }

  getMeta(key: string): string | undefined {
    return this.sql.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
  }

  setMeta(key: string, value: string): void {
    this.mutate('meta_set', [key, value]);
  }

  // ---- persistence -----------------------------------------------------------------------

  /** True when something changed since the last snapshot, so a new one would not be identical. */
  get changedSinceSnapshot(): boolean {
    return this.seq !== this.snapshotSeq || this.needsSnapshot;
  }

  /**
   * How much a checkpoint would fold in (the journal records are appended to, about in bytes),
   * against the size of the snapshot it would rewrite: for the engine's checkpoint policy.
   */
  get journalSize(): { journalBytes: number; snapshotBytes: number } {
    return { journalBytes: this.journal.bytes, snapshotBytes: this.snapshotFileBytes };
  }

  /**
   * Writes the whole database atomically (temporary file, fsync, rename, fsync of the folder)
   * and starts an empty journal. Returns false (and records the error) when storage is failing.
   */
  snapshot(): boolean {
    const dir = this.options.storageDir;
    if (!dir) return true;
    // The live database is newer than anything a checkpoint in flight is building.
    this.abandonCheckpoint();
    const started = performance.now();
    let tmp: string | undefined;
    try {
      writeJournalSeq(this.sql, this.seq);
      // sql.js (1.16+) exports through SQLite's backup API without closing the connection, so
      // prepared statements and pragmas survive.
      const bytes = this.sql.db.export();
      tmp = this.temporaryName();
      writeSnapshotFiles(tmp, bytes);
      installSnapshot(dir, tmp);
      // Everything up to `seq` is in the snapshot now; the journal starts over.
      this.pending = [];
      this.journal.open(JOURNAL_FILE, 'empty');
      removeIfPresent(path.join(dir, JOURNAL_NEXT_FILE));
      this.snapshotFileBytes = bytes.length;
      this.snapshotSeq = this.seq;
      this.needsSnapshot = false;
      this.lastPersistAt = Date.now();
      this.snapshotInfo = { background: false, ms: performance.now() - started, bytes: bytes.length, at: this.lastPersistAt };
      this.setHealthy();
      return true;
    } catch (err) {
      // A write that failed (disk full) leaves a file behind, and the engine retries every second.
      if (tmp) removeSnapshotTemporary(tmp);
      this.fail(`snapshot failed: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * The engine's periodic snapshot, built off the main thread: pending records are committed, the
   * journal continues in engine.journal.next, and a builder folds engine.journal into the last
   * snapshot. The event loop pays for one commit and, when the builder is done, a few renames.
   * Returns false when nothing was started: one is already running (pending records are still
   * committed), or storage is failing and the synchronous recovery snapshot did not succeed.
   */
  snapshotInBackground(): boolean {
    const dir = this.options.storageDir;
    if (!dir) return true;
    if (this.checkpoint) {
      // The checkpoint is writing a snapshot: a synchronous fdatasync would wait behind it.
      this.commit('background');
      return false;
    }
    // Recovery needs the live database: the journal on disk is incomplete.
    if (this.needsSnapshot || this.error !== null) return this.snapshot();
    // The checkpoint replays engine.journal through `throughSeq`, and after a crash the records
    // continued in engine.journal.next are only valid if everything before them is on disk. When
    // every record written so far is synced, that already holds: rotate without an fdatasync,
    // and the mutations not written yet go to the next journal. Otherwise commit synchronously
    // first: an fdatasync on the event loop, which can wait behind the disk for a long time
    // (docs/PERFORMANCE.md); the engine avoids it by asking only when journalSynced.
    let throughSeq: number;
    if (this.journalSynced) throughSeq = this.seq - this.pending.length;
    else {
      if (!this.commit()) return false;
      throughSeq = this.seq;
    }
    try {
      this.journal.open(JOURNAL_NEXT_FILE, 'empty');
    } catch (err) {
      this.fail(`journal rotation failed: ${(err as Error).message}`);
      return false;
    }
    const job: CheckpointJob = { dir, throughSeq, tmp: this.temporaryName() };
    let run: CheckpointRun;
    try {
      // The live database decides too: a new engine's snapshot on disk is the empty one, and an
      // export of what it has grown to since is a copy of all of it in this process.
      if (Math.max(this.snapshotFileBytes, this.liveBytes()) < (this.options.exportCheckpointMaxBytes ?? DEFAULT_EXPORT_CHECKPOINT_MAX_BYTES)) {
        run = this.exportCheckpoint(job);
      } else run = this.options.runCheckpoint?.(job) ?? startCheckpointThread(job);
    } catch (err) {
      // No worker bundle (a build without it): the synchronous snapshot keeps every promise.
      this.options.onNote?.({
        level: 'warn',
        action: 'database_error',
        message: `background snapshot unavailable (${(err as Error).message}); snapshotting on the main thread`,
      });
      return this.snapshot();
    }
    const cp = new Checkpoint(run, job);
    this.checkpoint = cp;
    void run.done.then((m) => this.finishCheckpoint(cp, m));
    return true;
  }

  /** The live database's size in bytes (its pages), what an export copies. */
  private liveBytes(): number {
    const pages = Number(this.sql.rows('PRAGMA page_count')[0]?.[0] ?? 0);
    const size = Number(this.sql.rows('PRAGMA page_size')[0]?.[0] ?? 0);
    return pages * size;
  }

  /**
   * A small database's checkpoint: the live database exported now (it holds every record up to
   * `seq`, those not written yet included, which the next journal then repeats and replay skips),
   * and written on the thread pool. Installed like any other.
   */
  private exportCheckpoint(job: CheckpointJob): CheckpointRun {
    const started = performance.now();
    job.throughSeq = this.seq;
    writeJournalSeq(this.sql, this.seq);
    return writeExportedCheckpoint(job, this.sql.db.export(), started);
  }

  /** Resolves when the checkpoint in flight (if any) is installed (true) or abandoned/failed (false). */
  whenCheckpointed(): Promise<boolean> {
    return this.checkpoint?.done ?? Promise.resolve(true);
  }

  /** How the last snapshot went (background or not, time, size): for the benchmark and the tests. */
  get lastSnapshot(): SnapshotInfo | null {
    return this.snapshotInfo;
  }

  /** Persists what is pending and releases the database. */
  close(): void {
    const dir = this.options.storageDir;
    if (dir) {
      // The snapshot then holds a complete index: the next start has nothing to catch up, and an
      // older engine that opens it (which prunes the index as if it held every entry) finds it so.
      this.indexLogs();
      this.snapshot() || this.commit();
      finishFreeing(dir);
    }
    this.journal.close();
    this.sql.close();
  }

  // ---- internals -------------------------------------------------------------------------

  private temporaryName(): string {
    return snapshotTemporaryName(this.options.storageDir!, ++this.tmpCounter);
  }

  private finishCheckpoint(cp: Checkpoint, m: CheckpointMessage): void {
    if (!cp.takeAnswer()) return;
    if (this.checkpoint !== cp) {
      // Abandoned: a synchronous snapshot since holds everything this one would, and more.
      cp.discardFiles();
      cp.end(false);
      return;
    }
    this.checkpoint = null;
    if (!m.ok) {
      // The live database can still write it, at the main thread's expense; say why, because a
      // worker that cannot rebuild the state from disk points at a problem worth a look.
      cp.discardFiles();
      this.options.onNote?.({
        level: 'warn',
        action: 'database_error',
        message: `background snapshot failed (${m.error}); wrote the snapshot from memory instead`,
        details: { error: m.error, builtIn: cp.run.where },
      });
      cp.end(this.snapshot());
      return;
    }
    try {
      cp.install();
      this.journal.renamed(JOURNAL_FILE);
      this.snapshotSeq = cp.job.throughSeq;
      this.snapshotFileBytes = m.bytes;
      this.lastPersistAt = Date.now();
      this.snapshotInfo = { background: true, builtIn: cp.run.where, builderPeakRss: m.peakRss, ms: m.ms, bytes: m.bytes, at: this.lastPersistAt };
      cp.end(true);
    } catch (err) {
      this.fail(`snapshot failed: ${(err as Error).message}`);
      cp.end(false);
    }
  }

  /**
   * Gives up the checkpoint in flight, if any: a synchronous snapshot follows (close() takes one).
   * The engine calls it before ending its launch helper, whose exit would otherwise fail the
   * checkpoint and make the store snapshot from memory twice during a shutdown.
   */
  abandonCheckpoint(): void {
    const cp = this.checkpoint;
    if (!cp) return;
    this.checkpoint = null;
    // Its end settles it and removes its temporary files.
    cp.run.cancel();
  }

}
