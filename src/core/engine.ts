// The launch engine: polls its sources, ingests items, launches due items within the concurrency
// limit, retries failures with backoff and records every outcome in the store. Counters are kept
// up to date on every transition, so the API never counts rows to answer /stats. This file holds
// the lifecycle, dispatch and outcomes; when to poll is in poller.ts, turning queue files into
// items in ingest.ts, snapshots and log pruning in persistence.ts, reads in records.ts, the
// options in engineOptions.ts, the /status body in engineStatus.ts, log writing in engineLog.ts.
import type { AttemptProblem, EngineState, ItemDetail, ItemSummary, ScheduleSummary, LaunchRecord, LogAction, LogLevel, StatsOverview, StatusResponse } from '../shared/api';
import { healthStatus } from '../shared/health';
import { ControlError, type AttemptOutput, type ControllableEngine, type EngineEvent, type FinishedAttempt, type HealthSnapshot, type ItemsPage, type LogPage, type LogQuery } from './monitoredEngine';
import { OutputRetention } from './outputRetention';
import { itemFromRow, type ItemDefinition } from './items';
import { attemptProblems } from './attemptProblems';
import { KILL_GRACE_MS, resultWithoutProcess, type AttemptResult, type RunningAttempt } from './attemptProcess';
import { AttemptLauncher } from './launchHelperClient';
import { MatcherThread } from './matcherThread';
import { DraftHolds } from './draftHolds';
import { ItemIngestion } from './ingest';
import { Poller } from './poller';
import { Dependencies } from './dependencies';
import { Scheduler } from './schedules';
import { PersistencePolicy } from './persistence';
import { Store } from './store';
import { isStoreUnavailable, PgStore } from './store/pgStore';
import { FleetWork } from './fleet';
import {
  launchRecord,
  readDueItems,
  readFailedItemIds,
  readHeld,
  readItem,
  readItemDetail,
  readItemPage,
  readNextDueAt,
  readRunningAttempts,
  readStoredState,
  itemState,
  statsOverview,
  type Counters,
  type ItemRow,
} from './records';
import { EngineEventBus } from './eventBus';
import { backoffDelay } from './retryPolicy';
import { describeFailure, launchEnd, outcomeDetails } from './attemptOutcome';
import { queryLogs } from './logQuery';
import { itemIndexReady } from './itemSearch';
import { isFleetStore } from './store/backend';
import { searchWords } from '../shared/logFilter';
import { EngineLog } from './engineLog';
import type { EngineMode, EngineOptions } from './engineOptions';
import { engineState, engineStatus } from './engineStatus';

export type { EngineOptions } from './engineOptions';

/** How often a fleet engine with free slots looks for items other engines made due. */
const FLEET_DISPATCH_MS = 250;

interface ActiveAttempt {
  attemptId: number;
  item: ItemDefinition;
  attempt: number;
  startedAt: number;
  /** Undefined while its journal records are on their way to the disk (not spawned yet). */
  run: RunningAttempt | undefined;
  /** Set when the user cancelled it: recorded as failed at once, never spawned if it was not yet. */
  cancelled?: boolean;
  /** Settles once the attempt's end is recorded (after its problem matcher has read the output). */
  recorded?: Promise<void>;
  /**
   * Whether the user holds its item, kept by hold and release while it runs, so the outcome need
   * not read it back. Undefined for attempts taken over from the database (interrupted, or
   * another engine's on a fleet), whose outcome reads it.
   */
  held?: boolean;
}

/** An attempt's problems as its row keeps them: JSON, or null when the item has no matcher. */
function problemsJson(problems: AttemptProblem[] | null): string | null {
  return problems ? JSON.stringify(problems) : null;
}

/** The item's outcome as a reason a control request cannot apply to it. */
function finishedAlready(row: ItemRow): string {
  return row.outcome === 'launched' ? 'has already launched (an attempt succeeded)' : `has already failed${row.last_error ? ` (${row.last_error})` : ''}`;
}

export class Engine implements ControllableEngine {
  readonly version: string;
  private mode: EngineMode;
  private readonly ingestion: ItemIngestion;
  /** Queue files a window is still editing: scans pass over them (holdDrafts, ingestDraft). */
  readonly drafts: DraftHolds;
  private readonly poller: Poller;
  private readonly dependencies: Dependencies;
  private readonly scheduler: Scheduler;
  /** Items discovered or redefined since dependencies were last settled (after each poll and firing). */
  private readonly unsettled = new Set<string>();
  private readonly persistence: PersistencePolicy;
  private readonly events = new EngineEventBus();
  /** onAttemptFinished's listeners (/metrics). */
  private readonly attemptListeners = new Set<(attempt: FinishedAttempt) => void>();
  private readonly active = new Map<number, ActiveAttempt>();
  /**
   * Cancelled attempts whose process has not exited yet (SIGTERM sent, SIGKILL after 5 s): no
   * longer running as far as the counters go, but still holding their concurrency slot.
   */
  private readonly ending = new Map<number, ActiveAttempt>();
  private readonly startedAt = Date.now();
  private readonly launcher: AttemptLauncher;
  private readonly entries: EngineLog;
  private readonly output: OutputRetention;
  /** Where matchers with a queue file's own regexps run (they may backtrack without end). */
  private readonly matchers: MatcherThread;
  /** Followers of running attempts' output, by attempt id: told when the attempt ends. */
  private readonly outputEndListeners = new Map<number, Set<() => void>>();
  /** The last failure to capture an attempt's output (disk full…); /health reports it like a journal error. */
  private outputError: string | null = null;

  private counters: Counters = { launched: 0, pending: 0, failed: 0, totalLaunches: 0, totalFailed: 0, held: 0 };
  private lastLaunch: LaunchRecord | null = null;
  private recovery: { at: string; message: string } | null = null;
  private lastAttemptId = 0;

  private dueTimer: NodeJS.Timeout | undefined;
  /** Launch rounds waiting for their journal records to reach the disk. */
  private readonly launching = new Set<Promise<void>>();
  private dispatchQueued = false;
  private closed = false;
  private started = false;
  /** Set when storage came back but onStorageRecovered said it is no longer this engine's. */
  private storageLost = false;
  /** On a PostgreSQL store shared by a fleet (contract section 11), what only a fleet engine does; else null. */
  private readonly fleet: FleetWork | null;

  private constructor(
    private readonly store: Store,
    private readonly options: EngineOptions,
    pg: PgStore | null = null,
  ) {
    this.version = options.version;
    this.mode = options.initialMode;
    this.fleet = pg ? new FleetWork(pg, this.events) : null;
    this.entries = new EngineLog(store, this.events, pg ? (row) => pg.insertLog(row) : undefined);
    this.output = new OutputRetention(store, options);
    this.matchers = new MatcherThread(options.matcherBudgetMs);
    this.launcher = new AttemptLauncher({
      entry: options.launchHelper,
      helpers: options.launchHelpers,
      workspaceFolders: options.workspaceFolders,
      warn: (message, details) => this.log('engine_started', 'warn', message, null, details),
      onOutputError: (attemptId, error) => this.onOutputError(attemptId, error),
    });
    this.drafts = new DraftHolds(options.storageDir);
    this.ingestion = new ItemIngestion(store, { ...options, drafts: this.drafts }, {
      log: (action, level, message, itemId, details) => this.log(action, level, message, itemId, details),
      onItemDiscovered: (item) => {
        this.counters.pending++;
        if (item.priority) this.store.mutate('item_priority', [item.priority, item.id]);
        if (item.dependsOn) this.dependencies.record(item.id, item.dependsOn, false);
        this.unsettled.add(item.id);
      },
      onItemRedefined: (item, before) => {
        if ((item.priority ?? 0) !== (before.priority ?? 0)) this.store.mutate('item_priority', [item.priority ?? 0, item.id]);
        this.dependencies.record(item.id, item.dependsOn ?? [], (before.dependsOn?.length ?? 0) > 0);
        this.unsettled.add(item.id);
      },
      isClosed: () => this.closed,
    });
    this.dependencies = new Dependencies(
      store,
      {
        log: (action, level, message, itemId, details) => this.log(action, level, message, itemId, details),
        failWithoutAttempt: (itemId, error) => this.failWithoutAttempt(itemId, error),
      },
      pg !== null,
    );
    this.scheduler = new Scheduler(store, {
      log: (action, level, message, itemId, details) => this.log(action, level, message, itemId, details),
      now: options.scheduleClock ?? Date.now,
      insertOccurrence: (item, source, now) => this.ingestion.insertItem(item, source, now),
      onFired: () => {
        this.settleDependencies();
        this.store.commit('background');
        this.events.emit({ type: 'stats' });
        this.scheduleDispatch();
      },
      isActive: () => this.mode === 'running' && !this.closed,
    });
    this.poller = new Poller(store, this.ingestion, options.pollIntervalMs, {
      isClosed: () => this.closed,
      isStopped: () => this.mode === 'stopped',
      // Written now (a kill -9 cannot lose what was ingested), synced on the thread pool; a launch
      // of these items waits for the disk itself.
      onPolled: () => {
        this.settleDependencies();
        this.checkSchedules();
        this.store.commit('background');
        this.events.emit({ type: 'stats' });
        this.scheduleDispatch();
      },
      // A backoff is a delay, not a time of day: after a jump it keeps the time it had left.
      onClockJump: (ms) => {
        this.store.mutate('items_backoff_shift', [ms]);
        this.scheduleDispatch();
      },
    });
    this.persistence = new PersistencePolicy(store, options, {
      lastLogId: () => this.entries.lastId,
      isClosed: () => this.closed,
      // Launches wait while storage fails; once it is back, resume.
      onPersisted: () => {
        if (this.fleet) this.fleetTick();
        if (this.store.lastError === null && this.mode === 'running' && this.active.size < this.options.concurrency) {
          this.scheduleDispatch();
        }
      },
      onItemsForgotten: (itemIds) => this.output.itemsForgotten(itemIds),
    });
  }

  /** Opens the store, recovers from a crash if there was one, and loads the counters. */
  static async create(options: EngineOptions): Promise<Engine> {
    let engine: Engine | undefined;
    if (options.storeUrl) {
      const { store: pg } = await PgStore.open({
        url: options.storeUrl,
        leaseMs: options.leaseMs ?? 30_000,
        onHealthChange: (ok, error) => engine?.onStorageHealth(ok, error),
        onRemoteLog: (id) => engine?.fleet?.remoteLog(id),
      });
      // PgStore keeps the seam Store offers the engine (backend.ts); the engine's helpers name the
      // sql.js class, whose private members make the two nominally different types.
      engine = new Engine(pg as unknown as Store, options, pg);
      engine.loadState();
      return engine;
    }
    const { store, notes } = await Store.open({
      storageDir: options.storageDir,
      onHealthChange: (ok, error) => engine?.onStorageHealth(ok, error),
      onNote: (note) => engine?.log(note.action, note.level, note.message, null, note.details ?? null),
      // Periodic snapshots are built in a process a launch helper starts, outside this one's
      // address space (docs/PERFORMANCE.md); one asked for while the helpers start waits for
      // them; without helpers, on a worker thread.
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
    this.persistence.start();
    // A cap lowered since the last run applies now; output files no attempt of this database owns go.
    this.output.enforceTotal();
    await this.output.removeStrays(this.lastAttemptId);
    // The helper also builds the periodic snapshots (in processes it starts), so a persisted
    // engine has it ready before its first snapshot even if it has launched nothing yet.
    if (this.options.storageDir) this.launcher.prepare();
    await this.poller.poll();
    this.poller.schedule();
  }

  /** Stop launching (running attempts finish and are recorded). */
  stopLaunching(reason = 'stopped by the user'): void {
    // Restricted launches nothing already, and stays so: a stop then a start (over HTTP, say)
    // must not stand in for granting Workspace Trust.
    if (this.mode === 'stopped' || this.mode === 'restricted') return;
    this.mode = 'stopped';
    this.poller.cancel();
    this.scheduler.cancel();
    clearTimeout(this.dueTimer);
    this.log('engine_stopped', 'info', `engine ${reason}`, null, { running: this.active.size });
    this.events.emit({ type: 'stats' });
  }

  /** Start (or resume) launching. Refused while restricted: trust must be granted first. */
  startLaunching(): void {
    if (this.mode === 'running') return;
    if (this.mode === 'restricted') throw new ControlError('conflict', 'the workspace is not trusted: grant Workspace Trust to let the engine launch items');
    if (this.storageLost) throw new ControlError('conflict', 'the storage folder is no longer this engine\'s (another engine holds its lock): restart the engine');
    this.resume('engine started by the user');
  }

  grantTrust(): void {
    if (this.mode !== 'restricted') return;
    this.resume('workspace trusted: engine launching items');
  }

  private resume(message: string): void {
    this.mode = 'running';
    this.log('engine_started', 'info', message, null, { mode: this.mode });
    this.events.emit({ type: 'stats' });
    void this.poller.poll().then(() => this.poller.schedule());
  }

  get state(): EngineMode {
    return this.mode;
  }

  /**
   * Graceful end: stop launching, let running attempts finish for up to `graceMs`, end the rest
   * (they stay recorded as running, so the next start records them as interrupted and retries),
   * persist, close.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.closed) return;
    this.poller.cancel();
    this.scheduler.cancel();
    clearTimeout(this.dueTimer);
    const wasMode = this.mode;
    this.mode = 'stopped';
    if (wasMode !== 'stopped') {
      this.log('engine_stopped', 'info', 'engine shutting down', null, { running: this.active.size, graceMs });
    }
    // Attempts journaled but not spawned yet are spawned once the disk has them (mode no longer
    // matters to that): then every active attempt has a process to wait for or terminate.
    await Promise.all(this.launching);
    if (this.active.size > 0 || this.ending.size > 0) {
      const all = Promise.all([...this.active.values(), ...this.ending.values()].flatMap((a): Promise<unknown>[] => (a.recorded ? [a.recorded] : a.run ? [a.run.done] : [])));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      // Let the exit handlers record the outcomes that just arrived.
      await new Promise((r) => setImmediate(r));
      for (const a of [...this.active.values(), ...this.ending.values()]) a.run?.terminate(1000);
    }
    await this.poller.underWay;
    this.ingestion.close();
    this.closed = true;
    // The snapshot store.close() takes below holds everything a checkpoint in flight would.
    this.store.abandonCheckpoint();
    // After `closed`, so what ends now stays recorded as running (interrupted at the next start):
    // SIGKILL after the same 1 s for what ignores SIGTERM, then the helper exits.
    await this.launcher.close(1000);
    // Followers of attempts that did not finish get the end of their response.
    for (const listeners of this.outputEndListeners.values()) for (const l of listeners) l();
    this.outputEndListeners.clear();
    this.persistence.stop();
    await this.matchers.close();
    await this.output.close();
    this.store.close();
    this.events.clear();
  }

  // ---- control --------------------------------------------------------------------------

  pollNow(): Promise<void> {
    return this.poller.pollNow();
  }

  /** Makes a failed item pending again, its attempts reset (`item_retried`); not before its runAt. */
  retryItem(itemId: string): void {
    const row = this.requireItem(itemId);
    if (row.outcome !== 'failed') {
      throw new ControlError('conflict', `item "${itemId}" is ${row.outcome === 'launched' ? 'launched' : 'pending'}; only a failed item can be retried`);
    }
    const def = itemFromRow(row.definition, row);
    this.store.batch(() => {
      const now = Date.now();
      this.store.mutate('item_state', ['pending', 0, Math.max(now, def.runAt ?? 0), 0, row.last_error, now, itemId]);
      this.counters.failed--;
      this.counters.pending++;
      this.log('item_retried', 'info', `"${row.name}" retried by hand; attempts reset`, itemId, { previousAttempts: row.attempts });
      // Its dependencies are judged again: blocked until they launch, failed again if one failed.
      this.dependencies.evaluate(itemId);
    });
    this.afterControl(true);
  }

  retryAllFailed(): number {
    const ids = readFailedItemIds(this.store);
    for (const id of ids) this.retryItem(id);
    return ids.length;
  }

  /**
   * Cancels a pending item: it becomes failed at once with error `cancelled`, whatever attempts it
   * had left, and is not retried (Retry by hand works as for any failed item). A running attempt
   * is recorded failed with error `cancelled` and its process group gets SIGTERM, then SIGKILL
   * after 5 s; an attempt journaled but not spawned yet is never spawned. One `launch_cancelled`
   * entry either way (`details.attempt` is null when no attempt was running); no `item_failed`,
   * which reports failures the user did not ask for.
   */
  cancelItem(itemId: string): void {
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be cancelled`);
    const a = [...this.active.values()].find((x) => x.item.id === itemId);
    const now = Date.now();
    this.store.batch(() => {
      if (a) {
        a.cancelled = true;
        this.active.delete(a.attemptId);
        this.store.mutate('attempt_finish', [now, 'failed', null, null, 'cancelled', '', '', a.attemptId]);
        this.counters.totalFailed++;
        this.store.setMeta('total_failed', String(this.counters.totalFailed));
        this.lastLaunch = launchRecord(a.item, a.attempt, a.startedAt, { outcome: 'failed', finishedAt: now, durationMs: now - a.startedAt, exitCode: null, signal: null, error: 'cancelled' });
        const how = a.run ? 'its processes were sent SIGTERM (SIGKILL in 5 s if they do not exit)' : 'it had not been spawned yet and never will be';
        this.log('launch_cancelled', 'warn', `"${row.name}" attempt ${a.attempt} cancelled by the user; ${how}; the item failed`, itemId, {
          attempt: a.attempt,
          maxAttempts: a.item.maxAttempts,
          spawned: a.run !== undefined,
        });
      } else {
        this.log('launch_cancelled', 'warn', `"${row.name}" cancelled by the user before its next attempt; the item failed`, itemId, {
          attempt: null,
          attempts: row.attempts,
          state: itemState(row, now),
        });
      }
      this.store.mutate('item_state', ['failed', a ? a.attempt : row.attempts, null, 0, 'cancelled', now, itemId]);
      this.endHold(itemId, row.held === 1, now);
      this.counters.pending--;
      this.counters.failed++;
      this.dependencies.failed(itemId);
    });
    if (a) this.attemptFinished({ itemId, attempt: a.attempt, succeeded: false, durationMs: now - a.startedAt });
    if (a?.run) {
      this.ending.set(a.attemptId, a);
      a.run.terminate(KILL_GRACE_MS);
    }
    // An attempt that was never spawned frees its slot now; a running one when its process exits.
    this.afterControl(true);
  }

  /**
   * Holds a pending item: it is not launched until released; a running attempt is not touched
   * (should it fail, the item waits, held, for its retry). Holding a held item changes nothing.
   */
  holdItem(itemId: string): void {
    if (this.scheduler.has(itemId)) return this.enableSchedule(itemId, false);
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be held`);
    if (row.held === 1) return;
    this.store.batch(() => {
      this.store.mutate('item_hold', [1, Date.now(), itemId]);
      this.setHeldWhileRunning(itemId, true);
      this.counters.held++;
      const running = row.running === 1 ? '; its running attempt goes on' : '';
      this.log('item_held', 'info', `"${row.name}" held by the user: it is not launched until released${running}`, itemId, { running: row.running === 1 });
    });
    this.afterControl(false);
  }

  /** Releases a held item: it launches when due (at once if it already is). Releasing an item not held changes nothing. */
  releaseItem(itemId: string): void {
    if (this.scheduler.has(itemId)) return this.enableSchedule(itemId, true);
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be held or released`);
    if (row.held !== 1) return;
    this.store.batch(() => {
      this.store.mutate('item_hold', [0, Date.now(), itemId]);
      this.setHeldWhileRunning(itemId, false);
      this.counters.held--;
      this.log('item_released', 'info', `"${row.name}" released by the user`, itemId, null);
    });
    this.afterControl(true);
  }

  /** The running attempt of a held or released item, if any, learns it (read when it ends). */
  private setHeldWhileRunning(itemId: string, held: boolean): void {
    for (const a of this.active.values()) if (a.item.id === itemId) a.held = held;
  }

  /**
   * Hold/release on a schedule template: disabled, no occurrence fires; enabled again, the next
   * occurrence after the release fires (those it was held through are not caught up).
   */
  private enableSchedule(templateId: string, enabled: boolean): void {
    const changed = this.store.batch(() => {
      if (!this.scheduler.setEnabled(templateId, enabled)) return false;
      if (enabled) this.log('item_released', 'info', `schedule "${templateId}" released: its occurrences fire again`, templateId, { schedule: true });
      else this.log('item_held', 'info', `schedule "${templateId}" held: no occurrence fires until released`, templateId, { schedule: true });
      return true;
    });
    if (!changed) return;
    this.store.commit();
    this.events.emit({ type: 'stats' });
    this.scheduler.arm();
  }

  /** GET /schedules. */
  listSchedules(): ScheduleSummary[] {
    return this.scheduler.list();
  }

  /** A pending item fails without an attempt (a dependency failed, or a cycle), its hold ended. */
  private failWithoutAttempt(itemId: string, error: string): void {
    const row = readItem(this.store, itemId);
    if (!row || row.outcome !== 'pending') return;
    const now = Date.now();
    this.store.mutate('item_state', ['failed', row.attempts, null, 0, error, now, itemId]);
    this.endHold(itemId, row.held === 1, now);
    this.counters.pending--;
    this.counters.failed++;
  }

  /** Judges the dependencies of what was discovered since the last time (dependencies.ts). */
  private settleDependencies(): void {
    if (this.unsettled.size === 0) return;
    const ids = [...this.unsettled];
    this.unsettled.clear();
    this.store.batch(() => this.dependencies.settle(ids));
  }

  /** Schedules fire only while the engine launches: stopped or restricted, they catch up once when it resumes. */
  private checkSchedules(): void {
    this.scheduler.check();
  }

  /** GET /items/{id}. */
  itemDetail(itemId: string): ItemDetail | undefined {
    return readItemDetail(this.store, itemId, Date.now());
  }

  private requireItem(itemId: string): ItemRow {
    const row = readItem(this.store, itemId);
    if (!row) throw new ControlError('not_found', `no item with id "${itemId}"`);
    return row;
  }

  /** An item that reaches an outcome is no longer held: holding is for pending items. */
  private endHold(itemId: string, held: boolean, now: number): void {
    if (!held) return;
    this.store.mutate('item_hold', [0, now, itemId]);
    this.counters.held--;
  }

  /** A control request is on disk before it is answered; `dispatch` when it may let an item launch. */
  private afterControl(dispatch: boolean): void {
    this.store.commit();
    this.events.emit({ type: 'stats' });
    if (dispatch) this.scheduleDispatch();
  }

  // ---- MonitoredEngine ------------------------------------------------------------------

  stats(): StatsOverview {
    if (this.fleet) return this.fleet.stats(this.poller.lastPollAt);
    return statsOverview(this.counters, this.poller.lastPollAt, this.active.size);
  }

  health(): HealthSnapshot {
    const storageOk = this.store.lastError === null && this.outputError === null;
    const checks = { database: storageOk ? 'ok' : 'error', engine: this.engineState() } as const;
    return { status: healthStatus(checks), checks };
  }

  status(): Omit<StatusResponse, 'timestamp' | 'server'> {
    const body = engineStatus({
      version: this.version,
      state: this.engineState(),
      startedAt: this.startedAt,
      options: this.options,
      running: this.active.size,
      polls: this.poller.polls,
      scanner: this.ingestion.scannerStatus(),
      stats: this.stats(),
      lastLaunch: this.lastLaunch,
      store: this.store,
      recovery: this.recovery,
    });
    return this.fleet ? this.fleet.status(body) : body;
  }

  queryLogs(query: LogQuery): LogPage {
    return queryLogs(this.store, query);
  }

  listItems(query: ItemsPage): { items: ItemSummary[]; total: number } {
    const { items, total } = readItemPage(this.store, query, Date.now());
    if (total !== null) return { items, total };
    const stats = this.stats();
    return { items, total: query.filter?.outcome ? stats[query.filter.outcome] : stats.total };
  }

  itemSearchReady(query: ItemsPage): Promise<void> | undefined {
    const q = query.filter?.q;
    // A fleet's store is searched in SQL (records.ts): no index to build.
    if (q === undefined || searchWords(q).length === 0 || isFleetStore(this.store)) return undefined;
    return itemIndexReady(this.store);
  }

  subscribe(listener: (event: EngineEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  onAttemptFinished(listener: (attempt: FinishedAttempt) => void): () => void {
    this.attemptListeners.add(listener);
    return () => this.attemptListeners.delete(listener);
  }

  /** Tells onAttemptFinished's listeners; one that throws is reported and stops neither the others nor the engine. */
  private attemptFinished(attempt: FinishedAttempt): void {
    for (const listener of this.attemptListeners) {
      try {
        listener(attempt);
      } catch (err) {
        console.error('engine attempt listener failed:', err);
      }
    }
  }

  attemptOutput(itemId: string, attempt: number): AttemptOutput {
    const row = this.store.get<{ id: number; outcome: string; output_bytes: number | null; output_pruned: number }>(
      'SELECT id, outcome, output_bytes, output_pruned FROM attempts WHERE item_id = ? AND attempt = ? ORDER BY id DESC LIMIT 1',
      [itemId, attempt],
    );
    if (!row) return readItem(this.store, itemId) ? { found: 'no_attempt' } : { found: 'no_item' };
    if (row.output_pruned) return { found: 'pruned' };
    const active = this.active.get(row.id);
    // Spawned, or about to be (journaled): a follower waits for its output and its end.
    const running = active !== undefined;
    if (!running && row.output_bytes === null && row.outcome !== 'running') {
      // Never spawned (spawn failed, storage down), or cut short by a crash: whatever reached
      // the disk is served, and an attempt with no file at all is one that never started.
      return { found: 'output', dir: this.output.dir, attemptId: row.id, running: false, started: false, onEnd: () => () => undefined };
    }
    return {
      found: 'output',
      dir: this.output.dir,
      attemptId: row.id,
      running,
      started: true,
      onEnd: (listener) => {
        if (!this.active.has(row.id)) {
          queueMicrotask(listener);
          return () => undefined;
        }
        let set = this.outputEndListeners.get(row.id);
        if (!set) this.outputEndListeners.set(row.id, (set = new Set()));
        set.add(listener);
        return () => {
          set.delete(listener);
          if (set.size === 0 && this.outputEndListeners.get(row.id) === set) this.outputEndListeners.delete(row.id);
        };
      },
    };
  }

  /** For tests: followers of running attempts' output still registered. */
  get outputFollowers(): number {
    let n = 0;
    for (const set of this.outputEndListeners.values()) n += set.size;
    return n;
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
    if (this.storageLost) return;
    const free = this.options.concurrency - this.busySlots();
    const now = Date.now();
    if (this.fleet) {
      if (free > 0) this.claim(free, now);
      // Other engines' items become due too: look again soon rather than only at our own next due time.
      if (this.busySlots() < this.options.concurrency) this.dueTimer = setTimeout(() => this.scheduleDispatch(), FLEET_DISPATCH_MS);
      return;
    }
    if (free > 0) {
      const due = readDueItems(this.store, now, free);
      if (due.length > 0) {
        const starts = this.store.batch(() => this.recordLaunches(due, now));
        this.launchWhenDurable(starts);
      }
    }
    if (this.busySlots() < this.options.concurrency) this.armDueTimer(now);
    // Outcomes with no launch to share a commit with: written now (a kill -9 cannot lose them),
    // synced on the thread pool.
    if (this.store.hasPending) this.store.commit('background');
  }

  /**
   * Fleet dispatch: due items are selected FOR UPDATE SKIP LOCKED and their attempts recorded in one
   * transaction, committed before any process is spawned, so each attempt belongs to exactly one
   * engine and a crash after the commit leaves it running under a lease another engine will see
   * expire. A claim the database could not commit is dropped as a whole: nothing was spawned.
   */
  private claim(free: number, now: number): void {
    if (!this.fleet?.store.leaseHeld) return;
    const before = new Set(this.active.keys());
    let starts: ActiveAttempt[];
    try {
      starts = this.store.batch(() => this.recordLaunches(readDueItems(this.store, now, free, true), now));
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      for (const id of [...this.active.keys()]) if (!before.has(id)) this.active.delete(id);
      return;
    }
    for (const s of starts) if (!s.cancelled) this.spawn(s);
  }

  /**
   * Once a second on a fleet store: the heartbeat learns this engine's state; attempts of engines
   * whose lease expired are recorded interrupted and retried; outcomes and log entries that waited
   * for the database are recorded.
   */
  private fleetTick(): void {
    const fleet = this.fleet!;
    fleet.store.reportEngine(this.engineState(), this.active.size);
    if (fleet.store.lastError !== null || this.closed) return;
    try {
      for (const [a, result, problems] of fleet.takeDeferred<ActiveAttempt>()) this.recordOutcome(a, result, problems);
      for (const entry of fleet.takeUnwrittenLogs()) this.log(...entry);
      const lost = this.store.batch(() => {
        const rows = fleet.claimLostAttempts();
        for (const r of rows) {
          const a: ActiveAttempt = { attemptId: r.id, item: r.item, attempt: r.attempt, startedAt: r.startedAt, run: undefined };
          this.finishAttempt(a, resultWithoutProcess(r.startedAt, `interrupted: engine ${r.engineId} lost its lease`), true);
        }
        return rows.length;
      });
      if (lost > 0) this.scheduleDispatch();
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
    }
  }

  /** An attempt's outcome; on a fleet store whose database is unreachable, kept until it is back. */
  private recordOutcome(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): void {
    if (!this.fleet) return this.finishAttempt(a, result, false, problems);
    try {
      this.finishAttempt(a, result, false, problems);
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      this.active.set(a.attemptId, a);
      this.fleet.defer(a, result, problems);
    }
  }

  /** Processes this engine has running: its attempts, and cancelled ones that have not exited yet. */
  private busySlots(): number {
    return this.active.size + this.ending.size;
  }

  /**
   * Spawns attempts once their journal records are on disk, so that no process runs that a crash
   * could leave unrecorded. The wait does not hold the event loop: one fdatasync on the thread pool
   * for every launch of this round and any that join it meanwhile (Store.commitDurably).
   */
  private launchWhenDurable(starts: ActiveAttempt[]): void {
    const launching = this.store.commitDurably().then((durable) => {
      this.launching.delete(launching);
      // A shutdown that got this far leaves them recorded as running: interrupted at the next start.
      if (this.closed) return;
      if (!durable || this.storageLost) {
        // Not journaled, so not launched: each attempt fails without a process and is retried
        // with backoff like any failure, once storage works again.
        for (const s of starts) if (!s.cancelled) this.finishAttempt(s, resultWithoutProcess(s.startedAt, 'storage unavailable; not launched'));
        return;
      }
      // A cancel that came while the records were on their way was recorded already: no process.
      for (const s of starts) if (!s.cancelled) this.spawn(s);
    });
    this.launching.add(launching);
  }

  private armDueTimer(now: number): void {
    const next = readNextDueAt(this.store, now);
    if (next === null) return;
    // setTimeout overflows past ~24.8 days; re-arm in steps.
    const delay = Math.min(Math.max(next - now, 0), 2 ** 31 - 1);
    this.dueTimer = setTimeout(() => this.scheduleDispatch(), delay);
  }

  /** The attempts of a dispatch round, in its batch; the launch counter is written once for the round. */
  private recordLaunches(rows: ItemRow[], now: number): ActiveAttempt[] {
    const starts = rows.map((row) => this.recordLaunch(row, now));
    if (starts.length > 0) this.store.setMeta('total_launches', String(this.counters.totalLaunches));
    return starts;
  }

  private recordLaunch(row: ItemRow, now: number): ActiveAttempt {
    const item = itemFromRow(row.definition, row);
    const attempt = row.attempts + 1;
    // On a fleet store the database numbers the attempt as it inserts it (one round trip).
    const attemptId = this.fleet ? this.fleet.store.insertAttempt(row.id, attempt, now) : ++this.lastAttemptId;
    if (!this.fleet) this.store.mutate('attempt_insert', [attemptId, row.id, attempt, now]);
    this.store.mutate('item_state', ['pending', attempt, null, 1, row.last_error, now, row.id]);
    this.counters.totalLaunches++;
    const a: ActiveAttempt = { attemptId, item, attempt, startedAt: now, run: undefined, held: row.held === 1 };
    this.active.set(attemptId, a);
    this.lastLaunch = launchRecord(item, attempt, now, null);
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
    const run = this.launcher.launch(a.attemptId, a.item, a.attempt, this.output.target(a.attemptId));
    a.run = run;
    a.recorded = run.done.then(async (result) => {
      // Before the outcome is recorded, so the attempt's log entry and its problems arrive together.
      const problems = await this.matchProblems(a, result);
      if (a.cancelled) {
        this.ending.delete(a.attemptId);
        if (!this.closed) this.recordCancelledEnd(a, result, problems);
        this.scheduleDispatch();
        return;
      }
      if (this.closed) return; // shutdown left it recorded as running: interrupted at next start
      this.recordOutcome(a, result, problems);
      // The dispatch right after journals this outcome together with the next launches: one
      // fsync for everything that finished in this turn of the event loop and what replaces it.
      this.scheduleDispatch();
    });
  }

  /**
   * A cancelled attempt's process has exited: its row, recorded failed with error `cancelled` at
   * the cancel, gets how the process ended (exit code or signal, output tails, finish time).
   */
  private recordCancelledEnd(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): void {
    const { finishedAt, exitCode, signal, stdoutTail, stderrTail, outputBytes } = result;
    this.store.mutate('attempt_end', [finishedAt, 'failed', exitCode, signal, 'cancelled', stdoutTail, stderrTail, outputBytes, problemsJson(problems), a.attemptId]);
    this.output.recordFinished(outputBytes);
    // Its followers end and the total cap applies, as for any attempt that ends.
    this.outputFinished(a.attemptId, result);
  }

  /**
   * The problems the item's matcher finds in the attempt's output (section 10); null when it has
   * no matcher. A failure to read the output is logged and gives none: it never holds up the outcome.
   */
  private async matchProblems(a: ActiveAttempt, result: AttemptResult): Promise<AttemptProblem[] | null> {
    const matcher = a.item.problemMatcher;
    if (matcher === undefined) return null;
    if (result.outputBytes === null) return [];
    try {
      return await attemptProblems(this.output.dir, a.attemptId, matcher, a.item.cwd, this.matchers);
    } catch (err) {
      if (!this.closed) {
        this.log('database_error', 'warn', `cannot apply the problem matcher of "${a.item.name}" to attempt ${a.attempt}: ${(err as Error).message}`, a.item.id, {
          attempt: a.attempt,
          error: (err as Error).message,
        });
      }
      return [];
    }
  }

  private finishAttempt(a: ActiveAttempt, result: AttemptResult, interrupted = false, problems: AttemptProblem[] | null = null): void {
    this.active.delete(a.attemptId);
    const { item, attempt } = a;
    const end = launchEnd(result);
    // On a fleet another engine may hold or release the item meanwhile: its row says.
    const held = () => (this.fleet || a.held === undefined ? readHeld(this.store, item.id) : a.held);
    this.store.batch(() => {
      const { finishedAt, exitCode, signal, error, stdoutTail, stderrTail, outputBytes } = result;
      this.store.mutate('attempt_end', [finishedAt, end.outcome, exitCode, signal, error, stdoutTail, stderrTail, outputBytes, problemsJson(problems), a.attemptId]);
      this.output.recordFinished(outputBytes);
      const details: Record<string, unknown> = outcomeDetails(item, attempt, result);
      // For the editor: whether GET /items/{id} has problems worth fetching for this attempt.
      if (problems) details.problems = problems.length;
      const now = result.finishedAt;
      if (result.succeeded) {
        this.store.mutate('item_state', ['launched', attempt, null, 0, null, now, item.id]);
        this.endHold(item.id, held(), now);
        this.counters.pending--;
        this.counters.launched++;
        this.dependencies.launched(item.id);
        this.log('launch_succeeded', 'info', `"${item.name}" succeeded (attempt ${attempt}, exited with code 0 in ${end.durationMs} ms)`, item.id, details);
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
          this.endHold(item.id, held(), now);
          this.counters.pending--;
          this.counters.failed++;
          this.log('item_failed', 'error', `"${item.name}" failed for good after ${attempt} attempt(s): ${why}`, item.id, details);
          this.dependencies.failed(item.id);
        } else {
          const delay = backoffDelay(attempt, this.options);
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
    this.lastLaunch = launchRecord(item, attempt, a.startedAt, end);
    this.outputFinished(a.attemptId, result);
    this.attemptFinished({ itemId: item.id, attempt, succeeded: result.succeeded, durationMs: end.durationMs });
    this.events.emit({ type: 'stats' });
  }

  /** The attempt's output is complete: its followers end, the total cap applies, a capture error clears. */
  private outputFinished(attemptId: number, result: AttemptResult): void {
    const listeners = this.outputEndListeners.get(attemptId);
    this.outputEndListeners.delete(attemptId);
    if (listeners) for (const l of listeners) l();
    this.output.enforceTotal();
    if (result.outputBytes !== null && result.outputError === null && this.outputError !== null) {
      this.outputError = null;
      this.log('database_recovered', 'info', 'attempt output is written again', null, null);
    }
  }

  private onOutputError(attemptId: number, error: string): void {
    const first = this.outputError === null;
    this.outputError = error;
    const a = this.active.get(attemptId);
    this.log('database_error', 'error', `cannot write the output of attempt ${a?.attempt ?? '?'} of "${a?.item.name ?? '?'}": ${error}; the attempt runs on, its output is cut`, a?.item.id ?? null, {
      error,
      output: this.output.dir,
    });
    if (first) this.events.emit({ type: 'stats' });
  }

  // ---- recovery and state ---------------------------------------------------------------

  private loadState(): void {
    const state = readStoredState(this.store);
    this.counters = state.counters;
    this.poller.lastPollAt = state.lastPollAt;
    this.entries.lastId = state.lastLogId;
    this.lastAttemptId = state.lastAttemptId;
    this.lastLaunch = state.lastLaunch;
  }

  /** Attempts that were running when the last engine died: failed with error `interrupted`, retried under the usual rules. */
  private recoverInterrupted(): void {
    const rows = readRunningAttempts(this.store);
    for (const r of rows) {
      const a: ActiveAttempt = { attemptId: r.id, item: r.item, attempt: r.attempt, startedAt: r.startedAt, run: undefined };
      this.finishAttempt(a, resultWithoutProcess(r.startedAt, 'interrupted'), true);
    }
    if (rows.length > 0) this.store.commit();
  }

  private engineState(): EngineState {
    return engineState(this.mode, this.started, this.poller.msSinceLastPoll(), this.options.pollIntervalMs);
  }

  private onStorageHealth(ok: boolean, error: string | null): void {
    if (ok && this.fleet) {
      this.log('database_recovered', 'info', 'the PostgreSQL store answers again; launching resumes', null, null);
      this.fleetTick();
      this.scheduleDispatch();
    } else if (!ok && this.fleet) {
      this.log('database_error', 'error', `the PostgreSQL store is unreachable: ${error}. Launches wait; reconnecting with backoff`, null, { error });
    } else if (ok) {
      this.log('database_recovered', 'info', 'storage is writable again; the full state was persisted', null, null);
      if (this.options.onStorageRecovered && !this.options.onStorageRecovered()) {
        this.storageLost = true;
        this.mode = 'stopped';
        this.poller.cancel();
        clearTimeout(this.dueTimer);
        this.log('engine_stopped', 'error', 'the storage folder is no longer this engine\'s (another engine holds its lock): nothing more is launched; stop this engine', null, {
          storage: this.options.storageDir,
        });
      }
    } else {
      this.log('database_error', 'error', `cannot persist the database: ${error}. State is kept in memory; retrying every second`, null, {
        error,
        storage: this.options.storageDir,
      });
    }
    this.events.emit({ type: 'stats' });
  }

  /**
   * A hook (src/host/hooks.ts, outside the engine) could not deliver an event. The one log entry
   * written from outside: the persistence tick commits it like any other.
   */
  logHookFailure(message: string, itemId: string | null, details: Record<string, unknown>): void {
    this.log('hook_failed', 'error', message, itemId, details);
  }

  private log(action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    if (this.closed) return;
    if (!this.fleet) return this.entries.write(action, level, message, itemId, details);
    try {
      this.entries.write(action, level, message, itemId, details);
    } catch (err) {
      // Inside a transaction the whole unit of work is retried; alone, the entry waits in memory.
      if (!isStoreUnavailable(err) || this.fleet.store.inTransaction) throw err;
      this.fleet.keepLog([action, level, message, itemId, details]);
    }
  }
}
