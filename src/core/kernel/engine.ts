// The launch engine: polls its sources, ingests items, launches due items within the concurrency
// limit, retries failures with backoff and records every outcome in the store. This file is the
// composition root (store, claimer, features) and the lifecycle: start, stop, trust, shutdown. The
// launch loop is dispatch.ts, the attempts under way attempts.ts, every state change transitions.ts;
// reads are delegated to ../reads; the features live in ../features and join through hooks.ts.
import type { ItemDetail, ItemSummary, ScheduleSummary, LogAction, LogLevel, StatsOverview, StatusResponse, EngineState } from '../../shared/api';
import { healthStatus } from '../../shared/health';
import { searchWords } from '../../shared/logFilter';
import { ControlError, type AttemptOutput, type ControllableEngine, type EngineEvent, type FinishedAttempt, type HealthSnapshot, type ItemsPage, type LogPage, type LogQuery } from './monitoredEngine';
import { AttemptLauncher } from '../launching';
import { ItemIngestion, type LogWriter } from '../intake/ingest';
import { Poller } from '../intake/poller';
import { submitItems as submit, type SubmitResult } from '../intake/submit';
import { Dependencies } from '../features/dependencies/dependencies';
import { Scheduler } from '../features/schedules/schedules';
import { excludedFolders, WatchTriggers } from '../features/triggers/watchTriggers';
import { AttemptOutputs } from '../features/output/attemptOutputs';
import { ProblemMatching } from '../features/problems/problemMatching';
import { ItemControl } from '../features/control/control';
import { Services } from '../features/services/services';
import { FleetClaimer } from '../features/fleet/fleetClaimer';
import { joinAttemptInsight } from '../features/insight/attemptInsight';
import { PersistencePolicy } from './persistence';
import { Store } from '../store';
import type { StoreBackend } from '../store/backend';
import { readItemDetail, readItemPage, readStoredState } from '../reads/records';
import { queryLogs } from '../reads/logQuery';
import { EngineEventBus } from './eventBus';
import { EngineHooks } from './hooks';
import { Transitions } from './transitions';
import { Attempts } from './attempts';
import { Dispatcher } from './dispatch';
import { LocalClaimer, type Claimer } from './claimer';
import type { ChangeEnd, KernelContext } from './context';
import { EngineLog } from './engineLog';
import type { EngineMode, EngineOptions } from './engineOptions';
import { engineState, engineStatus } from './engineStatus';

export type { EngineOptions } from './engineOptions';

export class Engine implements ControllableEngine {
  readonly version: string;
  readonly drafts: ItemIngestion['drafts']; // queue files a window is still typing
  private mode: EngineMode;
  private readonly events = new EngineEventBus();
  private readonly hooks = new EngineHooks();
  private readonly transitions: Transitions;
  private readonly entries: EngineLog;
  private readonly launcher: AttemptLauncher;
  private readonly output: AttemptOutputs;
  private readonly problems: ProblemMatching;
  private readonly attempts: Attempts;
  private readonly claimer: Claimer;
  private readonly dispatcher: Dispatcher;
  private readonly ingestion: ItemIngestion;
  private readonly poller: Poller;
  private readonly scheduler: Scheduler;
  private readonly triggers: WatchTriggers;
  readonly control: ItemControl;
  private readonly services: Services;
  private readonly persistence: PersistencePolicy;
  private readonly startedAt = Date.now();
  private recovery: { at: string; message: string } | null = null;
  private lastAttemptId = 0;
  private closed = false;
  private started = false;
  /** Set when storage came back but onStorageRecovered said it is no longer this engine's. */
  private storageLost = false;

  private constructor(
    private readonly store: StoreBackend,
    private readonly options: EngineOptions,
    claimerFor: (k: KernelContext, attempts: Attempts) => Claimer,
  ) {
    this.version = options.version;
    this.mode = options.initialMode;
    const log: LogWriter = (action, level, message, itemId, details) => this.log(action, level, message, itemId, details);
    const isClosed = () => this.closed;
    this.transitions = new Transitions(store, options, log, this.hooks);
    const k: KernelContext = {
      store,
      options,
      events: this.events,
      hooks: this.hooks,
      transitions: this.transitions,
      log,
      isClosed,
      engineState: () => this.engineState(),
      scheduleDispatch: () => this.dispatcher.schedule(),
      changed: (how) => this.changed(how),
    };
    this.output = new AttemptOutputs({ store, log, events: this.events, hooks: this.hooks, running: () => this.attempts.active }, options);
    this.launcher = new AttemptLauncher({
      entry: options.launchHelper,
      helpers: options.launchHelpers,
      workspaceFolders: options.workspaceFolders,
      warn: (message, details) => this.log('engine_started', 'warn', message, null, details),
      onOutputError: (attemptId, error) => this.output.captureFailed(attemptId, error),
    });
    this.problems = new ProblemMatching(options.matcherBudgetMs, () => this.output.dir, log, isClosed);
    this.attempts = new Attempts(k, this.launcher, this.output, this.problems);
    this.claimer = claimerFor(k, this.attempts);
    this.attempts.useClaimer(this.claimer);
    this.entries = new EngineLog(store, this.events, this.claimer.insertLog);
    this.dispatcher = new Dispatcher(k, this.attempts, this.claimer, () => ({ mode: this.mode, storageLost: this.storageLost }));
    this.ingestion = new ItemIngestion(store, options, { log, transitions: this.transitions, isClosed });
    this.drafts = this.ingestion.drafts;
    const dependencies = new Dependencies(store, { log, transitions: this.transitions, hooks: this.hooks }, this.claimer.shared);
    joinAttemptInsight({ store, hooks: this.hooks, transitions: this.transitions, isClosed });
    const templates = {
      log,
      now: options.scheduleClock ?? Date.now,
      insertOccurrence: this.ingestion.insertItem.bind(this.ingestion),
      onFired: () => this.changed({ settle: true, commit: 'background', dispatch: true }),
      isActive: () => this.mode === 'running' && !this.closed,
      cancel: (itemId: string) => this.control.cancelItem(itemId),
      excluded: excludedFolders(options),
    };
    this.scheduler = new Scheduler(store, templates);
    this.triggers = new WatchTriggers(store, templates, this.hooks);
    this.control = new ItemControl(k, this.attempts, dependencies, this.scheduler);
    this.services = new Services(k, this.attempts, { launcher: this.launcher, problems: this.problems, outputDir: () => this.output.dir });
    this.poller = new Poller(store, this.ingestion, options.pollIntervalMs, {
      isClosed,
      isStopped: () => this.mode === 'stopped',
      // Written by the dispatch round in this turn, with the launches of what was ingested, under
      // one fdatasync (a kill -9 before reads the files again). Schedules fire only while the
      // engine launches: stopped or restricted, they catch up once when it resumes.
      onPolled: () => this.changed({ settle: true, commit: 'dispatch', dispatch: true }, () => (this.scheduler.check(), this.triggers.sync())),
      onClockJump: (ms) => {
        this.transitions.backoffsShifted(ms);
        this.dispatcher.schedule();
      },
    });
    this.persistence = new PersistencePolicy(store, options, {
      lastLogId: () => this.entries.lastId,
      isClosed,
      // Launches wait while storage fails; once it is back, resume.
      onPersisted: () => {
        this.claimer.tick();
        if (this.store.lastError === null && this.mode === 'running' && this.attempts.active.size < this.options.concurrency) this.dispatcher.schedule();
      },
      onItemsForgotten: (itemIds) => this.hooks.emit('itemsForgotten', itemIds),
    });
  }

  /** Opens the store, recovers from a crash if there was one, and loads the counters. The one place that knows which store it has. */
  static async create(options: EngineOptions): Promise<Engine> {
    let engine: Engine | undefined;
    if (options.storeUrl) {
      let fleet: FleetClaimer | undefined;
      const pg = await FleetClaimer.openStore(options, (ok, error) => engine?.onStorageHealth(ok, error), () => fleet);
      engine = new Engine(pg, options, (k, attempts) => (fleet = new FleetClaimer(pg, k, attempts)));
      engine.loadState();
      return engine;
    }
    const { store, notes } = await Store.open({
      storageDir: options.storageDir,
      onHealthChange: (ok, error) => engine?.onStorageHealth(ok, error),
      onNote: (note) => engine?.log(note.action, note.level, note.message, null, note.details ?? null),
      // Periodic snapshots are built in a process a launch helper starts, outside this one's address space
      // (docs/PERFORMANCE.md); one asked for while the helpers start waits for them; without helpers, a worker thread.
      runCheckpoint: (job) => engine?.launcher.runCheckpoint(job),
    });
    engine = new Engine(store, options, (k, attempts) => new LocalClaimer(store, k, attempts));
    engine.loadState();
    for (const note of notes) engine.log(note.action, note.level, note.message, null, note.details ?? null);
    // /status keeps the repair in view after the log entry has scrolled away.
    if (notes.length > 0) engine.recovery = { at: new Date().toISOString(), message: notes.map((n) => n.message).join('; ') };
    engine.claimer.recover();
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
    await this.output.start(this.lastAttemptId);
    await this.poller.poll();
    this.poller.schedule();
  }

  /** Starts the launch helpers before the first launch (the host, once ready); they also build the snapshots. */
  prepareLaunching(): void {
    if (this.options.storageDir) this.launcher.prepare();
  }

  /** Stop launching (running attempts finish and are recorded). */
  stopLaunching(reason = 'stopped by the user'): void {
    // Restricted launches nothing already, and stays so: a stop then a start (over HTTP, say)
    // must not stand in for granting Workspace Trust.
    if (this.mode === 'stopped' || this.mode === 'restricted') return;
    this.mode = 'stopped';
    this.poller.cancel();
    this.scheduler.cancel();
    this.dispatcher.stopTimer();
    this.log('engine_stopped', 'info', `engine ${reason}`, null, { running: this.attempts.active.size });
    void this.services.stopAll();
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

  /** Graceful end: stop launching, let running attempts finish for up to `graceMs`, end the rest (they stay
   * recorded as running, so the next start records them as interrupted and retries), persist, close. */
  async shutdown(graceMs: number): Promise<void> {
    if (this.closed) return;
    this.poller.cancel();
    this.scheduler.cancel();
    this.dispatcher.stopTimer();
    const wasMode = this.mode;
    this.mode = 'stopped';
    if (wasMode !== 'stopped') this.log('engine_stopped', 'info', 'engine shutting down', null, { running: this.attempts.active.size, graceMs });
    // Attempts journaled but not spawned yet are spawned once the disk has them (mode no longer
    // matters to that): then every active attempt has a process to wait for or terminate.
    await Promise.all(this.dispatcher.launching);
    // Services run until stopped: the rest first (what may depend on them), then they, in reverse dependency order.
    await this.attempts.endForShutdown(graceMs, (a) => !this.services.isService(a));
    await this.services.stopAll();
    await this.poller.underWay;
    await this.triggers.close();
    this.ingestion.close();
    this.closed = true;
    // The snapshot store.close() takes below holds everything a checkpoint in flight would.
    this.store.abandonCheckpoint();
    // After `closed`, so what ends now stays recorded as running (interrupted at the next start):
    // SIGKILL after the same 1 s for what ignores SIGTERM, then the helper exits.
    await this.launcher.close(1000);
    this.output.endFollowers();
    this.persistence.stop();
    await this.problems.close();
    await this.output.close();
    this.store.close();
    this.events.clear();
  }

  /** settle → commit → tell readers → dispatch; `between` runs after the settle (a poll's schedules). */
  private changed(how: ChangeEnd, between?: () => void): void {
    if (how.settle) this.hooks.emit('settle');
    between?.();
    // A dispatch round writes with its launches only while the engine launches; else now.
    if (how.commit !== 'dispatch' || !how.dispatch || this.mode !== 'running') this.store.commit(how.commit === 'dispatch' ? 'background' : how.commit);
    this.events.emit({ type: 'stats' });
    if (how.dispatch) this.dispatcher.schedule();
  }

  // ---- control: features/control, one handler each -------------------------------------

  /** Resolves once what the poll took is written: the dispatch round it asked for runs first. */
  readonly pollNow = (): Promise<void> => this.poller.pollNow().then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  readonly retryItem = (itemId: string): void => this.control.retryItem(itemId);
  readonly retryAllFailed = (): number => this.control.retryAllFailed();
  readonly cancelItem = (itemId: string): void => this.control.cancelItem(itemId);
  readonly restartItem = (itemId: string): void => this.services.restart(itemId, this.retryItem);
  readonly serviceCounts = () => this.services.counts();
  readonly holdItem = (itemId: string): void => this.control.holdItem(itemId);
  readonly releaseItem = (itemId: string): void => this.control.releaseItem(itemId);
  readonly submitItems = (body: unknown): Promise<SubmitResult> => submit(body, { store: this.store, options: this.options, ingestion: this.ingestion, changed: (how) => this.changed(how), isClosed: () => this.closed });

  // ---- reads ----------------------------------------------------------------------------

  readonly listSchedules = (): ScheduleSummary[] => this.scheduler.list();

  /** GET /items/{id}. */
  itemDetail(itemId: string): ItemDetail | undefined {
    return this.claimer.itemDetail(readItemDetail(this.store, itemId, Date.now()));
  }

  stats(): StatsOverview {
    return this.claimer.stats(this.poller.lastPollAt);
  }

  health(): HealthSnapshot {
    const storageOk = this.store.lastError === null && this.output.lastError === null;
    const checks = { database: storageOk ? 'ok' : 'error', engine: this.engineState() } as const;
    return { status: healthStatus(checks), checks };
  }

  status(): Omit<StatusResponse, 'timestamp' | 'server'> {
    const body = engineStatus({
      version: this.version,
      state: this.engineState(),
      startedAt: this.startedAt,
      options: this.options,
      running: this.attempts.active.size,
      polls: this.poller.polls,
      scanner: this.ingestion.scannerStatus(),
      stats: this.stats(),
      lastLaunch: this.transitions.lastLaunch,
      store: this.store,
      recovery: this.recovery,
    });
    return this.claimer.status({ ...body, services: this.services.status() });
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
    if (q === undefined || searchWords(q).length === 0) return undefined;
    return this.claimer.searchReady();
  }

  subscribe(listener: (event: EngineEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  onAttemptFinished(listener: (attempt: FinishedAttempt) => void): () => void {
    return this.attempts.onFinished(listener);
  }

  attemptOutput(itemId: string, attempt: number): AttemptOutput {
    return this.output.attemptOutput(itemId, attempt);
  }

  /** For tests: followers of running attempts' output still registered. */
  get outputFollowers(): number {
    return this.output.followers;
  }

  // ---- state, storage and log -------------------------------------------------------------

  private loadState(): void {
    const state = readStoredState(this.store);
    this.transitions.load(state);
    this.claimer.loaded(state);
    this.poller.lastPollAt = state.lastPollAt;
    this.entries.lastId = state.lastLogId;
    this.lastAttemptId = state.lastAttemptId;
  }

  private engineState(): EngineState {
    return engineState(this.mode, this.started, this.poller.msSinceLastPoll(), this.options.pollIntervalMs);
  }

  private onStorageHealth(ok: boolean, error: string | null): void {
    if (this.claimer.storageHealth(ok, error) === 'lost') {
      this.storageLost = true;
      this.mode = 'stopped';
      this.poller.cancel();
      this.dispatcher.stopTimer();
      const why = 'the storage folder is no longer this engine\'s (another engine holds its lock): nothing more is launched; stop this engine';
      this.log('engine_stopped', 'error', why, null, { storage: this.options.storageDir });
    }
    this.events.emit({ type: 'stats' });
  }

  /** A hook (src/host/hooks.ts, outside the engine) could not deliver an event. The one log entry
   * written from outside: the persistence tick commits it like any other. */
  logHookFailure(message: string, itemId: string | null, details: Record<string, unknown>): void {
    this.log('hook_failed', 'error', message, itemId, details);
  }

  private log(action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    if (this.closed) return;
    this.claimer.writeLog(this.entries, action, level, message, itemId, details);
  }
}
