// The engine's persistence policy: every second the journal is committed, or, when one is due, a
// snapshot folds it in; every minute the log is pruned to its count and age limits.
import type { StoreBackend } from '../store/backend';
import { isStoreUnavailable } from '../store/pgStore';

export interface PersistenceOptions {
  /** Full snapshot cadence at most (default 30 s); the journal covers what happens in between. */
  snapshotIntervalMs?: number;
  /** The journal a snapshot waits for (see journalWorthFolding); 0 turns the wait off. */
  snapshotMinJournalBytes?: number;
  logMaxEntries: number;
  logMaxAgeDays: number;
}

export interface PersistenceHooks {
  /** The newest log id handed out: kept in meta, so ids keep growing after every entry is pruned. */
  lastLogId(): number;
  /** True once the engine has closed: nothing more is written. */
  isClosed(): boolean;
  /** After each second's commit or snapshot. */
  onPersisted(): void;
  /** Pruning removed the last log entries of these items (their captured output goes too). */
  onItemsForgotten?(itemIds: string[]): void;
}

const PERSIST_INTERVAL_MS = 1000;
/** Persist ticks a due snapshot waits for the journal to be synced before it syncs it itself. */
const MAX_SNAPSHOT_DEFERRALS = 5;
/**
 * A snapshot rewrites the whole database to fold the journal in, so it waits until the journal is
 * worth it: replaying a journal of a MiB at startup is quick, while a checkpoint costs CPU in
 * proportion to the whole database. Past the floor, the journal may grow to 1/32 of the snapshot
 * (the same rule as Redis's AOF rewrite: a size floor and a growth ratio), which keeps replay a
 * small part of startup.
 */
const DEFAULT_SNAPSHOT_MIN_JOURNAL_BYTES = 1 << 20;
const SNAPSHOT_JOURNAL_FRACTION = 1 / 32;
const PRUNE_INTERVAL_MS = 60_000;
/**
 * Entries deleted per pruning step (with their FTS rows); steps are 100 ms apart. Small steps keep
 * the event loop responsive and still prune 10,000 entries a second.
 */
const PRUNE_BATCH = 1_000;
/**
 * Log entries added to the full-text index per step (Store.indexLogs), steps one turn of the event
 * loop apart: about 4 µs an entry, so a step holds the loop for a few milliseconds.
 */
const INDEX_STEP = 1_000;

export class PersistencePolicy {
  private persistTimer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private lastSnapshotAt = Date.now();
  /** Persist ticks the due snapshot has waited for the journal's fdatasync to catch up. */
  private snapshotDeferrals = 0;
  /** A step of indexing the log is queued (indexLogs). */
  private indexing = false;

  constructor(
    private readonly store: StoreBackend,
    private readonly options: PersistenceOptions,
    private readonly hooks: PersistenceHooks,
  ) {}

  /** Starts the timers and prunes once now: an engine that was off for a while starts within its limits. */
  start(): void {
    this.persistTimer = setInterval(() => this.persist(), PERSIST_INTERVAL_MS);
    this.persistTimer.unref();
    this.pruneTimer = setInterval(() => this.pruneLogs(), PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
    this.pruneLogs();
  }

  stop(): void {
    clearInterval(this.persistTimer);
    clearInterval(this.pruneTimer);
  }

  private persist(): void {
    if (this.hooks.isClosed()) return;
    // Before a snapshot, so that it holds the index up to date (a start then has nothing to add).
    this.indexLogs();
    const interval = this.options.snapshotIntervalMs ?? 30_000;
    // An idle engine does not rewrite an unchanged database: even built off the main thread, a
    // snapshot of a large database costs seconds of a core and a second copy of it.
    const due = Date.now() - this.lastSnapshotAt >= interval && this.store.changedSinceSnapshot && this.journalWorthFolding();
    // Starting a checkpoint while journal records wait for the disk would take a synchronous
    // fdatasync first (Store.snapshotInBackground), so it waits for a tick at which the thread
    // pool has caught up; a second is nothing against the interval, and a disk that never catches
    // up gets the synchronous path after a few tries.
    if (due && (this.store.journalSynced || this.snapshotDeferrals >= MAX_SNAPSHOT_DEFERRALS)) {
      this.snapshotDeferrals = 0;
      this.store.setMeta('last_log_id', String(this.hooks.lastLogId()));
      if (this.store.snapshotInBackground()) this.lastSnapshotAt = Date.now();
    } else {
      if (due) this.snapshotDeferrals++;
      // Off the event loop: nothing waits for this one (launches wait for their own).
      this.store.commit('background');
    }
    this.hooks.onPersisted();
  }

  /**
   * The log entries written since the last tick go into the full-text index, in steps of
   * INDEX_STEP. A search that reads the index first adds whatever is still missing itself.
   */
  private indexLogs(): void {
    if (this.indexing) return;
    const step = (): void => {
      this.indexing = false;
      if (this.hooks.isClosed()) return;
      if (this.store.indexLogs(INDEX_STEP) < INDEX_STEP) return;
      this.indexing = true;
      setImmediate(step);
    };
    step();
  }

  /** At least snapshotMinJournalBytes (default 1 MiB) and 1/32 of the snapshot it would rewrite. */
  private journalWorthFolding(): boolean {
    const { journalBytes, snapshotBytes } = this.store.journalSize;
    const floor = this.options.snapshotMinJournalBytes ?? DEFAULT_SNAPSHOT_MIN_JOURNAL_BYTES;
    // 0 turns the policy off: every interval with a change (tests that need checkpoints to happen).
    return floor === 0 || journalBytes >= Math.max(floor, snapshotBytes * SNAPSHOT_JOURNAL_FRACTION);
  }

  private pruneLogs(): void {
    try {
      this.pruneStep();
    } catch (err) {
      // A fleet's database that cannot be reached: the next minute tries again.
      if (!isStoreUnavailable(err)) throw err;
    }
  }

  private pruneStep(): void {
    if (this.hooks.isClosed()) return;
    const { logMaxEntries, logMaxAgeDays } = this.options;
    // Two subqueries: SQLite answers a lone MIN or MAX from the index, but both in one SELECT scan.
    const { oldest, newest } = this.store.get<{ oldest: number | null; newest: number | null }>(
      'SELECT (SELECT MIN(id) FROM logs) AS oldest, (SELECT MAX(id) FROM logs) AS newest',
    ) ?? { oldest: null, newest: null };
    if (oldest === null || newest === null) return;
    // Ids only grow and pruning removes the oldest, so the log holds at most newest - oldest + 1
    // entries, and keeping ids above newest - maxEntries keeps at most maxEntries (fewer only if a
    // crash lost entries whose ids were taken). Both ends come from the primary key, where
    // counting with OFFSET would walk every entry.
    const byCount = newest - oldest + 1 > logMaxEntries ? newest - logMaxEntries : 0;
    const cutoff = Date.now() - logMaxAgeDays * 86_400_000;
    // The newest entry older than the cutoff, read from the ts index (timestamps grow with ids).
    // MAX(id) ... WHERE ts < ? would let SQLite walk the primary key down from the newest entry
    // instead: the whole log when no entry is that old.
    const byAge = this.store.get<{ id: number }>('SELECT id FROM logs WHERE ts < ? ORDER BY ts DESC LIMIT 1', [cutoff])?.id ?? 0;
    const limit = Math.max(byCount, byAge);
    if (limit <= 0) return;
    // Bounded batches keep the event loop responsive; the next round continues.
    const upTo = Math.min(limit, oldest + PRUNE_BATCH - 1);
    // The items this step touches, to learn afterwards which of them have no entry left.
    const touched = this.hooks.onItemsForgotten
      ? this.store.all<{ item_id: string }>('SELECT DISTINCT item_id FROM logs WHERE id <= ? AND item_id IS NOT NULL', [upTo]).map((r) => r.item_id)
      : [];
    this.store.batch(() => {
      this.store.mutate('logs_fts_prune_indexed', [upTo]);
      this.store.mutate('logs_prune', [upTo]);
      // Startup takes the next id from the newest entry or this; with every entry pruned (by age)
      // only this remains, and the journal carries it even when no snapshot follows for a while.
      this.store.setMeta('last_log_id', String(this.hooks.lastLogId()));
    });
    if (touched.length > 0) {
      const forgotten = touched.filter((id) => this.store.get('SELECT 1 AS x FROM logs WHERE item_id = ? LIMIT 1', [id]) === undefined);
      if (forgotten.length > 0) this.hooks.onItemsForgotten!(forgotten);
    }
    if (upTo < limit) setTimeout(() => this.pruneLogs(), 100).unref();
  }
}
