// The journal side of the sql.js store: every mutation runs a fixed, named statement (schema.ts)
// and appends `[seq, key, params]` to the journal (journal.ts), which commit() writes and
// fdatasyncs; while storage fails the state stays in memory and the next persist is a full
// snapshot. Replay runs the same statements, so there is one code path for "do it" and "redo it".
// How snapshots are taken (and so how the journal starts over) is the Store's (store.ts).
import path from 'node:path';
import type { SqlValue } from 'sql.js';
import { SNAPSHOT_FILE, storageBytes } from './files';
import { Journal } from './journal';
import { MUTATIONS, type MutationKey } from './schema';
import type { SqlDatabase } from './sqlJs';
import type { StoreOptions } from './store';

/** While storage fails, how often a persist is retried. */
const RETRY_INTERVAL_MS = 1000;
/**
 * Records that may wait for the next commit; past this many, a batch writes them to the journal
 * as it ends (not synced: the commit still does that). Ingestion records ~3 per item, ~30,000 a
 * second: held until the once-a-second commit they outlived V8's young generation, were joined
 * into one string of several MB and copied into a Buffer, tens of MB of garbage in the old
 * generation that set the engine's peak memory while a big queue came in.
 */
const WRITE_AHEAD_RECORDS = 256;

/** A sql.js database whose mutations are journaled; Store adds its reads and snapshots. */
export abstract class JournaledStore {
  protected readonly journal: Journal;
  /** Journal records of the mutations since the last commit, not written yet. */
  protected pending: string[] = [];
  protected seq = 0;
  /** `seq` as of the last snapshot: everything up to it is in engine.sqlite. */
  protected snapshotSeq = 0;
  /** Set when the journal file is gone or unwritable: the next persist must be a full snapshot. */
  protected needsSnapshot = false;
  protected error: string | null = null;
  private lastFailureAt = 0;
  protected lastPersistAt: number | null = null;
  /** Nesting of batch(): only the outermost one's rollback takes journal records back. */
  private batchDepth = 0;
  private readonly mutationCounts = new Map<MutationKey, number>();
  /** The newest log entry written through mutate(): Store.indexLogs has nothing to add until it passes the index. */
  protected logsWritten = 0;

  protected constructor(
    protected readonly sql: SqlDatabase,
    protected readonly options: StoreOptions,
  ) {
    this.journal = new Journal(options.storageDir, {
      synced: () => {
        // Synced records are persisted state as much as a snapshot is (and far more frequent).
        this.lastPersistAt = Date.now();
        this.setHealthy();
      },
      failed: (message) => this.fail(message),
    });
  }

  /**
   * Writes the whole database atomically and starts an empty journal. Returns false (and records
   * the error) when storage is failing.
   */
  abstract snapshot(): boolean;

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
    return this.options.storageDir ? storageBytes(this.options.storageDir) : 0;
  }

  // ---- mutations -------------------------------------------------------------------------

  /**
   * How many times each statement has run in this process: readers that keep something derived
   * from the rows (the item search text, src/core/features/search) know from it whether it is stale.
   */
  mutations(key: MutationKey): number {
    return this.mutationCounts.get(key) ?? 0;
  }

  mutate(key: MutationKey, params: SqlValue[]): void {
    this.mutationCounts.set(key, (this.mutationCounts.get(key) ?? 0) + 1);
    if (key === 'log_insert' && (params[0] as number) > this.logsWritten) this.logsWritten = params[0] as number;
    this.sql.statement(MUTATIONS[key]).run(params);
    if (this.options.storageDir && !this.needsSnapshot) {
      this.pending.push(JSON.stringify([++this.seq, key, params]));
    }
  }

  /** Runs `fn` in one SQL transaction: many mutations at the cost of one. */
  batch<T>(fn: () => T): T {
    if (this.batchDepth > 0) return this.sql.batch(fn);
    const pendingBefore = this.pending.length;
    const seqBefore = this.seq;
    this.batchDepth++;
    try {
      const result = this.sql.batch(fn);
      if (this.pending.length >= WRITE_AHEAD_RECORDS && this.journalWritable) this.writePending();
      return result;
    } catch (err) {
      // SQLite rolled the batch back, so its journal records must go too: replayed after a crash
      // they would redo what never happened. When they can no longer be taken back (written, or
      // dropped by a storage failure), the next persist is a snapshot of the live database.
      if (this.pending.length - pendingBefore === this.seq - seqBefore) {
        this.pending.length = pendingBefore;
        this.seq = seqBefore;
      } else if (this.options.storageDir) this.needsSnapshot = true;
      throw err;
    } finally {
      this.batchDepth--;
    }
  }

  /** Whether records may be appended to the journal now (else there is no storage, or the next persist is a snapshot). */
  private get journalWritable(): boolean {
    return Boolean(this.options.storageDir) && !this.needsSnapshot && this.journal.isOpen;
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
   * writes a large snapshot that can take a second of the event loop (docs/PERFORMANCE.md).
   * Launches use commitDurably(), which waits for the disk without blocking the event loop.
   */
  commit(mode: 'sync' | 'background' = 'sync'): boolean {
    if (mode === 'background' && this.journalWritable) {
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
      this.journal.write(this.pending);
      // Also what a background commit wrote and has not synced yet: a spawn must not wait on it.
      this.journal.syncNow();
      this.lastPersistAt = Date.now();
      this.pending = [];
      this.setHealthy();
      return true;
    } catch (err) {
      this.fail(`journal write failed: ${(err as Error).message}`);
      return false;
    }
  }

  /** Whether a background fdatasync of the journal is still running (for tests). */
  get journalSyncPending(): boolean {
    return this.journal.syncPending;
  }

  /** Whether every record written to the journal is on disk (mutations not written yet aside). */
  get journalSynced(): boolean {
    return this.journal.synced;
  }

  /**
   * Journals pending mutations and resolves once they are on disk: true, or false when storage
   * failed (the error is recorded and the state stays in memory, as with commit()). The records
   * are written at once and the fdatasync runs on libuv's thread pool, so the event loop goes on
   * meanwhile; calls that arrive while one runs share the next, so launches that become due
   * together wait for one fdatasync. This is how the engine keeps its rule that every attempt is
   * on disk before its process is spawned without a synchronous fdatasync before each spawn, which
   * held the event loop on every launch, and longest behind a checkpoint's writes
   * (docs/PERFORMANCE.md).
   */
  commitDurably(): Promise<boolean> {
    if (!this.options.storageDir) return Promise.resolve(true);
    // Recovery (a full snapshot) and a journal that is not open take the synchronous path.
    if (this.needsSnapshot || !this.journal.isOpen) return Promise.resolve(this.commit());
    if (!this.writePending()) return Promise.resolve(false);
    if (this.journal.synced) return Promise.resolve(this.error === null);
    return this.journal.whenDurable();
  }

  private commitInBackground(): boolean {
    if (!this.writePending()) return false;
    this.journal.syncInBackground();
    return this.error === null;
  }

  /** Appends pending mutations to the journal, without syncing. False (recorded) when that fails. */
  private writePending(): boolean {
    if (this.pending.length === 0) return true;
    try {
      this.journal.write(this.pending);
      this.pending = [];
      return true;
    } catch (err) {
      this.fail(`journal write failed: ${(err as Error).message}`);
      return false;
    }
  }

  protected fail(message: string): void {
    // Whatever was pending will be captured by the next full snapshot; holding it would only
    // grow memory while storage is down.
    this.pending = [];
    this.needsSnapshot = true;
    this.lastFailureAt = Date.now();
    // Launches waiting for their journal records: those records may never reach the disk.
    this.journal.failWaiters();
    if (this.error === null) {
      this.error = message;
      this.options.onHealthChange?.(false, message);
    } else {
      this.error = message;
    }
  }

  protected setHealthy(): void {
    if (this.error !== null) {
      this.error = null;
      this.options.onHealthChange?.(true, null);
    }
  }
}
