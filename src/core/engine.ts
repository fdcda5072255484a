// The launch engine: polls its sources, ingests items, launches due items within the concurrency
// limit, retries failures with backoff and records every outcome in the store. Counters are kept
// up to date on every transition, so the API never counts rows to answer /stats.
import type {
  EngineState,
  HealthStatus,
  ItemOutcome,
  ItemSummary,
  LaunchRecord,
  LogAction,
  LogEntry,
  LogLevel,
  SourceStatus,
  StatsOverview,
  StatusResponse,
} from '../shared/api';
import { ENGINE_NAME } from '../shared/api';
import type { EngineEvent, HealthSnapshot, LogPage, LogQuery, MonitoredEngine } from './monitoredEngine';
import { definitionHash, type ItemDefinition } from './items';
import { resultWithoutProcess, type AttemptResult, type RunningAttempt } from './attemptProcess';
import { AttemptLauncher, type LaunchHelperEntry } from './launchHelperClient';
import { QueueDirectorySource, type QueueFileRead } from './queueSource';
import { Store } from './store';
import { LEVEL_RANK, queryLogs } from './logQuery';

export interface EngineOptions {
  workspaceFolders: string[];
  /** null: memory only (tests); otherwise the folder for engine.sqlite and its journal. */
  storageDir: string | null;
  queueDirectory: string;
  pollIntervalMs: number;
  concurrency: number;
  maxAttempts: number;
  timeoutMs: number;
  logMaxEntries: number;
  logMaxAgeDays: number;
  /** How the engine starts: launching, stopped by the user/settings, or restricted (untrusted). */
  initialMode: 'running' | 'stopped' | 'restricted';
  version: string;
  /**
   * Full snapshot cadence at most; the journal covers what happens in between. A snapshot is
   * taken only once the journal is worth folding in (snapshotMinJournalBytes).
   */
  snapshotIntervalMs?: number;
  /**
   * The journal a snapshot waits for: at least this many bytes (default 1 MiB) and 1/32 of the
   * snapshot it would rewrite. 0: every interval in which something changed.
   */
  snapshotMinJournalBytes?: number;
  /** Base of the exponential backoff; the contract fixes 1 s, tests may shorten it. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Where attempts are spawned: an entry, in that launch helper process (found by the host,
   * src/host/launchHelperEntry.ts); null, in the engine's own process; undefined, none was found:
   * in the engine's own process after one warning.
   */
  launchHelper?: LaunchHelperEntry | null;
}

type Mode = 'running' | 'stopped' | 'restricted';

interface ItemRow {
  seq: number;
  id: string;
  name: string;
  source: string;
  definition: string;
  outcome: ItemOutcome;
  attempts: number;
  max_attempts: number;
  due_at: number | null;
  running: number;
  last_error: string | null;
  updated_at: number;
}

interface ActiveAttempt {
  attemptId: number;
  item: ItemDefinition;
  attempt: number;
  startedAt: number;
  /** Undefined while its journal records are on their way to the disk (not spawned yet). */
  run: RunningAttempt | undefined;
}

const PERSIST_INTERVAL_MS = 1000;
/** Persist ticks a due snapshot waits for the journal to be synced before it syncs it itself. */
const MAX_SNAPSHOT_DEFERRALS = 5;
/**
 * A snapshot rewrites the whole database to fold the journal in, so it waits until the journal is
 * worth it: replaying 1 MiB of journal at startup takes tens of milliseconds, while a checkpoint
 * took ~270 ms of CPU at 2,000 items and seconds at 1,000,000 log entries (docs/PERFORMANCE.md,
 * fix 26). Past the floor, the journal may grow to 1/32 of the snapshot (the same rule as Redis's
 * AOF rewrite: a size floor and a growth ratio), which keeps replay a small part of startup.
 */
const DEFAULT_SNAPSHOT_MIN_JOURNAL_BYTES = 1 << 20;
const SNAPSHOT_JOURNAL_FRACTION = 1 / 32;
const PRUNE_INTERVAL_MS = 60_000;
/**
 * Entries deleted per pruning step (with their FTS rows); steps are 100 ms apart. 10,000 at once
 * blocked the event loop for ~240 ms on the benchmark machine; 1,000 take ~25 ms and still prune
 * 10,000 entries a second (docs/PERFORMANCE.md).
 */
const PRUNE_BATCH = 1_000;
/** Ingestion works in chunks of this many entries and yields once a turn has run this long. */
const INGEST_CHUNK = 100;
const INGEST_SLICE_MS = 10;

export class Engine implements MonitoredEngine {
  readonly version: string;
  private mode: Mode;
  private readonly sources: QueueDirectorySource[];
  private readonly sourceStatus: SourceStatus[];
  private readonly listeners = new Set<(event: EngineEvent) => void>();
  private readonly active = new Map<number, ActiveAttempt>();
  private readonly startedAt = Date.now();
  private readonly launcher: AttemptLauncher;

  private counters = { launched: 0, pending: 0, failed: 0, totalLaunches: 0, totalFailed: 0 };
  private lastPollAt: number | null = null;
  private polls = 0;
  /** When ingestion last let the event loop run (see ingestFile). */
  private sliceStartedAt = 0;
  private scanner = { lastScanAt: null as number | null, lastScanDurationMs: null as number | null, scans: 0, itemsDiscovered: 0, itemsRejected: 0 };
  private lastLaunch: LaunchRecord | null = null;
  private recovery: { at: string; message: string } | null = null;
  private lastLogId = 0;
  private lastAttemptId = 0;

  private pollTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private persistTimer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** Persist ticks the due snapshot has waited for the journal's fdatasync to catch up. */
  private snapshotDeferrals = 0;
  /** Launch rounds waiting for their journal records to reach the disk. */
  private readonly launching = new Set<Promise<void>>();
  private dispatchQueued = false;
  private lastSnapshotAt = Date.now();
  private closed = false;
  private started = false;

  private constructor(
    private readonly store: Store,
    private readonly options: EngineOptions,
  ) {
    this.version = options.version;
    this.mode = options.initialMode;
    this.launcher = new AttemptLauncher({
      entry: options.launchHelper,
      warn: (message, details) => this.log('engine_started', 'warn', message, null, details),
    });
    this.sources = options.workspaceFolders.map(
      (folder) =>
        new QueueDirectorySource(folder, options.queueDirectory, {
          timeoutMs: options.timeoutMs,
          maxAttempts: options.maxAttempts,
        }),
    );
    this.sourceStatus = this.sources.map((s) => ({
      kind: s.kind,
      location: s.location,
      lastScanAt: null,
      lastError: null,
      itemsDiscovered: 0,
    }));
  }

  /** Opens the store, recovers from a crash if there was one, and loads the counters. */
  static async create(options: EngineOptions): Promise<Engine> {
    let engine: Engine | undefined;
    const { store, notes } = await Store.open({
      storageDir: options.storageDir,
      onHealthChange: (ok, error) => engine?.onStorageHealth(ok, error),
      onNote: (note) => engine?.log(note.action, note.level, note.message, null, note.details ?? null),
      // Periodic snapshots are built in a process the launch helper starts, outside this one's
      // address space (docs/PERFORMANCE.md); without a ready helper, on a worker thread.
      runCheckpoint: (job) => engine?.launcher.runCheckpoint(job),
    });
    engine = new Engine(store, options);
    engine.loadState();
    for (const note of notes) engine.log(note.action, note.level, note.message, null, note.details ?? null);
    // /status keeps the repair in view after the log entry has scrolled away.
    if (notes.length > 0) engine.recovery = { at: new Date().toISOString(), message: notes.map((n) => n.message).join('; ') };
    engine.recoverInterrupted();
    return engine;
  }

  // ---- lifecycle ------------------------------------------------------------------------

  /** The first poll completes before this resolves, so a server started after it never reports a database that was never polled. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.log('engine_started', 'info', `engine started (${this.mode}), version ${this.version}`, null, {
      mode: this.mode,
      workspaceFolders: this.options.workspaceFolders,
      pollIntervalMs: this.options.pollIntervalMs,
      concurrency: this.options.concurrency,
    });
    this.persistTimer = setInterval(() => this.persist(), PERSIST_INTERVAL_MS);
    this.persistTimer.unref();
    this.pruneTimer = setInterval(() => this.pruneLogs(), PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
    this.pruneLogs();
    // The helper also builds the periodic snapshots (in processes it starts), so a persisted
    // engine has it ready before its first snapshot even if it has launched nothing yet.
    if (this.options.storageDir) this.launcher.prepare();
    await this.poll();
    this.schedulePoll();
  }

  /** Stop launching (running attempts finish and are recorded). */
  stopLaunching(reason = 'stopped by the user'): void {
    if (this.mode === 'stopped') return;
    const wasRestricted = this.mode === 'restricted';
    this.mode = 'stopped';
    clearTimeout(this.pollTimer);
    clearTimeout(this.dueTimer);
    if (!wasRestricted) this.log('engine_stopped', 'info', `engine ${reason}`, null, { running: this.active.size });
    this.emit({ type: 'stats' });
  }

  /** Start (or resume) launching. Refused while restricted: trust must be granted first. */
  startLaunching(): void {
    if (this.mode === 'running') return;
    if (this.mode === 'restricted') throw new Error('the workspace is not trusted: grant Workspace Trust to let the engine launch items');
    this.mode = 'running';
    this.log('engine_started', 'info', 'engine started by the user', null, { mode: this.mode });
    this.emit({ type: 'stats' });
    void this.poll().then(() => this.schedulePoll());
  }

  grantTrust(): void {
    if (this.mode !== 'restricted') return;
    this.mode = 'running';
    this.log('engine_started', 'info', 'workspace trusted: engine launching items', null, { mode: this.mode });
    this.emit({ type: 'stats' });
    void this.poll().then(() => this.schedulePoll());
  }

  get state(): Mode {
    return this.mode;
  }

  /**
   * Graceful end: stop launching, let running attempts finish for up to `graceMs`, end the rest
   * (they stay recorded as running, so the next start records them as interrupted and retries),
   * persist, close.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.pollTimer);
    clearTimeout(this.dueTimer);
    const wasMode = this.mode;
    this.mode = 'stopped';
    if (wasMode !== 'stopped') {
      this.log('engine_stopped', 'info', 'engine shutting down', null, { running: this.active.size, graceMs });
    }
    // Attempts journaled but not spawned yet are spawned once the disk has them (mode no longer
    // matters to that): then every active attempt has a process to wait for or terminate.
    await Promise.all(this.launching);
    if (this.active.size > 0) {
      const all = Promise.all([...this.active.values()].map((a) => a.run?.done));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      // Let the exit handlers record the outcomes that just arrived.
      await new Promise((r) => setImmediate(r));
      for (const a of this.active.values()) a.run?.terminate(1000);
    }
    await this.polling;
    this.closed = true;
    // The snapshot store.close() takes below holds everything a checkpoint in flight would.
    this.store.abandonCheckpoint();
    // After `closed`, so what ends now stays recorded as running (interrupted at the next start):
    // SIGKILL after the same 1 s for what ignores SIGTERM, then the helper exits.
    await this.launcher.close(1000);
    clearInterval(this.persistTimer);
    clearInterval(this.pruneTimer);
    this.store.close();
    this.listeners.clear();
  }

  // ---- control --------------------------------------------------------------------------

  pollNow(): Promise<void> {
    return this.poll();
  }

  retryItem(itemId: string): void {
    const row = this.store.get<ItemRow>('SELECT * FROM items WHERE id = ?', [itemId]);
    if (!row) throw new Error(`no item with id "${itemId}"`);
    if (row.outcome !== 'failed') throw new Error(`item "${itemId}" is ${row.outcome}; only failed items can be retried`);
    this.store.batch(() => {
      const now = Date.now();
      this.store.mutate('item_state', ['pending', 0, now, 0, row.last_error, now, itemId]);
      this.counters.failed--;
      this.counters.pending++;
      this.log('item_retried', 'info', `"${row.name}" retried by hand; attempts reset`, itemId, { previousAttempts: row.attempts });
    });
    this.store.commit();
    this.emit({ type: 'stats' });
    this.scheduleDispatch();
  }

  retryAllFailed(): number {
    const ids = this.store.all<{ id: string }>("SELECT id FROM items WHERE outcome = 'failed' ORDER BY seq");
    for (const { id } of ids) this.retryItem(id);
    return ids.length;
  }

  // ---- MonitoredEngine ------------------------------------------------------------------

  stats(): StatsOverview {
    const c = this.counters;
    return {
      total: c.launched + c.pending + c.failed,
      launched: c.launched,
      pending: c.pending,
      failed: c.failed,
      totalLaunches: c.totalLaunches,
      totalFailed: c.totalFailed,
      lastPollAt: this.lastPollAt === null ? null : new Date(this.lastPollAt).toISOString(),
    };
  }

  health(): HealthSnapshot {
    const database = this.store.lastError === null ? 'ok' : 'error';
    const engine = this.engineState();
    let status: HealthStatus = 'healthy';
    if (database === 'error' || engine === 'stalled') status = 'unhealthy';
    else if (engine === 'stopped' || engine === 'restricted') status = 'degraded';
    return { status, checks: { database, engine } };
  }

  status(): Omit<StatusResponse, 'timestamp' | 'server'> {
    const now = Date.now();
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return {
      engine: {
        name: ENGINE_NAME,
        version: this.version,
        state: this.engineState(),
        startedAt: new Date(this.startedAt).toISOString(),
        uptimeMs: now - this.startedAt,
        pollIntervalMs: this.options.pollIntervalMs,
        concurrency: this.options.concurrency,
        running: this.active.size,
        polls: this.polls,
      },
      scanner: {
        sources: this.sourceStatus.map((s) => ({ ...s })),
        lastScanAt: iso(this.scanner.lastScanAt),
        lastScanDurationMs: this.scanner.lastScanDurationMs,
        scans: this.scanner.scans,
        itemsDiscovered: this.scanner.itemsDiscovered,
        itemsRejected: this.scanner.itemsRejected,
      },
      stats: this.stats(),
      lastLaunch: this.lastLaunch ? { ...this.lastLaunch } : null,
      database: {
        path: this.store.databasePath,
        sizeBytes: this.store.sizeBytes(),
        lastPersistAt: iso(this.store.lastPersistTime),
        lastError: this.store.lastError,
        recovery: this.recovery,
      },
    };
  }

  queryLogs(query: LogQuery): LogPage {
    return queryLogs(this.store, query);
  }

  listItems(filter: { outcome?: ItemOutcome; limit: number; offset: number }): { items: ItemSummary[]; total: number } {
    const rows = filter.outcome
      ? this.store.all<ItemRow>('SELECT * FROM items WHERE outcome = ? ORDER BY seq LIMIT ? OFFSET ?', [filter.outcome, filter.limit, filter.offset])
      : this.store.all<ItemRow>('SELECT * FROM items ORDER BY seq LIMIT ? OFFSET ?', [filter.limit, filter.offset]);
    const stats = this.stats();
    const total = filter.outcome ? stats[filter.outcome] : stats.total;
    const now = Date.now();
    return { items: rows.map((r) => toSummary(r, now)), total };
  }

  subscribe(listener: (event: EngineEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- polling and ingestion ------------------------------------------------------------

  private schedulePoll(): void {
    clearTimeout(this.pollTimer);
    if (this.closed || this.mode === 'stopped') return;
    this.pollTimer = setTimeout(() => {
      void this.poll().finally(() => this.schedulePoll());
    }, this.options.pollIntervalMs);
  }

  private poll(): Promise<void> {
    // A poll already under way serves whoever asks for one meanwhile.
    this.polling ??= this.doPoll().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async doPoll(): Promise<void> {
    if (this.closed) return;
    const started = Date.now();
    this.lastPollAt = started;
    this.polls++;
    this.store.setMeta('last_poll_at', String(started));
    this.sliceStartedAt = performance.now();
    for (let i = 0; i < this.sources.length; i++) {
      const source = this.sources[i];
      const status = this.sourceStatus[i];
      const scan = await source.scan((p) => this.knownFingerprint(p));
      if (this.closed) return;
      status.lastScanAt = new Date().toISOString();
      if (scan.error !== status.lastError && scan.error !== null) {
        this.log('source_error', 'error', scan.error, null, { source: source.location });
      }
      status.lastError = scan.error;
      for (const file of scan.changed) {
        await this.ingestFile(file, status);
        if (this.closed) return;
      }
    }
    this.scanner.scans++;
    this.scanner.lastScanAt = Date.now();
    this.scanner.lastScanDurationMs = this.scanner.lastScanAt - started;
    // Written now (a kill -9 cannot lose what was ingested), synced on the thread pool; a launch
    // of these items waits for the disk itself.
    this.store.commit('background');
    this.emit({ type: 'stats' });
    this.scheduleDispatch();
  }

  private knownFingerprint(absPath: string): string | undefined {
    return this.store.get<{ fingerprint: string }>('SELECT fingerprint FROM source_files WHERE path = ?', [absPath])?.fingerprint;
  }

  /**
   * Ingests a file's entries in chunks, yielding to the event loop between them: 2,000 queued
   * items ingested in one go blocked it for ~180 ms (docs/PERFORMANCE.md). The file's fingerprint
   * is recorded last, so an engine stopped half way reads the file again and skips what it has.
   */
  private async ingestFile(file: QueueFileRead, status: SourceStatus): Promise<void> {
    if (file.fileError) this.store.batch(() => this.reject(file.relPath, null, file.fileError!));
    for (let start = 0; start < file.entries.length; start += INGEST_CHUNK) {
      if (performance.now() - this.sliceStartedAt > INGEST_SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        this.sliceStartedAt = performance.now();
        if (this.closed) return;
      }
      this.store.batch(() => this.ingestEntries(file, file.entries.slice(start, start + INGEST_CHUNK), status));
    }
    this.store.mutate('source_file_set', [file.absPath, file.fingerprint]);
  }

  private ingestEntries(file: QueueFileRead, entries: QueueFileRead['entries'], status: SourceStatus): void {
    for (const entry of entries) {
      if (!entry.result.ok) {
        this.reject(file.relPath, entry.index, entry.result.reason);
        continue;
      }
      const item = entry.result.item;
      const hash = definitionHash(item);
      const known = this.store.get<{ def_hash: string; source: string }>('SELECT def_hash, source FROM items WHERE id = ?', [item.id]);
      if (known) {
        if (known.def_hash !== hash) {
          this.reject(
            file.relPath,
            entry.index,
            `id "${item.id}" is already known with a different definition (from ${known.source}); give the new item another id`,
          );
        }
        continue; // the same item read again: ingestion is idempotent
      }
      const now = Date.now();
      this.store.mutate('item_insert', [
        item.id,
        item.name,
        file.relPath,
        JSON.stringify(item),
        hash,
        item.maxAttempts,
        item.runAt,
        item.runAt ?? 0,
        now,
        now,
      ]);
      this.counters.pending++;
      this.scanner.itemsDiscovered++;
      status.itemsDiscovered++;
      const when = item.runAt && item.runAt > now ? `, scheduled for ${new Date(item.runAt).toISOString()}` : '';
      this.log('item_discovered', 'info', `discovered "${item.name}" in ${file.relPath}${when}`, item.id, {
        file: file.relPath,
        entry: entry.index,
        command: item.command,
        runAt: item.runAt === null ? null : new Date(item.runAt).toISOString(),
      });
    }
  }

  private reject(file: string, entry: number | null, reason: string): void {
    this.scanner.itemsRejected++;
    const where = entry === null ? file : `${file} entry ${entry}`;
    this.log('item_rejected', 'warn', `rejected ${where}: ${reason}`, null, { file, entry, reason });
  }

  // ---- launching ------------------------------------------------------------------------

  private scheduleDispatch(): void {
    if (this.dispatchQueued) return;
    this.dispatchQueued = true;
    setImmediate(() => {
      this.dispatchQueued = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    clearTimeout(this.dueTimer);
    if (this.closed) return;
    if (this.mode !== 'running') {
      if (this.store.hasPending) this.store.commit();
      return;
    }
    // Every attempt is journaled before its process is spawned; if storage is failing we cannot
    // keep that promise, so launching waits until it persists again.
    if (this.store.lastError !== null && !this.store.commit()) return;
    const free = this.options.concurrency - this.active.size;
    const now = Date.now();
    if (free > 0) {
      const due = this.store.all<ItemRow>(
        "SELECT * FROM items WHERE outcome = 'pending' AND due_at <= ? ORDER BY due_at, seq LIMIT ?",
        [now, free],
      );
      if (due.length > 0) {
        const starts = this.store.batch(() => due.map((row) => this.recordLaunch(row, now)));
        this.launchWhenDurable(starts);
      }
    }
    if (this.active.size < this.options.concurrency) this.armDueTimer(now);
    // Outcomes with no launch to share a commit with: written now (a kill -9 cannot lose them),
    // synced on the thread pool.
    if (this.store.hasPending) this.store.commit('background');
  }

  /**
   * Spawns attempts once their journal records are on disk (the contract's promise), waiting
   * without holding the event loop: one fdatasync on the thread pool for every launch of this round
   * and any that join it meanwhile (Store.commitDurably).
   */
  private launchWhenDurable(starts: ActiveAttempt[]): void {
    const launching = this.store.commitDurably().then((durable) => {
      this.launching.delete(launching);
      // A shutdown that got this far leaves them recorded as running: interrupted at the next start.
      if (this.closed) return;
      if (!durable) {
        // Not journaled, so not launched: each attempt fails without a process and is retried
        // with backoff like any failure, once storage works again.
        for (const s of starts) this.finishAttempt(s, resultWithoutProcess(s.startedAt, 'storage unavailable; not launched'));
        return;
      }
      for (const s of starts) this.spawn(s);
    });
    this.launching.add(launching);
  }

  private armDueTimer(now: number): void {
    const next = this.store.get<{ t: number | null }>("SELECT MIN(due_at) AS t FROM items WHERE outcome = 'pending' AND due_at > ?", [now])?.t;
    if (next === null || next === undefined) return;
    // setTimeout overflows past ~24.8 days; re-arm in steps.
    const delay = Math.min(Math.max(next - now, 0), 2 ** 31 - 1);
    this.dueTimer = setTimeout(() => this.scheduleDispatch(), delay);
  }

  private recordLaunch(row: ItemRow, now: number): ActiveAttempt {
    const item = JSON.parse(row.definition) as ItemDefinition;
    const attempt = row.attempts + 1;
    const attemptId = ++this.lastAttemptId;
    this.store.mutate('attempt_insert', [attemptId, row.id, attempt, now]);
    this.store.mutate('item_state', ['pending', attempt, null, 1, row.last_error, now, row.id]);
    this.counters.totalLaunches++;
    this.store.setMeta('total_launches', String(this.counters.totalLaunches));
    const a: ActiveAttempt = { attemptId, item, attempt, startedAt: now, run: undefined };
    this.active.set(attemptId, a);
    this.lastLaunch = {
      itemId: item.id,
      name: item.name,
      attempt,
      startedAt: new Date(now).toISOString(),
      finishedAt: null,
      durationMs: null,
      outcome: 'running',
      exitCode: null,
      signal: null,
      error: null,
    };
    this.log('launch_started', 'info', `launching "${item.name}" (attempt ${attempt} of ${item.maxAttempts})`, item.id, {
      attempt,
      maxAttempts: item.maxAttempts,
      command: item.command,
      args: item.args,
      shell: item.shell,
      cwd: item.cwd,
    });
    return a;
  }

  private spawn(a: ActiveAttempt): void {
    const run = this.launcher.launch(a.attemptId, a.item, a.attempt);
    a.run = run;
    void run.done.then((result) => {
      if (this.closed) return; // shutdown left it recorded as running: interrupted at next start
      this.finishAttempt(a, result);
      // The dispatch right after journals this outcome together with the next launches: one
      // fsync for everything that finished in this turn of the event loop and what replaces it.
      this.scheduleDispatch();
    });
  }

  private finishAttempt(a: ActiveAttempt, result: AttemptResult, interrupted = false): void {
    this.active.delete(a.attemptId);
    const { item, attempt } = a;
    const durationMs = result.finishedAt - result.startedAt;
    const outcome = result.succeeded ? 'succeeded' : 'failed';
    this.store.batch(() => {
      this.store.mutate('attempt_finish', [
        result.finishedAt,
        outcome,
        result.exitCode,
        result.signal,
        result.error,
        result.stdoutTail,
        result.stderrTail,
        a.attemptId,
      ]);
      const details = {
        attempt,
        maxAttempts: item.maxAttempts,
        exitCode: result.exitCode,
        signal: result.signal,
        error: result.error,
        durationMs,
        stdoutTail: result.stdoutTail,
        stderrTail: result.stderrTail,
      };
      const now = result.finishedAt;
      if (result.succeeded) {
        this.store.mutate('item_state', ['launched', attempt, null, 0, null, now, item.id]);
        this.counters.pending--;
        this.counters.launched++;
        this.log('launch_succeeded', 'info', `"${item.name}" succeeded (attempt ${attempt}, exited with code 0 in ${durationMs} ms)`, item.id, details);
      } else {
        this.counters.totalFailed++;
        this.store.setMeta('total_failed', String(this.counters.totalFailed));
        const why = describeFailure(result);
        if (interrupted) {
          this.log('launch_interrupted', 'warn', `"${item.name}" attempt ${attempt} was interrupted (${why})`, item.id, details);
        } else {
          this.log('launch_failed', 'warn', `"${item.name}" attempt ${attempt} of ${item.maxAttempts} ${why}`, item.id, details);
        }
        if (attempt >= item.maxAttempts) {
          this.store.mutate('item_state', ['failed', attempt, null, 0, why, now, item.id]);
          this.counters.pending--;
          this.counters.failed++;
          this.log('item_failed', 'error', `"${item.name}" failed for good after ${attempt} attempt(s): ${why}`, item.id, details);
        } else {
          const delay = this.backoffDelay(attempt);
          const dueAt = now + delay;
          this.store.mutate('item_state', ['pending', attempt, dueAt, 0, why, now, item.id]);
          this.log('retry_scheduled', 'info', `"${item.name}" will be retried in ${delay} ms (attempt ${attempt + 1} of ${item.maxAttempts})`, item.id, {
            attempt: attempt + 1,
            delayMs: delay,
            dueAt: new Date(dueAt).toISOString(),
          });
        }
      }
    });
    this.lastLaunch = {
      itemId: item.id,
      name: item.name,
      attempt,
      startedAt: new Date(a.startedAt).toISOString(),
      finishedAt: new Date(result.finishedAt).toISOString(),
      durationMs,
      outcome,
      exitCode: result.exitCode,
      signal: result.signal,
      error: result.error,
    };
    this.emit({ type: 'stats' });
  }

  /** min(base × 2^(attempt−1), max) ± 20 % jitter (contract section 3). */
  private backoffDelay(failedAttempt: number): number {
    const base = this.options.backoffBaseMs ?? 1000;
    const max = this.options.backoffMaxMs ?? 60_000;
    const nominal = Math.min(base * 2 ** (failedAttempt - 1), max);
    return Math.round(nominal * (0.8 + Math.random() * 0.4));
  }

  // ---- recovery and state ---------------------------------------------------------------

  private loadState(): void {
    const counts = this.store.all<{ outcome: ItemOutcome; n: number }>('SELECT outcome, COUNT(*) AS n FROM items GROUP BY outcome');
    for (const { outcome, n } of counts) this.counters[outcome] = n;
    this.counters.totalLaunches = Number(this.store.getMeta('total_launches') ?? 0);
    this.counters.totalFailed = Number(this.store.getMeta('total_failed') ?? 0);
    const lastPoll = this.store.getMeta('last_poll_at');
    this.lastPollAt = lastPoll === undefined ? null : Number(lastPoll);
    // Ids only grow, even when retention has pruned every entry (kept in meta at snapshot time).
    const maxLog = this.store.get<{ m: number | null }>('SELECT MAX(id) AS m FROM logs')?.m ?? 0;
    this.lastLogId = Math.max(maxLog, Number(this.store.getMeta('last_log_id') ?? 0));
    this.lastAttemptId = this.store.get<{ m: number | null }>('SELECT MAX(id) AS m FROM attempts')?.m ?? 0;
    const last = this.store.get<{ item_id: string; attempt: number; started_at: number; finished_at: number | null; outcome: string; exit_code: number | null; signal: string | null; error: string | null; name: string }>(
      'SELECT a.*, i.name FROM attempts a JOIN items i ON i.id = a.item_id ORDER BY a.id DESC LIMIT 1',
    );
    if (last) {
      this.lastLaunch = {
        itemId: last.item_id,
        name: last.name,
        attempt: last.attempt,
        startedAt: new Date(last.started_at).toISOString(),
        finishedAt: last.finished_at === null ? null : new Date(last.finished_at).toISOString(),
        durationMs: last.finished_at === null ? null : last.finished_at - last.started_at,
        outcome: last.outcome as LaunchRecord['outcome'],
        exitCode: last.exit_code,
        signal: last.signal,
        error: last.error,
      };
    }
  }

  /** Attempts that were running when the last engine died: failed with error `interrupted`, retried under the usual rules. */
  private recoverInterrupted(): void {
    const rows = this.store.all<{ id: number; item_id: string; attempt: number; started_at: number; definition: string }>(
      "SELECT a.id, a.item_id, a.attempt, a.started_at, i.definition FROM attempts a JOIN items i ON i.id = a.item_id WHERE a.outcome = 'running' ORDER BY a.id",
    );
    for (const r of rows) {
      const a: ActiveAttempt = {
        attemptId: r.id,
        item: JSON.parse(r.definition) as ItemDefinition,
        attempt: r.attempt,
        startedAt: r.started_at,
        run: undefined,
      };
      this.finishAttempt(a, resultWithoutProcess(r.started_at, 'interrupted'), true);
    }
    if (rows.length > 0) this.store.commit();
  }

  private engineState(): EngineState {
    if (this.mode !== 'running') return this.mode;
    if (this.started && this.lastPollAt !== null && Date.now() - this.lastPollAt > 3 * this.options.pollIntervalMs) {
      // A poll that has not started for three intervals means the loop is stuck.
      return 'stalled';
    }
    return 'running';
  }

  private persist(): void {
    if (this.closed) return;
    const interval = this.options.snapshotIntervalMs ?? 30_000;
    // An idle engine does not rewrite an unchanged database: even built off the main thread, a
    // snapshot at 1,000,000 log entries costs seconds of a core and a second copy of the database.
    const due = Date.now() - this.lastSnapshotAt >= interval && this.store.changedSinceSnapshot && this.journalWorthFolding();
    // Starting a checkpoint while journal records wait for the disk would take a synchronous
    // fdatasync first (Store.snapshotInBackground), so it waits for a tick at which the thread
    // pool has caught up; a second is nothing against the interval, and a disk that never catches
    // up gets the synchronous path after a few tries.
    if (due && (this.store.journalSynced || this.snapshotDeferrals >= MAX_SNAPSHOT_DEFERRALS)) {
      this.snapshotDeferrals = 0;
      this.store.setMeta('last_log_id', String(this.lastLogId));
      if (this.store.snapshotInBackground()) this.lastSnapshotAt = Date.now();
    } else {
      if (due) this.snapshotDeferrals++;
      // Off the event loop: nothing waits for this one (launches wait for their own).
      this.store.commit('background');
    }
    // Launches wait while storage fails; once it is back, resume.
    if (this.store.lastError === null && this.mode === 'running' && this.active.size < this.options.concurrency) {
      this.scheduleDispatch();
    }
  }

  private journalWorthFolding(): boolean {
    const { journalBytes, snapshotBytes } = this.store.journalSize;
    const floor = this.options.snapshotMinJournalBytes ?? DEFAULT_SNAPSHOT_MIN_JOURNAL_BYTES;
    // 0 turns the policy off: every interval with a change (tests that need checkpoints to happen).
    return floor === 0 || journalBytes >= Math.max(floor, snapshotBytes * SNAPSHOT_JOURNAL_FRACTION);
  }

  private onStorageHealth(ok: boolean, error: string | null): void {
    if (ok) {
      this.log('database_recovered', 'info', 'storage is writable again; the full state was persisted', null, null);
    } else {
      this.log('database_error', 'error', `cannot persist the database: ${error}. State is kept in memory; retrying every second`, null, {
        error,
        storage: this.options.storageDir,
      });
    }
    this.emit({ type: 'stats' });
  }

  private pruneLogs(): void {
    if (this.closed) return;
    const { logMaxEntries, logMaxAgeDays } = this.options;
    // Two subqueries: SQLite answers a lone MIN or MAX from the index, but both in one SELECT scan.
    const { oldest, newest } = this.store.get<{ oldest: number | null; newest: number | null }>(
      'SELECT (SELECT MIN(id) FROM logs) AS oldest, (SELECT MAX(id) FROM logs) AS newest',
    ) ?? { oldest: null, newest: null };
    if (oldest === null || newest === null) return;
    // Ids only grow and pruning removes the oldest, so the log holds at most newest - oldest + 1
    // entries, and keeping ids above newest - maxEntries keeps at most maxEntries (fewer only if a
    // crash lost entries whose ids were taken). Both ends come from the primary key: counting
    // with OFFSET walked every entry, a 130-270 ms stall every minute at 1,000,000 entries.
    const byCount = newest - oldest + 1 > logMaxEntries ? newest - logMaxEntries : 0;
    const cutoff = Date.now() - logMaxAgeDays * 86_400_000;
    // The newest entry older than the cutoff, read from the ts index (timestamps grow with ids).
    // MAX(id) ... WHERE ts < ? let SQLite walk the primary key down from the newest entry instead:
    // 80-170 ms at 1,000,000 entries when none is that old.
    const byAge = this.store.get<{ id: number }>('SELECT id FROM logs WHERE ts < ? ORDER BY ts DESC LIMIT 1', [cutoff])?.id ?? 0;
    const limit = Math.max(byCount, byAge);
    if (limit <= 0) return;
    // Bounded batches keep the event loop responsive; the next round continues.
    const upTo = Math.min(limit, oldest + PRUNE_BATCH - 1);
    this.store.batch(() => {
      this.store.mutate('logs_fts_prune', [upTo]);
      this.store.mutate('logs_prune', [upTo]);
      // Startup takes the next id from the newest entry or this; with every entry pruned (by age)
      // only this remains, and the journal carries it even when no snapshot follows for a while.
      this.store.setMeta('last_log_id', String(this.lastLogId));
    });
    if (upTo < limit) setTimeout(() => this.pruneLogs(), 100).unref();
  }

  private log(action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    if (this.closed) return;
    const id = ++this.lastLogId;
    const ts = Date.now();
    this.store.mutate('log_insert', [id, ts, action, LEVEL_RANK[level], message, itemId, details === null ? null : JSON.stringify(details)]);
    this.store.mutate('log_fts_insert', [id, message]);
    if (this.listeners.size === 0) return;
    const entry: LogEntry = { id, timestamp: new Date(ts).toISOString(), action, level, message, itemId, details };
    this.emit({ type: 'log', entry });
  }

  private emit(event: EngineEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        console.error('engine event listener failed:', err);
      }
    }
  }
}



function describeFailure(r: AttemptResult): string {
  if (r.timedOut) return r.error ?? 'timed out';
  if (r.error) return r.error;
  if (r.signal) return `was killed by signal ${r.signal}`;
  return `exited with code ${r.exitCode}`;
}

function toSummary(r: ItemRow, now: number): ItemSummary {
  let phase: ItemSummary['phase'];
  if (r.outcome !== 'pending') phase = 'done';
  else if (r.running) phase = 'running';
  else if (r.due_at !== null && r.due_at > now) phase = r.attempts > 0 ? 'backoff' : 'scheduled';
  else phase = 'waiting';
  return {
    id: r.id,
    name: r.name,
    outcome: r.outcome,
    phase,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    nextAttemptAt: r.outcome === 'pending' && !r.running && r.due_at !== null && r.due_at > now ? new Date(r.due_at).toISOString() : null,
    source: r.source,
    updatedAt: new Date(r.updated_at).toISOString(),
    lastError: r.last_error,
  };
}
