// The engine's state: an in-memory sql.js database, persisted as a snapshot (Database.export()
// written to a temporary file, fsynced, renamed) plus an append-only journal of every mutation
// since that snapshot. Startup loads the snapshot and replays the journal, so a kill -9 at any
// moment loses at most what was not yet journaled, and the engine journals before every spawn.
//
// The engine's periodic snapshot is a checkpoint built off the main thread: the journal is rotated
// (new records go to engine.journal.next) and a worker thread loads the last snapshot, replays the
// old journal into it and writes the result; the main thread only renames files. Exporting the live
// database instead blocked the event loop for 0.4 s at 100,000 items and 2.6 s at 1,000,000 log
// entries (docs/PERFORMANCE.md). Shutdown, recovery and first start still export synchronously.
//
// Every mutation goes through `mutate(statementKey, params)`: it runs a fixed, named statement
// and appends `[seq, key, params]` to the journal. Replay runs the same statements, so there is
// one code path for "do it" and "redo it".
import { closeSync, existsSync, fdatasync, fdatasyncSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, statSync, ftruncateSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Database, SqlValue } from 'sql.js';
import type { StoreNote } from './backend';
import { fsyncDir, JOURNAL_FILE, JOURNAL_NEXT_FILE, removeIfPresent, SNAPSHOT_FILE, writeFully } from './files';
import { applyPragmas, migrate, MUTATIONS, readJournalSeq, writeJournalSeq, type MutationKey } from './schema';
import { installSnapshot, loadVerified, openSnapshot, removeSnapshotTemporary, removeStaleTemporaries, snapshotTemporaryName, writeSnapshotFiles, writeSnapshotFilesInBackground } from './snapshotFiles';
import { loadSqlJs, SqlDatabase } from './sqlJs';

/** While storage fails, how often a persist is retried. */
const RETRY_INTERVAL_MS = 1000;

export interface StoreOptions {
  /** Folder for engine.sqlite and its journal; null keeps everything in memory (for tests). */
  storageDir: string | null;
  /** Called when persisting starts or stops failing, so the engine can log and report health. */
  onHealthChange?: (ok: boolean, error: string | null) => void;
  /** Called for what the engine should log but that changes no health: a background snapshot that fell back. */
  onNote?: (note: StoreNote) => void;
  /**
   * Runs a checkpoint in a process of its own (the engine asks its launch helper to start it).
   * Returns undefined when that is not possible right now; the checkpoint then runs on a worker
   * thread of this process, as it does without this option.
   */
  runCheckpoint?: CheckpointRunner;
  /**
   * A snapshot on disk smaller than this is checkpointed by exporting the live database (a few
   * milliseconds of the event loop) and writing it on the thread pool, rather than by a process
   * that loads it again (~270 ms of CPU, mostly starting Node.js and sql.js). Default 2 MiB; 0
   * always builds off the main thread.
   */
  exportCheckpointMaxBytes?: number;
}

/** See StoreOptions.exportCheckpointMaxBytes (docs/PERFORMANCE.md, fix 27). */
const DEFAULT_EXPORT_CHECKPOINT_MAX_BYTES = 2 << 20;

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

/** What the main thread asks the checkpoint worker to build. */
export interface CheckpointJob {
  dir: string;
  /** The last journal record the new snapshot must hold (all of engine.journal). */
  throughSeq: number;
  /** Where to write it (and `<tmp>.sum`); the main thread renames it into place. */
  tmp: string;
}

export interface CheckpointBuilt {
  bytes: number;
  ms: number;
  /** A checkpoint process's peak RSS in bytes (its copy of the database): for the benchmark. */
  peakRss?: number;
}

export type CheckpointMessage = ({ ok: true } & CheckpointBuilt) | { ok: false; error: string };

/** A checkpoint being built somewhere off the main thread. */
export interface CheckpointRun {
  /** Where it runs, for the logs: "worker thread" or "process <pid>". */
  readonly where: string;
  /** Settles once, with the builder's answer or with why there is none (it died, it was cancelled). */
  readonly done: Promise<CheckpointMessage>;
  /** Stops the builder; `done` then settles with ok: false. Safe to call at any time. */
  cancel(): void;
}

export type CheckpointRunner = (job: CheckpointJob) => CheckpointRun | undefined;

/**
 * How a checkpoint process is started: `node <args…>`, where the last argument is the job as
 * JSON. Bundled: dist/checkpoint-worker.js beside this code; from sources (unit tests) through tsx.
 */
export function checkpointProcessArgs(job: CheckpointJob): string[] {
  const bundled = path.join(__dirname, 'checkpoint-worker.js');
  // The same small young generation as the worker thread's: the snapshot's read buffer dies young.
  const heap = '--max-semi-space-size=1';
  if (existsSync(bundled)) return [heap, bundled, JSON.stringify(job)];
  const source = path.join(__dirname, 'checkpointWorker.ts');
  if (existsSync(source)) return [heap, '--require', createRequire(__filename).resolve('tsx/cjs'), source, JSON.stringify(job)];
  throw new Error(`checkpoint-worker.js is missing from ${__dirname}`);
}

interface Checkpoint {
  run: CheckpointRun;
  job: CheckpointJob;
  done: Promise<boolean>;
  resolve: (ok: boolean) => void;
  settled: boolean;
}

export class Store {
  private journalFd: number | null = null;
  private journalIdentity: string | null = null;
  private pending: string[] = [];
  private seq = 0;
  /** `seq` as of the last snapshot: everything up to it is in engine.sqlite. */
  private snapshotSeq = 0;
  /** Set when the journal file is gone or unwritable: the next persist must be a full snapshot. */
  private needsSnapshot = false;
  private error: string | null = null;
  private lastFailureAt = 0;
  private lastPersistAt: number | null = null;
  /** The journal file `journalFd` appends to: JOURNAL_NEXT_FILE while a checkpoint runs. */
  private journalFile = JOURNAL_FILE;
  /** The checkpoint in flight, if any; a synchronous snapshot abandons it. */
  private checkpoint: Checkpoint | null = null;
  private tmpCounter = 0;
  /** Set by close(): the final snapshot frees the old one synchronously. */
  private closing = false;
  /** Background fdatasyncs of the journal in flight (commit('background')). */
  private backgroundSyncs = 0;
  /** Journal writes so far, and how many of them are known to be on disk (fdatasync done). */
  private writeSeq = 0;
  private syncedSeq = 0;
  /** Bumped whenever the journal descriptor changes, so a late fdatasync knows it is stale. */
  private journalGeneration = 0;
  /** commitDurably() calls waiting for their journal write (`seq`) to be on disk. */
  private durableWaiters: { seq: number; resolve: (durable: boolean) => void }[] = [];
  private snapshotInfo: SnapshotInfo | null = null;
  /** Bytes in the journal file records are appended to: what the next checkpoint would fold in. */
  private journalFileBytes = 0;
  /** Size of the snapshot on disk (loaded or last written). */
  private snapshotFileBytes = 0;

  private constructor(
    private readonly sql: SqlDatabase,
    private readonly options: StoreOptions,
  ) {}

  /** Opens (or creates) the store; `notes` says what recovery did, for the engine to log. */
  static async open(options: StoreOptions): Promise<{ store: Store; notes: StoreNote[] }> {
    const SQL = await loadSqlJs();
    const notes: StoreNote[] = [];
    const dir = options.storageDir;
    let db: Database | undefined;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      db = openSnapshot(SQL, dir, notes);
    }
    db ??= new SQL.Database();
    const store = new Store(new SqlDatabase(db), options);
    applyPragmas(db);
    migrate(db);
    if (dir) {
      removeStaleTemporaries(dir);
      store.seq = readJournalSeq(store.sql);
      store.snapshotSeq = store.seq;
      // A crash during a checkpoint leaves the journal in two parts: the old one (records up to the
      // checkpoint) and its continuation. Replay skips whatever the snapshot already holds.
      let appendable = store.replayJournal(path.join(dir, JOURNAL_FILE), notes);
      const next = path.join(dir, JOURNAL_NEXT_FILE);
      const split = existsSync(next);
      if (split) appendable = store.replayJournal(next, notes) && appendable;
      store.openJournal();
      const snapshotFile = path.join(dir, SNAPSHOT_FILE);
      if (!appendable || split || !existsSync(snapshotFile)) {
        // A torn or unreadable record must not have new records appended after it, a split journal
        // is folded back into one, and a new database needs its first snapshot: snapshot now.
        store.snapshot();
      } else {
        // Otherwise the journal simply continues (replay skips what the snapshot holds) and the
        // engine's next periodic snapshot folds it in. A full export here cost more than the rest
        // of startup together at 100,000 items (docs/PERFORMANCE.md).
        const st = statSync(snapshotFile);
        store.lastPersistAt = st.mtimeMs;
        store.snapshotFileBytes = st.size;
      }
    }
    return { store, notes };
  }

  get databasePath(): string {
    return this.options.storageDir ? path.join(this.options.storageDir, SNAPSHOT_FILE) : ':memory:';
  }

  get lastError(): string | null {
    return this.error;
  }

  get lastPersistTime(): number | null {
    return this.lastPersistAt;
  }

  /** Snapshot plus journal on disk, in bytes (0 in memory). */
  sizeBytes(): number {
    if (!this.options.storageDir) return 0;
    let size = 0;
    for (const f of [SNAPSHOT_FILE, JOURNAL_FILE]) {
      try {
        size += statSync(path.join(this.options.storageDir, f)).size;
      } catch {
        // missing file: counts as 0
      }
    }
    return size;
  }

  // ---- mutations -------------------------------------------------------------------------

  mutate(key: MutationKey, params: SqlValue[]): void {
    this.sql.statement(MUTATIONS[key]).run(params);
    if (this.options.storageDir && !this.needsSnapshot) {
      this.pending.push(JSON.stringify([++this.seq, key, params]));
    }
  }

  /** Runs `fn` in one SQL transaction: many mutations at the cost of one. */
  batch<T>(fn: () => T): T {
    return this.sql.batch(fn);
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

  getMeta(key: string): string | undefined {
    return this.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
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
    return { journalBytes: this.journalFileBytes, snapshotBytes: this.snapshotFileBytes };
  }

  /** True when mutations are waiting to be journaled. */
  get hasPending(): boolean {
    return this.pending.length > 0 || this.needsSnapshot;
  }

  /**
   * Appends pending mutations to the journal and fdatasyncs it. Returns false (and records the
   * error) when storage is failing; the state stays in memory and a later call retries.
   *
   * `background` (the engine's once-a-second commit): the records are written at once, where a
   * crash of this process cannot lose them, and the fdatasync runs on libuv's thread pool. A
   * synchronous fdatasync waits for the file system's next journal commit, and while a checkpoint
   * writes a 333 MB snapshot that took up to a second of the event loop (docs/PERFORMANCE.md).
   * Launches use commitDurably(), which waits for the disk without blocking the event loop.
   */
  commit(mode: 'sync' | 'background' = 'sync'): boolean {
    if (mode === 'background' && this.options.storageDir && !this.needsSnapshot && this.journalFd !== null) {
      return this.commitInBackground();
    }
    if (!this.options.storageDir) return true;
    if (this.needsSnapshot) {
      // Recovery is a full snapshot; while storage stays broken, try it at most once a second
      // rather than exporting the whole database on every call.
      if (this.error !== null && Date.now() - this.lastFailureAt < RETRY_INTERVAL_MS) return false;
      return this.snapshot();
    }
    if (this.pending.length === 0 && this.journalSynced) return this.error === null;
    try {
      this.checkJournalIdentity();
      if (this.pending.length > 0) {
        this.appendRecords();
        this.writeSeq++;
      }
      // Also what a background commit wrote and has not synced yet: a spawn must not wait on it.
      fdatasyncSync(this.journalFd!);
      this.syncedSeq = this.writeSeq;
      this.lastPersistAt = Date.now();
      this.pending = [];
      this.setHealthy();
      this.settleDurableWaiters();
      return true;
    } catch (err) {
      this.fail(`journal write failed: ${(err as Error).message}`);
      return false;
    }
  }

  /** Whether a background fdatasync of the journal is still running (for tests). */
  get journalSyncPending(): boolean {
    return this.backgroundSyncs > 0;
  }

  /** Whether every record written to the journal is on disk (mutations not written yet aside). */
  get journalSynced(): boolean {
    return this.syncedSeq === this.writeSeq;
  }

  /**
   * Journals pending mutations and resolves once they are on disk: true, or false when storage
   * failed (the error is recorded and the state stays in memory, as with commit()). The records
   * are written at once and the fdatasync runs on libuv's thread pool, so the event loop goes on
   * meanwhile; calls that arrive while one runs share the next, so launches that become due
   * together wait for one fdatasync. This is how the engine keeps the contract's promise that every
   * attempt is on disk before its process is spawned: a synchronous fdatasync before each spawn
   * held the event loop for 0.6-5 ms per launch, and for tens of milliseconds behind a
   * checkpoint's writes (docs/PERFORMANCE.md, fix 23).
   */
  commitDurably(): Promise<boolean> {
    if (!this.options.storageDir) return Promise.resolve(true);
    // Recovery (a full snapshot) and a journal that is not open take the synchronous path.
    if (this.needsSnapshot || this.journalFd === null) return Promise.resolve(this.commit());
    if (!this.writePending()) return Promise.resolve(false);
    if (this.journalSynced) return Promise.resolve(this.error === null);
    const seq = this.writeSeq;
    return new Promise((resolve) => {
      this.durableWaiters.push({ seq, resolve });
      this.startBackgroundSync();
    });
  }

  private commitInBackground(): boolean {
    if (!this.writePending()) return false;
    this.startBackgroundSync();
    return this.error === null;
  }

  /** Writes the pending records to the journal (no fdatasync; the callers handle errors). */
  private appendRecords(): void {
    const text = this.pending.join('\n') + '\n';
    writeFully(this.journalFd!, text);
    // Characters, not bytes: records are mostly ASCII, and this only weighs when to checkpoint.
    this.journalFileBytes += text.length;
  }

  /** Appends pending mutations to the journal, without syncing. False (recorded) when that fails. */
  private writePending(): boolean {
    if (this.pending.length === 0) return true;
    try {
      this.checkJournalIdentity();
      this.appendRecords();
      this.writeSeq++;
      this.pending = [];
      return true;
    } catch (err) {
      this.fail(`journal write failed: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * One fdatasync on the thread pool at a time, covering every write made before it started; what
   * is written meanwhile is synced by the next one, started at once if a launch waits for it and
   * otherwise by the next once-a-second commit.
   */
  private startBackgroundSync(): void {
    if (this.backgroundSyncs > 0 || this.journalSynced || this.journalFd === null) return;
    const fd = this.journalFd;
    const generation = this.journalGeneration;
    const upTo = this.writeSeq;
    this.backgroundSyncs++;
    fdatasync(fd, (err) => {
      this.backgroundSyncs--;
      // Rotated or closed meanwhile: a rotation happens only once the old journal's records are on
      // disk (synced already, or by a synchronous commit or a full snapshot first), so an error on
      // the old descriptor means nothing.
      if (generation === this.journalGeneration) {
        if (err) this.fail(`journal fsync failed: ${err.message}`);
        else {
          this.syncedSeq = Math.max(this.syncedSeq, upTo);
          // Synced records are persisted state as much as a snapshot is (and far more frequent).
          this.lastPersistAt = Date.now();
          this.setHealthy();
        }
      }
      this.settleDurableWaiters();
      if (this.durableWaiters.length > 0) this.startBackgroundSync();
    });
  }

  /** Resolves the commitDurably() calls whose records are on disk; after a failure, all of them (false). */
  private settleDurableWaiters(): void {
    if (this.durableWaiters.length === 0) return;
    const waiting = this.durableWaiters;
    this.durableWaiters = [];
    for (const w of waiting) {
      if (w.seq <= this.syncedSeq) w.resolve(true);
      else this.durableWaiters.push(w);
    }
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
    try {
      writeJournalSeq(this.sql, this.seq);
      // sql.js (1.16+) exports through SQLite's backup API without closing the connection, so
      // prepared statements and pragmas survive.
      const bytes = this.sql.db.export();
      const tmp = this.temporaryName();
      writeSnapshotFiles(tmp, bytes);
      // A closed store leaves nothing running on its folder: whoever copies, moves or deletes the
      // folder after close() must not race a background unlink. Freeing the old snapshot's blocks
      // on this thread costs a moment at shutdown only.
      installSnapshot(dir, tmp, this.closing ? 'now' : 'background');
      // Everything up to `seq` is in the snapshot now; the journal starts over.
      this.pending = [];
      this.openJournal(true);
      removeIfPresent(path.join(dir, JOURNAL_NEXT_FILE));
      this.snapshotFileBytes = bytes.length;
      this.snapshotSeq = this.seq;
      this.needsSnapshot = false;
      this.lastPersistAt = Date.now();
      this.snapshotInfo = { background: false, ms: performance.now() - started, bytes: bytes.length, at: this.lastPersistAt };
      this.setHealthy();
      return true;
    } catch (err) {
      this.fail(`snapshot failed: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * The engine's periodic snapshot, built off the main thread: pending records are committed, the
   * journal continues in engine.journal.next, and a worker thread folds engine.journal into the
   * last snapshot. The event loop pays for one commit and, when the worker is done, a few renames.
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
    // first: an fdatasync on the event loop, which waited 167 ms behind the disk in a launch run
    // (docs/PERFORMANCE.md, fix 25); the engine avoids it by asking only when journalSynced.
    let throughSeq: number;
    if (this.journalSynced) throughSeq = this.seq - this.pending.length;
    else {
      if (!this.commit()) return false;
      throughSeq = this.seq;
    }
    try {
      this.openJournal(true, JOURNAL_NEXT_FILE);
    } catch (err) {
      this.fail(`journal rotation failed: ${(err as Error).message}`);
      return false;
    }
    const job: CheckpointJob = { dir, throughSeq, tmp: this.temporaryName() };
    let run: CheckpointRun;
    try {
      if (this.snapshotFileBytes < (this.options.exportCheckpointMaxBytes ?? DEFAULT_EXPORT_CHECKPOINT_MAX_BYTES)) {
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
    let resolve!: (ok: boolean) => void;
    const done = new Promise<boolean>((r) => (resolve = r));
    const cp: Checkpoint = { run, job, done, resolve, settled: false };
    this.checkpoint = cp;
    void run.done.then((m) => this.finishCheckpoint(cp, m));
    return true;
  }

  /**
   * A small database's checkpoint: the live database exported now (it holds every record up to
   * `seq`, those not written yet included, which the next journal then repeats and replay skips),
   * and written, fdatasynced and checksummed on the thread pool. Installed like any other.
   */
  private exportCheckpoint(job: CheckpointJob): CheckpointRun {
    const started = performance.now();
    job.throughSeq = this.seq;
    writeJournalSeq(this.sql, this.seq);
    const bytes = this.sql.db.export();
    let cancelled = false;
    const done = writeSnapshotFilesInBackground(job.tmp, bytes).then(
      (): CheckpointMessage => (cancelled ? { ok: false, error: 'cancelled' } : { ok: true, bytes: bytes.length, ms: performance.now() - started }),
      (err: unknown): CheckpointMessage => ({ ok: false, error: `writing ${job.tmp} failed: ${(err as Error).message}` }),
    );
    return {
      where: 'the engine (exported from memory)',
      done,
      cancel: () => {
        cancelled = true;
      },
    };
  }

  /** Resolves when the checkpoint in flight (if any) is installed (true) or abandoned/failed (false). */
  whenCheckpointed(): Promise<boolean> {
    return this.checkpoint?.done ?? Promise.resolve(true);
  }

  /** How the last snapshot went (background or not, time, size): for the benchmark and the tests. */
  get lastSnapshot(): SnapshotInfo | null {
    return this.snapshotInfo;
  }

  /**
   * Runs inside the checkpoint worker: loads the last snapshot, replays engine.journal (every
   * record up to `throughSeq`, which the main thread committed before rotating) and writes the
   * result to `job.tmp` for the main thread to install. Nothing here touches the live database.
   */
  static async buildCheckpoint(job: CheckpointJob): Promise<CheckpointBuilt> {
    const started = performance.now();
    const SQL = await loadSqlJs();
    const { db, verified } = loadVerified(SQL, job.dir);
    const store = new Store(new SqlDatabase(db), { storageDir: null });
    try {
      if (!verified) {
        const check = String(db.exec('PRAGMA quick_check')[0]?.values[0]?.[0]);
        if (check !== 'ok') throw new Error(`the snapshot on disk fails its integrity check (${check})`);
      }
      applyPragmas(db);
      migrate(db);
      store.seq = readJournalSeq(store.sql);
      const complete = store.replayJournal(path.join(job.dir, JOURNAL_FILE), []);
      if (!complete || store.seq !== job.throughSeq) {
        throw new Error(`the journal on disk ends at record ${store.seq}${complete ? '' : ' (with unreadable records)'}, not ${job.throughSeq}`);
      }
      writeJournalSeq(store.sql, job.throughSeq);
      const out = db.export();
      writeSnapshotFiles(job.tmp, out);
      return { bytes: out.length, ms: performance.now() - started };
    } finally {
      store.close();
    }
  }

  /** Persists what is pending and releases the database. */
  close(): void {
    this.closing = true;
    if (this.options.storageDir) {
      this.snapshot() || this.commit();
    }
    if (this.journalFd !== null) closeSync(this.journalFd);
    this.journalFd = null;
    this.sql.close();
  }

  // ---- internals -------------------------------------------------------------------------

  private temporaryName(): string {
    return snapshotTemporaryName(this.options.storageDir!, ++this.tmpCounter);
  }

  private finishCheckpoint(cp: Checkpoint, m: CheckpointMessage): void {
    if (cp.settled) return;
    cp.settled = true;
    cp.run.cancel();
    if (this.checkpoint !== cp) {
      // Abandoned: a synchronous snapshot since holds everything this one would, and more.
      removeSnapshotTemporary(cp.job.tmp);
      cp.resolve(false);
      return;
    }
    this.checkpoint = null;
    const dir = cp.job.dir;
    if (!m.ok) {
      // The live database can still write it, at the main thread's expense; say why, because a
      // worker that cannot rebuild the state from disk points at a problem worth a look.
      removeSnapshotTemporary(cp.job.tmp);
      this.options.onNote?.({
        level: 'warn',
        action: 'database_error',
        message: `background snapshot failed (${m.error}); wrote the snapshot from memory instead`,
        details: { error: m.error, builtIn: cp.run.where },
      });
      cp.resolve(this.snapshot());
      return;
    }
    try {
      installSnapshot(dir, cp.job.tmp, 'background');
      // engine.journal is folded into the snapshot; its continuation becomes the journal. The open
      // descriptor follows the file through the rename.
      renameSync(path.join(dir, JOURNAL_NEXT_FILE), path.join(dir, JOURNAL_FILE));
      fsyncDir(dir);
      this.journalFile = JOURNAL_FILE;
      this.snapshotSeq = cp.job.throughSeq;
      this.snapshotFileBytes = m.bytes;
      this.lastPersistAt = Date.now();
      this.snapshotInfo = { background: true, builtIn: cp.run.where, builderPeakRss: m.peakRss, ms: m.ms, bytes: m.bytes, at: this.lastPersistAt };
      cp.resolve(true);
    } catch (err) {
      this.fail(`snapshot failed: ${(err as Error).message}`);
      cp.resolve(false);
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

  /** Applies the journal; true when new records can be appended to it as it is (no torn or unreadable record). */
  private replayJournal(file: string, notes: StoreNote[]): boolean {
    if (!existsSync(file)) return true;
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    const last = lines.length - 1;
    let applied = 0;
    let skipped = 0;
    this.batch(() => {
      for (let i = 0; i <= last; i++) {
        const line = lines[i];
        if (!line) continue;
        let record: [number, MutationKey, SqlValue[]];
        try {
          record = JSON.parse(line);
        } catch {
          if (i === last) {
            // A crash in the middle of an append leaves a torn final record; it was never
            // acknowledged (the fsync did not return), so dropping it loses nothing.
            notes.push({
              level: 'warn',
              action: 'database_recovered',
              message: `journal ended in a torn record (${line.length} bytes), left by an interrupted write; ignored it`,
              details: { file, bytes: line.length },
            });
          } else {
            skipped++;
          }
          continue;
        }
        const [seq, key, params] = record;
        if (seq <= this.seq) continue; // already in the snapshot
        const sql = MUTATIONS[key];
        if (!sql) {
          skipped++;
          continue;
        }
        try {
          this.sql.statement(sql).run(params);
          applied++;
        } catch {
          skipped++;
        }
        this.seq = seq;
      }
    });
    if (skipped > 0) {
      notes.push({
        level: 'error',
        action: 'database_recovered',
        message: `journal replay skipped ${skipped} unreadable record(s); applied ${applied}`,
        details: { file, applied, skipped },
      });
    }
    return skipped === 0 && (text.length === 0 || text.endsWith('\n'));
  }

  private openJournal(truncate = false, name = JOURNAL_FILE): void {
    const file = path.join(this.options.storageDir!, name);
    // A new descriptor: the old one had nothing unsynced, or the caller made it durable (a
    // synchronous commit before a rotation, or a full snapshot).
    this.journalGeneration++;
    this.syncedSeq = this.writeSeq;
    if (this.journalFd !== null) {
      try {
        closeSync(this.journalFd);
      } catch {
        // already unusable
      }
      this.journalFd = null;
    }
    const fd = openSync(file, 'a');
    // A leftover with records in it must be empty on disk before new records follow; a new or
    // empty file needs no fdatasync (one waited behind the disk for tens of milliseconds).
    if (truncate && fstatSync(fd).size > 0) {
      ftruncateSync(fd, 0);
      fdatasyncSync(fd);
    }
    this.journalFd = fd;
    this.journalFile = name;
    const st = fstatSync(fd);
    this.journalFileBytes = st.size;
    this.journalIdentity = `${st.dev}:${st.ino}`;
    this.settleDurableWaiters();
  }

  /**
   * An open descriptor keeps writing into a journal whose folder was deleted or replaced, and
   * those writes would be lost silently; so every commit checks that the path is still our file.
   */
  private checkJournalIdentity(): void {
    const file = path.join(this.options.storageDir!, this.journalFile);
    let st;
    try {
      st = statSync(file);
    } catch (err) {
      throw new Error(`journal ${file} is gone (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (`${st.dev}:${st.ino}` !== this.journalIdentity) throw new Error(`journal ${file} was replaced`);
  }

  private fail(message: string): void {
    // Whatever was pending will be captured by the next full snapshot; holding it would only
    // grow memory while storage is down.
    this.pending = [];
    this.needsSnapshot = true;
    this.lastFailureAt = Date.now();
    // Launches waiting for their journal records: those records may never reach the disk.
    for (const w of this.durableWaiters.splice(0)) w.resolve(false);
    if (this.error === null) {
      this.error = message;
      this.options.onHealthChange?.(false, message);
    } else {
      this.error = message;
    }
  }

  private setHealthy(): void {
    if (this.error !== null) {
      this.error = null;
      this.options.onHealthChange?.(true, null);
    }
  }
}



/** The worker's heap: a small young generation, as the checkpoint's garbage (replayed journal records) is short-lived. */
const CHECKPOINT_WORKER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/**
 * The checkpoint on a worker thread of this process: dist/checkpoint-worker.js beside the bundle
 * running this code, or, when running from TypeScript sources (unit tests), checkpointWorker.ts
 * through tsx. The fallback when no checkpoint process can be started.
 */
function startCheckpointThread(job: CheckpointJob): CheckpointRun {
  const bundled = path.join(__dirname, 'checkpoint-worker.js');
  const source = path.join(__dirname, 'checkpointWorker.ts');
  let worker: Worker;
  if (existsSync(bundled)) worker = new Worker(bundled, { workerData: job, resourceLimits: CHECKPOINT_WORKER_LIMITS });
  else if (existsSync(source)) {
    worker = new Worker(`require('tsx/cjs'); require(${JSON.stringify(source)});`, { eval: true, workerData: job, resourceLimits: CHECKPOINT_WORKER_LIMITS });
  } else throw new Error(`checkpoint-worker.js is missing from ${__dirname}`);
  // A checkpoint never keeps the process alive: one cut short leaves only a temporary file.
  worker.unref();
  const done = new Promise<CheckpointMessage>((resolve) => {
    worker.once('message', resolve);
    worker.once('error', (err) => resolve({ ok: false, error: err.message }));
    worker.once('exit', (code) => resolve({ ok: false, error: `the worker exited with code ${code}` }));
  });
  return { where: 'worker thread', done, cancel: () => void worker.terminate() };
}











