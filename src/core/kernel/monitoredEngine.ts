// What the engine offers its readers: the HTTP server, and through it every client. It lives in
// core beside the engine that implements it, so the arrow points server → core; the server
// depends on this interface only, and can be read (and tested) with any engine that has it.
import type {
  AttemptResources,
  DatabaseCheck,
  EngineState,
  HealthStatus,
  ItemDetail,
  ItemSummary,
  LogEntry,
  LogLevel,
  ScheduleSummary,
  StatsOverview,
  StatusResponse,
} from '../../shared/api';
import type { ItemFilter, ItemOrder } from '../../shared/itemFilter';
import type { LogFilter, LogOrder } from '../../shared/logFilter';
import type { DraftHolds } from '../intake/draftHolds';
import type { SubmitResult } from '../intake/submit';

/**
 * A LogFilter as the engine runs it (logQueryOf builds one): the level is a minimum, the text
 * arrives as its search words, and a page has an order, a size and a place to continue from.
 */
export interface LogQuery extends Omit<LogFilter, 'level' | 'q'> {
  /** Minimum level: entries at this level or above. */
  minLevel?: LogLevel;
  /** Words of the text (searchWords); every one must start a word of the message. */
  words?: string[];
  order: LogOrder;
  limit: number;
  /** Keyset cursor: continue strictly after this entry id in the query's order. */
  afterId?: number;
}

export interface LogPage {
  entries: LogEntry[];
  /** True when more entries match beyond this page. */
  hasMore: boolean;
  /** The last entry's id (the next page's cursor), without materialising `entries`. */
  lastId?: number;
  /**
   * The entries as the JSON array /logs answers with, exactly `JSON.stringify(entries)`, when the
   * engine can write it more cheaply than parsing and re-serialising every entry's details.
   */
  json?(): string;
  /** The same JSON text in parts (concatenated, exactly `json()`), each small enough to die young. */
  jsonParts?(): string[];
}

export interface HealthSnapshot {
  status: HealthStatus;
  checks: { database: DatabaseCheck; engine: EngineState };
}

/**
 * Emitted synchronously. /events relies on 'log' being emitted only once the entry is visible to
 * queryLogs (it switches a resuming client from replay to live in the same tick as its last query).
 */
export type EngineEvent =
  | { type: 'log'; entry: LogEntry }
  /** Some counter changed; the server reads stats() and throttles what it sends. */
  | { type: 'stats' };

/**
 * Where to read one attempt's captured output (src/core/features/output/outputReader.ts), or why there is none:
 * the item or the attempt is unknown (or never started a process), or retention deleted it.
 */
export type AttemptOutput =
  | { found: 'no_item' }
  | { found: 'no_attempt' }
  | { found: 'pruned' }
  | {
      found: 'output';
      dir: string;
      attemptId: number;
      running: boolean;
      /** The attempt spawned a process (or is about to): without files, its output is empty rather than absent. */
      started: boolean;
      /** Calls `listener` once when the attempt ends (its output then complete); returns the unsubscribe. Only while running. */
      onEnd(listener: () => void): () => void;
    };

/** An attempt that got its outcome: succeeded, or failed (exit code, timeout, spawn error, cancel). */
export interface FinishedAttempt {
  itemId: string;
  attempt: number;
  succeeded: boolean;
  /** How long it ran, start to outcome. */
  durationMs: number;
  /** What its processes cost, when measured (absent: a cancel, recorded before its process ended). */
  resources?: AttemptResources | null;
}

export interface MonitoredEngine {
  /** package.json version, reported by /health and /status. */
  readonly version: string;
  stats(): StatsOverview;
  /** Evaluated at call time (stalled detection depends on the clock). */
  health(): HealthSnapshot;
  /** Everything but `timestamp` and `server`, which the server fills in. */
  status(): Omit<StatusResponse, 'timestamp' | 'server'>;
  /** Services by state, for /metrics: starting, ready, and stopped (every other state). Absent: none. */
  serviceCounts?(): Record<'starting' | 'ready' | 'stopped', number>;
  queryLogs(query: LogQuery): LogPage;
  /** A page of the items the filter selects, in discovery order, and how many it selects in all. */
  listItems(query: ItemsPage): { items: ItemSummary[]; total: number };
  /**
   * undefined when listItems(query) can answer now; else a promise of when it can without holding
   * the event loop long (the word index of /items?q= is built in steps, src/core/itemSearch.ts).
   */
  itemSearchReady?(query: ItemsPage): Promise<void> | undefined;
  /** GET /items/{id}; undefined for an unknown id. */
  itemDetail(itemId: string): ItemDetail | undefined;
  subscribe(listener: (event: EngineEvent) => void): () => void;
  /**
   * Calls `listener` once for every attempt that gets its outcome from now on (/metrics' duration
   * histogram); returns the unsubscribe. Apart from subscribe() so that a listener here, which
   * stays for the server's life, does not make the engine build an event for every log entry.
   */
  onAttemptFinished(listener: (attempt: FinishedAttempt) => void): () => void;
  /** Attempt `attempt` (1-based, the latest of that number after a retry by hand) of the item. */
  attemptOutput(itemId: string, attempt: number): AttemptOutput;
  /** GET /schedules; absent: an engine with no schedules. */
  listSchedules?(): ScheduleSummary[];
}

/** An /items read: the filter and the page. */
export interface ItemsPage {
  filter?: ItemFilter;
  limit: number;
  offset: number;
  /** Absent: discovery order (see ITEM_ORDERS). */
  order?: ItemOrder;
}

/**
 * Why a control request was refused: `not_found` (no such item: HTTP 404) or `conflict` (the item
 * or the engine is not in a state that allows it: HTTP 409). The message says why, for the user.
 */
export class ControlError extends Error {
  constructor(
    readonly reason: 'not_found' | 'conflict',
    message: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

/** Removing items and running a launched one again (features/control/control.ts). */
export interface ItemRemoval {
  /** Removes an item; a running one is cancelled first and removed once its process has exited. */
  removeItem(itemId: string): Promise<void>;
  /** Removes every launched and failed item (Clear Finished); how many. */
  clearFinished(): Promise<number>;
  /** Makes a launched item pending again, its attempts reset (Run Again). */
  runAgain(itemId: string): void;
}

/**
 * What control over HTTP (with a token) and over the extension's private channel may ask of an
 * engine. Each throws ControlError when refused; the server answers with the
 * item as itemDetail() then reports it, or with the /status body.
 */
export interface ControllableEngine extends MonitoredEngine {
  cancelItem(itemId: string): void;
  retryItem(itemId: string): void;
  /** Restart Service: a running service is ended and started again at once; a stopped one starts. */
  restartItem(itemId: string): void;
  holdItem(itemId: string): void;
  releaseItem(itemId: string): void;
  startLaunching(): void;
  stopLaunching(): void;
  pollNow(): Promise<void>;
  /** Retries every failed item; how many. */
  retryAllFailed(): number;
  /** Workspace Trust was granted: leave the restricted state and start launching. */
  grantTrust(): void;
  /** Remove Item, Clear Finished, Run Again. */
  readonly control: ItemRemoval;
  /** Queue files a window is still typing: scans pass over them until saved on purpose. */
  readonly drafts: Pick<DraftHolds, 'hold' | 'ingest'>;
  /**
   * POST /items: one item object or an array, taken as a queue file's entries, all or none, and on
   * disk when this resolves. Throws SubmitError (intake/submit.ts) saying which entries and why.
   */
  submitItems(body: unknown): Promise<SubmitResult>;
}

export function isControllable(engine: MonitoredEngine): engine is ControllableEngine {
  return typeof (engine as Partial<ControllableEngine>).cancelItem === 'function';
}
