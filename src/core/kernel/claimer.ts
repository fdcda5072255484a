// How this engine takes due items to launch, and what follows from whether others share its store.
// Chosen once, when the engine is created: LocalClaimer for the sql.js store this engine alone
// writes, FleetClaimer (features/fleet) for a PostgreSQL store shared by a fleet. The launch loop
// and the attempts call it and never ask which one they have.
import type { AttemptProblem, ItemDetail, LogAction, LogLevel, StatsOverview, StatusResponse } from '../../shared/api';
import type { AttemptResult } from '../launching/attemptProcess';
import { itemIndexReady } from '../features/search';
import { readDueItems, readNextDueAt, readRunningAttempts, statsOverview, type ItemRow, type StoredState } from '../reads/records';
import type { Store } from '../store';
import type { ActiveAttempt, Attempts } from './attempts';
import type { KernelContext } from './context';
import type { EngineLog } from './engineLog';

/** A dispatch round's attempts, recorded; `committed` when they are on disk already and may be spawned at once. */
export interface LaunchRound {
  starts: ActiveAttempt[];
  committed: boolean;
}

export interface Claimer {
  /** Whether other engines write the same store: holds and outcomes are then read back from the rows. */
  readonly shared: boolean;
  /** On a shared store the database numbers log entries as it inserts them (log_insert's parameters after the id). */
  readonly insertLog?: (row: (string | number | null)[]) => number;
  /** What the engine takes over from the database at startup. */
  loaded(state: StoredState): void;
  /** Attempts a stopped or crashed engine left running, at startup: recorded interrupted. */
  recover(): void;
  /** Records the attempt row of a due item's next attempt and gives its id. */
  insertAttempt(itemId: string, attempt: number, startedAt: number): number;
  /** Takes up to `free` due items and records their attempts through `record`; null when none were due. */
  claim(free: number, now: number, record: (rows: ItemRow[]) => ActiveAttempt[]): LaunchRound | null;
  /** With slots still free after a round: in how many ms to look for due items again (null: not before something changes). */
  nextLook(now: number): number | null;
  /** Records an attempt's outcome (a shared store that is unreachable keeps it until it is back). */
  recordOutcome(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): void;
  /** Writes a log entry (a shared store that is unreachable keeps it in memory). */
  writeLog(log: EngineLog, action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void;
  /** Each persistence tick. */
  tick(): void;
  stats(lastPollAt: number | null): StatsOverview;
  /** GET /items/{id} as read from the store, with what only the claimer knows (why it waits). */
  itemDetail(detail: ItemDetail | undefined): ItemDetail | undefined;
  status<T extends Omit<StatusResponse, 'timestamp' | 'server'>>(body: T): T;
  /** Waits for the items' word index a search needs; undefined when ready or when the database searches itself. */
  searchReady(): Promise<void> | undefined;
  /** Storage failed or came back; 'lost' when it came back no longer this engine's. */
  storageHealth(ok: boolean, error: string | null): 'lost' | undefined;
}

/** The sql.js store in this engine's storage folder: this engine alone writes it. */
export class LocalClaimer implements Claimer {
  readonly shared = false;
  private lastAttemptId = 0;

  constructor(
    private readonly store: Store,
    private readonly k: KernelContext,
    private readonly attempts: Attempts,
  ) {}

  loaded(state: StoredState): void {
    this.lastAttemptId = state.lastAttemptId;
  }

  recover(): void {
    const rows = readRunningAttempts(this.store);
    for (const r of rows) this.attempts.interrupted(r, 'interrupted');
    if (rows.length > 0) this.store.commit();
  }

  insertAttempt(itemId: string, attempt: number, startedAt: number): number {
    const attemptId = ++this.lastAttemptId;
    this.store.mutate('attempt_insert', [attemptId, itemId, attempt, startedAt]);
    return attemptId;
  }

  /** The due items' attempts are journaled in one batch; they are spawned once it is on disk. */
  claim(free: number, now: number, record: (rows: ItemRow[]) => ActiveAttempt[]): LaunchRound | null {
    // One item, one process at a time: an item retried right after a cancel waits until its
    // cancelled attempt's process has exited (a SIGTERM-deaf one lives until its SIGKILL); that
    // exit dispatches again.
    const candidates = readDueItems(this.store, now, free);
    const due = this.attempts.ending.size === 0 ? candidates : candidates.filter((row) => !this.attempts.isEnding(row.id));
    this.waitingForExit = due.length < candidates.length;
    if (due.length === 0) return null;
    return { starts: this.store.batch(() => record(due)), committed: false };
  }

  /** An item was due but its cancelled attempt's process had not exited yet (see claim). */
  private waitingForExit = false;

  nextLook(now: number): number | null {
    const next = readNextDueAt(this.store, now);
    if (next === null) return null;
    // Due now but waiting for a process to exit: the exit dispatches, a timer would only spin.
    if (next <= now && this.waitingForExit) return null;
    // setTimeout overflows past ~24.8 days; re-arm in steps.
    return Math.min(Math.max(next - now, 0), 2 ** 31 - 1);
  }

  recordOutcome(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): void {
    this.attempts.finish(a, result, false, problems);
  }

  writeLog(log: EngineLog, action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    log.write(action, level, message, itemId, details);
  }

  tick(): void {}

  stats(lastPollAt: number | null): StatsOverview {
    return statsOverview(this.k.transitions.counters, lastPollAt, this.attempts.active.size);
  }

  /** One engine alone starts every item it holds: nothing to add. */
  itemDetail(detail: ItemDetail | undefined): ItemDetail | undefined {
    return detail;
  }

  status<T>(body: T): T {
    return body;
  }

  searchReady(): Promise<void> | undefined {
    return itemIndexReady(this.store);
  }

  storageHealth(ok: boolean, error: string | null): 'lost' | undefined {
    const { log, options } = this.k;
    if (!ok) {
      log('database_error', 'error', `cannot persist the database: ${error}. State is kept in memory; retrying every second`, null, {
        error,
        storage: options.storageDir,
      });
      return undefined;
    }
    log('database_recovered', 'info', 'storage is writable again; the full state was persisted', null, null);
    return options.onStorageRecovered && !options.onStorageRecovered() ? 'lost' : undefined;
  }
}
