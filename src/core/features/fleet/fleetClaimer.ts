// How an engine of a fleet takes due items: from the PostgreSQL store every engine of the fleet
// shares. Due items are selected FOR UPDATE SKIP LOCKED and their attempts recorded in one
// transaction, committed before any process is spawned, so each attempt belongs to exactly one
// engine and a crash after the commit leaves it running under a lease another engine will see
// expire. An engine claims only items whose cwd is inside its own workspace folders (hosts of a
// fleet need not share paths): the filter is in the claim's SQL, so an item no engine here could
// start is never taken, and waits for one that can. An item that becomes due anywhere is announced
// through NOTIFY, so an idle engine claims it at once. Outcomes and log entries wait in memory
// while the database is unreachable.
import type { AttemptProblem, ItemDetail, LogAction, LogLevel, StatsOverview, StatusResponse } from '../../../shared/api';
import type { AttemptResult } from '../../launching/attemptProcess';
import type { ActiveAttempt, Attempts } from '../../kernel/attempts';
import type { Claimer, LaunchRound } from '../../kernel/claimer';
import type { KernelContext } from '../../kernel/context';
import type { EngineLog } from '../../kernel/engineLog';
import type { EngineOptions } from '../../kernel/engineOptions';
import type { ItemRow } from '../../reads/records';
import { isStoreUnavailable, PgStore } from '../../store/pgStore';
import { cwdInsideSql, NO_PROCESS_EXITING_SQL } from '../../store/pgSchema';
import { ExitingProcesses } from './exitingProcesses';
import { FleetWork } from './fleet';

/**
 * How often a fleet engine with free slots looks for items other engines made due, besides the
 * database's notification of each one. ENGINE_MONITOR_FLEET_LOOK_MS sets another interval: the
 * test of the notification makes it a minute, so that only a notification starts an item soon.
 */
const FLEET_DISPATCH_MS = ((ms) => (ms > 0 ? ms : 250))(Number(process.env.ENGINE_MONITOR_FLEET_LOOK_MS));

export class FleetClaimer implements Claimer {
  readonly shared = true;
  readonly insertLog: (row: (string | number | null)[]) => number;
  private readonly fleet: FleetWork;
  private readonly exiting: ExitingProcesses;
  private readonly workspaces: string;
  private readonly dueSql: string;

  constructor(
    private readonly pg: PgStore,
    readonly k: KernelContext,
    private readonly attempts: Attempts,
  ) {
    this.fleet = new FleetWork(pg, k.events, k.options.workspaceFolders);
    this.exiting = new ExitingProcesses(pg, k, attempts);
    this.insertLog = (row) => pg.insertLog(row);
    this.workspaces = JSON.stringify(k.options.workspaceFolders);
    // readDueItems' query, plus: only what this engine could start, and not an item whose
    // cancelled attempt's process this engine ($4: their ids) or another live one still has.
    this.dueSql = `SELECT * FROM items WHERE outcome = 'pending' AND held = 0 AND blocked = 0 AND running = 0 AND due_at <= $1 AND ${cwdInsideSql('$3')}
      AND items.id NOT IN (SELECT jsonb_array_elements_text($4::jsonb)) AND ${NO_PROCESS_EXITING_SQL}
      ORDER BY priority DESC, due_at, seq LIMIT $2 FOR UPDATE OF items SKIP LOCKED`;
  }

  /** Opens the fleet's store for an engine; `claimer` is the engine's once it is built (notifications may come first). */
  static async openStore(options: EngineOptions, onHealthChange: (ok: boolean, error: string | null) => void, claimer: () => FleetClaimer | undefined): Promise<PgStore> {
    const { store } = await PgStore.open({
      url: options.storeUrl!,
      leaseMs: options.leaseMs ?? 30_000,
      workspaces: options.workspaceFolders,
      onHealthChange,
      onRemoteLog: (id) => claimer()?.remoteLog(id),
      onItemDue: () => claimer()?.k.scheduleDispatch(),
    });
    return store;
  }

  loaded(): void {}

  /** Attempts of engines that stopped are taken over each tick, once their lease has expired. */
  recover(): void {}

  insertAttempt(itemId: string, attempt: number, startedAt: number): number {
    // The database numbers the attempt as it inserts it (one round trip).
    return this.pg.insertAttempt(itemId, attempt, startedAt);
  }

  /**
   * A claim the database could not commit is dropped as a whole: nothing was spawned. One item,
   * one process at a time, as on the local store: an item retried right after a cancel is not
   * claimed while its cancelled attempt's process is still exiting, here or on another live engine
   * of the fleet (a SIGTERM-deaf one lives until its SIGKILL); that exit dispatches again.
   */
  claim(free: number, now: number, record: (rows: ItemRow[]) => ActiveAttempt[]): LaunchRound | null {
    if (!this.pg.leaseHeld) return null;
    const active = this.attempts.active;
    const before = new Set(active.keys());
    const exiting = JSON.stringify([...this.attempts.ending.values()].map((a) => a.item.id));
    try {
      return { starts: this.k.store.batch(() => record(this.pg.query<ItemRow>(this.dueSql, [now, free, this.workspaces, exiting]))), committed: true };
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      for (const id of [...active.keys()]) if (!before.has(id)) active.delete(id);
      return null;
    }
  }

  /** Other engines' items become due too: look again soon rather than only at our own next due time. */
  nextLook(): number {
    return FLEET_DISPATCH_MS;
  }

  recordOutcome(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): void {
    try {
      if (this.exiting.endedAfterCancelElsewhere(a, result, problems)) return;
      this.attempts.finish(a, result, false, problems);
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      this.attempts.active.set(a.attemptId, a);
      this.fleet.defer(a, result, problems);
    }
  }

  writeLog(log: EngineLog, action: LogAction, level: LogLevel, message: string, itemId: string | null, details: Record<string, unknown> | null): void {
    try {
      log.write(action, level, message, itemId, details);
    } catch (err) {
      // Inside a transaction the whole unit of work is retried; alone, the entry waits in memory.
      if (!isStoreUnavailable(err) || this.pg.inTransaction) throw err;
      this.fleet.keepLog([action, level, message, itemId, details]);
    }
  }

  /**
   * Once a second: the heartbeat learns this engine's state; attempts of engines whose lease
   * expired are recorded interrupted and retried; outcomes and log entries that waited for the
   * database are recorded.
   */
  tick(): void {
    const fleet = this.fleet;
    this.pg.reportEngine(this.k.engineState(), this.attempts.active.size);
    if (this.pg.lastError !== null || this.k.isClosed()) return;
    try {
      for (const [a, result, problems] of fleet.takeDeferred<ActiveAttempt>()) this.recordOutcome(a, result, problems);
      for (const entry of fleet.takeUnwrittenLogs()) this.k.log(...entry);
      this.fleet.checkWorkspaces((message, details) => this.k.log('engine_started', 'warn', message, null, details));
      this.exiting.tick();
      const lost = this.k.store.batch(() => {
        const rows = fleet.claimLostAttempts();
        for (const r of rows) this.attempts.interrupted(r, `interrupted: engine ${r.engineId} lost its lease`);
        return rows.length;
      });
      if (lost > 0) this.k.scheduleDispatch();
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
    }
  }

  /** Another engine committed a log entry: /events listeners get it as if it were ours. */
  remoteLog(id: number): void {
    this.fleet.remoteLog(id);
  }

  /** GET /items/{id}: an item no engine of the fleet can start says so, and what it waits for. */
  itemDetail(detail: ItemDetail | undefined): ItemDetail | undefined {
    if (!detail || detail.item.cwd === null || !['waiting', 'scheduled', 'backoff'].includes(detail.state)) return detail;
    const why = this.fleet.whyWaiting(detail.item.cwd);
    return why === undefined ? detail : { ...detail, waitingFor: [why] };
  }

  stats(lastPollAt: number | null): StatsOverview {
    return this.fleet.stats(lastPollAt);
  }

  status<T extends Omit<StatusResponse, 'timestamp' | 'server'>>(body: T): T {
    return this.fleet.status(body);
  }

  /** The fleet's store is searched in SQL: no index to build. */
  searchReady(): undefined {
    return undefined;
  }

  storageHealth(ok: boolean, error: string | null): undefined {
    if (ok) {
      this.k.log('database_recovered', 'info', 'the PostgreSQL store answers again; launching resumes', null, null);
      this.tick();
      this.k.scheduleDispatch();
    } else {
      this.k.log('database_error', 'error', `the PostgreSQL store is unreachable: ${error}. Launches wait; reconnecting with backoff`, null, { error });
    }
    return undefined;
  }
}
