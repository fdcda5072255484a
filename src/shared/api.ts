// The HTTP API's types, shared by the server (which produces them), the VS Code UI and the
// webview (which consume them). These shapes are the API's promise to scripts; fields may be
// added, never removed or renamed.

export const ENGINE_NAME = 'launch-engine';

export const LOG_ACTIONS = [
  'engine_started',
  'engine_stopped',
  'item_discovered',
  'item_rejected',
  'launch_started',
  'launch_succeeded',
  'launch_failed',
  'launch_interrupted',
  'retry_scheduled',
  'item_failed',
  'item_retried',
  'source_error',
  'database_error',
  'database_recovered',
  // Attempt output and the control of items (cancel, hold, release, edits).
  'launch_cancelled',
  'item_held',
  'item_released',
  'item_updated',
  // The user removed an item (Remove Item, Clear Finished): its row goes, this entry stays.
  'item_removed',
  // Schedules and dependencies.
  'schedule_fired',
  'schedule_skipped',
  // File triggers: a watched item's settled burst of changes fired an occurrence, or was skipped.
  'watch_fired',
  'watch_skipped',
  'item_blocked',
  'dependency_failed',
  // A hook command or notify URL failed (never itself a hook's event, so a failing hook cannot loop).
  'hook_failed',
  // Services: ready (its probe succeeded), exited, started again.
  'service_ready',
  'service_exited',
  'service_restarted',
  // An attempt took more than twice its item's median duration.
  'attempt_slow',
] as const;
export type LogAction = (typeof LOG_ACTIONS)[number];

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** ISO 8601 UTC with milliseconds, as `Date.prototype.toISOString()` writes it. */
export type IsoTime = string;

export interface StatsOverview {
  /** Known items; always launched + pending + failed. */
  total: number;
  launched: number;
  pending: number;
  failed: number;
  /** Attempts ever started (only grows, survives restarts). */
  totalLaunches: number;
  /** Attempts ever failed (only grows, survives restarts). */
  totalFailed: number;
  /** Start time of the last poll; null only for a database that was never polled. */
  lastPollAt: IsoTime | null;
  /** Pending items held by the user (never launched until released); also counted in `pending`. */
  held: number;
  /** Pending items with an attempt running now; also counted in `pending`. */
  running: number;
}

export interface StatsResponse {
  overview: StatsOverview;
  timestamp: IsoTime;
}

export type DatabaseCheck = 'ok' | 'error';
export type EngineState = 'running' | 'stopped' | 'restricted' | 'stalled';
export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

export interface HealthResponse {
  status: HealthStatus;
  engine: typeof ENGINE_NAME;
  version: string;
  timestamp: IsoTime;
  checks: { database: DatabaseCheck; engine: EngineState };
}

export interface SourceStatus {
  kind: 'queue-directory';
  location: string;
  lastScanAt: IsoTime | null;
  lastError: string | null;
  /** Items ingested from this source by this engine process (0 after a restart). */
  itemsDiscovered: number;
  /** Items known from this source, from the store: what the queue has given, across restarts. */
  itemsKnown: number;
}

export type LaunchOutcome = 'running' | 'succeeded' | 'failed';

export interface LaunchRecord {
  itemId: string;
  name: string;
  attempt: number;
  startedAt: IsoTime;
  finishedAt: IsoTime | null;
  durationMs: number | null;
  outcome: LaunchOutcome;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
}

export interface StatusResponse {
  engine: {
    name: typeof ENGINE_NAME;
    version: string;
    state: EngineState;
    startedAt: IsoTime;
    uptimeMs: number;
    pollIntervalMs: number;
    concurrency: number;
    running: number;
    polls: number;
    /** On a PostgreSQL store shared by a fleet: this engine's id in `fleet`. */
    engineId?: string;
  };
  /** On a PostgreSQL store shared by a fleet: every engine sharing it. */
  fleet?: FleetEngine[];
  scanner: {
    sources: SourceStatus[];
    lastScanAt: IsoTime | null;
    lastScanDurationMs: number | null;
    scans: number;
    itemsDiscovered: number;
    itemsRejected: number;
  };
  stats: StatsOverview;
  lastLaunch: LaunchRecord | null;
  /** The services this engine runs or has run (starting, ready, or stopped), by discovery order. */
  services?: ServiceStatus[];
  timestamp: IsoTime;
  database: {
    path: string;
    sizeBytes: number;
    lastPersistAt: IsoTime | null;
    lastError: string | null;
    /** What the last start repaired (snapshot moved aside, torn journal), or null. */
    recovery: { at: IsoTime; message: string } | null;
  };
  server: { url: string };
}

export interface LogEntry {
  id: number;
  timestamp: IsoTime;
  action: LogAction;
  level: LogLevel;
  message: string;
  itemId: string | null;
  details: Record<string, unknown> | null;
  /** On a PostgreSQL store shared by a fleet: the engine that wrote it. */
  engineId?: string | null;
}

/** One engine of a fleet on a PostgreSQL store, as /status.fleet lists it. */
export interface FleetEngine {
  engineId: string;
  host: string;
  pid: number;
  /** As checks.engine, or `lost` once its lease has expired. */
  state: EngineState | 'lost';
  startedAt: IsoTime;
  lastHeartbeatAt: IsoTime;
  running: number;
  /** The engine's workspace folders, recorded when it joined: it claims only items whose cwd is in one. */
  workspaces: string[];
}

export type ItemOutcome = 'launched' | 'pending' | 'failed';

/** One item as `/items` lists it (beside the four monitoring endpoints, for the UI). */
export interface ItemSummary {
  id: string;
  name: string;
  outcome: ItemOutcome;
  /** Finer state within pending: waiting, scheduled (runAt), backoff, running. */
  phase: 'waiting' | 'scheduled' | 'backoff' | 'running' | 'done';
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: IsoTime | null;
  source: string;
  updatedAt: IsoTime;
  lastError: string | null;
  /**
   * When its latest finished attempt finished (the queue file's CodeLens shows it); null when none
   * has. Absent from engines before it.
   */
  lastFinishedAt?: IsoTime | null;
  /** What that attempt cost (see AttemptDetail.resources); null when not measured. Absent from engines before it. */
  lastResources?: AttemptResources | null;
  /** The item's state: what `/items?state=` filters by. */
  state: ItemState;
  /** −100…100 (default 0): among due items, the higher launches first. Absent from engines before it. */
  priority?: number;
  /** Only on a blocked item: the ids it still waits for (not launched, or unknown). */
  waitingFor?: string[];
  /** Only on a service: since when its running attempt is ready, and how often it was started again since it was started. */
  service?: ServiceSummary;
}

export interface ServiceSummary {
  readyAt: IsoTime | null;
  restarts: number;
}

/** A service as `/status.services` lists it. */
export interface ServiceStatus extends ServiceSummary {
  id: string;
  name: string;
  state: ItemState;
  pid: number | null;
}

/**
 * An item's state: pending ones are waiting, scheduled, running, backoff, held or blocked; a
 * service's running attempt is starting (until its ready probe succeeds), then ready.
 */
export const ITEM_STATES = ['waiting', 'scheduled', 'running', 'backoff', 'held', 'blocked', 'launched', 'failed', 'starting', 'ready'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

/** An item's definition as `GET /items/{id}` reports it, defaults filled in. */
export interface ItemDefinitionBody {
  id: string;
  name: string;
  command: string;
  args: string[];
  shell: boolean;
  cwd: string | null;
  env: Record<string, string>;
  timeoutMs: number;
  maxAttempts: number;
  runAt: IsoTime | null;
  schedule: unknown;
  dependsOn: string[];
  priority: number;
  /** The item's problem matcher as its queue file wrote it; absent when it has none. */
  problemMatcher?: unknown;
  /** Only on a service: `service: true` and its settings with their defaults. */
  service?: boolean;
  ready?: unknown;
  readyTimeoutMs?: number;
  restart?: 'on-failure' | 'always' | 'never';
  source: string;
}

/** A problem found in an attempt's output by the item's problem matcher. */
export interface AttemptProblem {
  file: string;
  line: number;
  column: number | null;
  severity: 'error' | 'warning' | 'info';
  message: string;
  code: string | null;
}

/**
 * What an attempt's processes cost, all of its session and process group together (Linux, read
 * from /proc: README "Attempt insight"). null where the platform cannot tell.
 */
export interface AttemptResources {
  /** CPU time (user + system); null when nothing was measured (an attempt too short to sample, reaped with another). */
  cpuMs: number | null;
  /** The largest resident memory any sample saw; null when it ended before its first sample. */
  peakRssBytes: number | null;
  /** The longest time between two samples: a peak shorter than this may be missed. */
  sampledEveryMs: number;
}

/** One attempt as `GET /items/{id}` lists it. */
export interface AttemptDetail {
  attempt: number;
  startedAt: IsoTime;
  finishedAt: IsoTime | null;
  durationMs: number | null;
  outcome: LaunchOutcome;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  /**
   * Bytes of output kept for the attempt, recorded when it ends; null while it runs (a HEAD of its
   * output gives the size so far) and when none was captured (never spawned).
   */
  outputBytes: number | null;
  problems: AttemptProblem[];
  /** A service's attempt: when it became ready; null while it starts or when it never did. Absent for other items. */
  readyAt?: IsoTime | null;
  /** What it cost; null while it runs, where the platform cannot tell, and for attempts recorded before it was measured. */
  resources: AttemptResources | null;
  /** From its spawn to its first byte of output (either stream); null if it printed nothing (or while it runs). */
  firstOutputMs: number | null;
  /** It took more than twice the median duration of the item's 10 attempts before it. */
  slow: boolean;
  /** On a PostgreSQL store shared by a fleet: the engine that ran it. */
  engineId?: string | null;
}

/** `GET /items/{id}` (and the answer to every POST on an item). */
export interface ItemDetail {
  item: ItemDefinitionBody;
  outcome: ItemOutcome;
  state: ItemState;
  /** Why a failed item failed for good (`cancelled`, `dependency failed: b`…); null otherwise. */
  error: string | null;
  attempts: AttemptDetail[];
  /** Over the item's last 100 finished attempts (count 0: none yet, medianMs and p90Ms null). */
  durations: DurationSummary;
  /**
   * On a blocked item: the ids it still waits for, as `/items` gives them. In a fleet, on a due
   * item the answering engine cannot start (its cwd is outside that engine's workspace folders):
   * one sentence saying which engine can, or that none can.
   */
  waitingFor?: string[];
}

/** Attempt durations: the median and the 90th percentile (nearest rank) of `count` attempts. */
export interface DurationSummary {
  count: number;
  medianMs: number | null;
  p90Ms: number | null;
}

export interface ErrorBody {
  /** `entries`: POST /items only, the refused entries and why. */
  error: { code: string; message: string; entries?: { index: number; reason: string }[] };
}

/** Server-sent event names on `/events`. */
export type EngineEventName = 'log' | 'stats' | 'health';

/** The events hooks receive: `--on-item-failed`, `--on-health-change`, `--notify-url`. */
export type HookEventName = 'item_failed' | 'health_changed';

/** The engine that sent a hook event. */
export interface HookEngineRef {
  /** The engine's HTTP API, as `ENGINE_MONITOR_URL` also says. */
  url: string;
  version: string;
}

/**
 * An item failed for good (its `item_failed` log entry): what `--on-item-failed` reads on stdin
 * and `--notify-url` receives. `item` is `GET /items/{id}` at the moment the hook was queued.
 */
export interface ItemFailedHookEvent {
  event: 'item_failed';
  item: ItemDetail;
  /** The `item_failed` log entry. */
  entry: LogEntry;
  engine: HookEngineRef;
  timestamp: IsoTime;
}

/** `/health` changed status or one of its checks: what `--on-health-change` reads on stdin. */
export interface HealthChangedHookEvent {
  event: 'health_changed';
  /** The health body before the change. */
  from: HealthResponse;
  /** The health body now, as `GET /health` answers it. */
  to: HealthResponse;
  engine: HookEngineRef;
  timestamp: IsoTime;
}

export type HookEvent = ItemFailedHookEvent | HealthChangedHookEvent;

/** GET /schedules: one schedule template. */
export interface ScheduleSummary {
  /** The template's id; its occurrences are `<id>@<ISO minute>Z` (a watched one's `<id>@<ISO ms>`). */
  id: string;
  /** The 5-field cron expression; absent for a watched template. */
  schedule?: string;
  /** IANA zone the expression is read in; absent for a watched template. */
  timezone?: string;
  overlap?: 'skip' | 'allow';
  /** A watched template's trigger, in place of schedule, timezone and overlap. */
  watch?: { paths: string[]; debounceMs: number; onChange: 'restart' | 'queue' | 'skip' };
  /** The next occurrence; null while the template is disabled (held), and always for a watched one. */
  nextRunAt: IsoTime | null;
  /** The last occurrence that became an item; null before the first. */
  lastRunAt: IsoTime | null;
  /** That occurrence's outcome so far; null before the first. */
  lastOutcome: ItemOutcome | null;
  /** False while held: no occurrence fires. */
  enabled: boolean;
}
