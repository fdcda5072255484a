// The fleet store: the engine's state in a PostgreSQL database that several
// engines share. The store seam (backend.ts) is synchronous, as sql.js is; here each call is posted
// to a worker thread that owns the connections (pgWorker.ts) and the main thread blocks on
// Atomics.wait for the answer, at most CALL_TIMEOUT_MS. A round trip on loopback is a fraction of
// a millisecond, so the engine keeps its synchronous code; a database that is down answers at once
// (the worker knows it has no connection), and one that hangs costs at most the timeout.
//
// Failure model: a call that cannot reach the database throws StoreUnavailableError and sets
// lastError (/health: database "error"); a transaction (batch) that fails is rolled back as a whole.
// The engine treats each unit of work as retryable (engine.ts): a claim is dropped, an outcome is
// recorded once the database is back, a log entry written outside a transaction waits in memory.
// Nothing committed is lost: PostgreSQL's commit is durable before it answers.
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import { startWorker, workerCode } from '../launching/workerCode';
import type { ItemMatches, LogSearch, StoreBackend, StoreNote, StoreValue } from './backend';
import type { MutationKey } from './schema';
import { PG_FLEET_STEP, PG_FLEET_STEP_APPLIED, PG_MUTATIONS, PG_SCHEMA_V1, PG_SCHEMA_V2, PG_SCHEMA_V2_INSIGHT, PG_SCHEMA_V3_EXITS, PG_SCHEMA_VERSION, toPostgres, WITH_ENGINE_ID } from './pgSchema';
import type { PgAnswer, PgNotice, PgRequest, PgWorkerData } from './pgWorker';
import { redactStoreUrl } from '../../shared/storeUrl';
import { searchItemsInPostgres, searchLogsInPostgres } from './pgSearch';

/** The longest the main thread waits for one statement before calling the database unavailable. */
const CALL_TIMEOUT_MS = 5000;
/** How long the first connection may take at start before the engine gives up with an error. */
const CONNECT_TIMEOUT_MS = 15_000;

export class StoreUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * PostgreSQL aborted the transaction for a reason that is nobody's bug and passes by itself: a
 * deadlock between engines (40P01), a serialization failure (40001), a lock not granted in time
 * (55P03). The database answers, so /health stays as it is; the unit of work is retried exactly as
 * if the database had been briefly out of reach, which is why this is a StoreUnavailableError.
 */
export class StoreConflictError extends StoreUnavailableError {
  constructor(message: string) {
    super(message);
    this.name = 'StoreConflictError';
  }
}

/** The SQLSTATEs of transactions PostgreSQL aborts that succeed when tried again. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01', '55P03']);

export function isStoreUnavailable(err: unknown): boolean {
  return err instanceof StoreUnavailableError;
}

export { redactStoreUrl };

export interface PgStoreOptions {
  url: string;
  leaseMs: number;
  onHealthChange?: (ok: boolean, error: string | null) => void;
  /** Another engine's log entry was committed (LISTEN/NOTIFY): for /events. */
  onRemoteLog?: (id: number) => void;
  /** An item became claimable now, on any engine (LISTEN/NOTIFY): look for due items at once. */
  onItemDue?: () => void;
  /** This engine's workspace folders, recorded at join: it claims only items whose cwd is in one. */
  workspaces?: readonly string[];
}

export interface FleetCounters {
  launched: number;
  pending: number;
  failed: number;
  held: number;
  running: number;
  total_launches: number;
  total_failed: number;
}

export interface FleetEngineRow {
  engine_id: string;
  host: string;
  pid: number;
  state: string;
  started_at: number;
  last_heartbeat_at: number;
  lease_until: number;
  running: number;
  workspaces: string;
  now: number;
}

export class PgStore implements StoreBackend {
  readonly fleet = true;
  readonly engineId: string;
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag: Int32Array;
  private readonly heartbeatAt: Float64Array;
  private nextId = 0;
  private inBatch = false;
  private error: string | null = null;
  private lastOkAt: number | null = null;
  private closed = false;

  private constructor(private readonly options: PgStoreOptions) {
    this.engineId = `${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    const shared = new SharedArrayBuffer(16);
    this.flag = new Int32Array(shared, 0, 1);
    this.heartbeatAt = new Float64Array(shared, 8, 1);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const data: PgWorkerData = { url: options.url, port: port2, shared, engineId: this.engineId, leaseMs: options.leaseMs };
    // dist/pg-worker.js beside the bundle, or pgWorker.ts through tsx (unit tests).
    this.worker = startWorker(workerCode(__dirname, 'pg-worker.js', 'pgWorker.ts'), { workerData: data, transferList: [port2] });
    this.worker.unref();
    this.worker.on('message', (m: PgNotice) => this.onNotice(m));
  }

  /**
   * Connects (waiting up to 15 s for the first connection), migrates the schema under an advisory
   * lock (engines starting together do it once), and registers this engine with a fresh lease.
   */
  static async open(options: PgStoreOptions): Promise<{ store: PgStore; notes: StoreNote[] }> {
    const store = new PgStore(options);
    const deadline = Date.now() + CONNECT_TIMEOUT_MS;
    for (;;) {
      try {
        store.query('SELECT 1');
        break;
      } catch (err) {
        if (!isStoreUnavailable(err)) throw err;
        if (Date.now() > deadline) {
          await store.terminate();
          throw new Error(`cannot connect to the PostgreSQL store ${redactStoreUrl(options.url)}: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // Failing until the worker's first connection was no health change anyone saw.
    store.error = null;
    store.migrate();
    store.query(
      `INSERT INTO engines (engine_id, host, pid, state, started_at, last_heartbeat_at, lease_until, running, workspaces, records_exits)
       VALUES ($1, $2, $3, 'running', em_now(), em_now(), em_now() + $4, 0, $5, 1)`,
      [store.engineId, os.hostname(), process.pid, options.leaseMs, JSON.stringify(options.workspaces ?? [])],
    );
    store.heartbeatAt[0] = Date.now();
    store.lastOkAt = Date.now();
    return { store, notes: [] };
  }

  private migrate(): void {
    this.query('BEGIN');
    try {
      this.query('SELECT pg_advisory_xact_lock(7411017)');
      this.query('CREATE TABLE IF NOT EXISTS em_schema (version INTEGER NOT NULL)');
      const version = this.query<{ version: number }>('SELECT version FROM em_schema')[0]?.version ?? 0;
      if (version > PG_SCHEMA_VERSION) throw new Error(`the database was written by a newer Engine Monitor (schema ${version}, this one knows ${PG_SCHEMA_VERSION}): upgrade this engine`);
      if (version === 0) {
        this.query(PG_SCHEMA_V1);
        this.query('INSERT INTO em_schema (version) VALUES (1)');
      }
      if (version < 2) {
        this.query(PG_SCHEMA_V2);
        this.query(PG_SCHEMA_V2_INSIGHT);
        this.query('UPDATE em_schema SET version = 2');
      }
      if (version < 3) {
        this.query(PG_SCHEMA_V3_EXITS);
        this.query('UPDATE em_schema SET version = 3');
      }
      if (!this.query<{ applied: boolean }>(PG_FLEET_STEP_APPLIED)[0].applied) this.query(PG_FLEET_STEP);
      this.query('COMMIT');
    } catch (err) {
      this.query('ROLLBACK');
      throw err;
    }
  }

  // ---- the bridge ------------------------------------------------------------------------

  /** One statement, in PostgreSQL's dialect with `$n` parameters; throws when the database cannot answer. */
  query<T = Record<string, StoreValue>>(sql: string, params: unknown[] = [], rowMode?: 'array'): T[] {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    const id = ++this.nextId;
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage({ id, sql, params: params.map((p) => (p instanceof Uint8Array ? Buffer.from(p) : p)), rowMode } satisfies PgRequest);
    const deadline = performance.now() + CALL_TIMEOUT_MS;
    for (;;) {
      let m = receiveMessageOnPort(this.port);
      while (m) {
        const a = m.message as PgAnswer;
        if (a.id === id) return this.settle<T>(a, sql);
        m = receiveMessageOnPort(this.port); // an answer to a call that timed out: dropped
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        this.unavailable(`the database did not answer within ${CALL_TIMEOUT_MS} ms`);
      }
      Atomics.wait(this.flag, 0, 0, left);
      Atomics.store(this.flag, 0, 0);
    }
  }

  private settle<T>(a: PgAnswer, sql: string): T[] {
    if (a.ok) {
      this.lastOkAt = Date.now();
      return a.rows as T[];
    }
    if (a.connection) this.unavailable(a.error);
    if (a.code !== undefined && RETRYABLE_SQLSTATES.has(a.code)) throw new StoreConflictError(`PostgreSQL aborted the transaction (${a.code}): ${a.error}`);
    throw new Error(`PostgreSQL: ${a.error} (in: ${sql.trim().split('\n')[0].slice(0, 120)})`);
  }

  private unavailable(message: string): never {
    if (this.error === null) {
      this.error = message;
      this.options.onHealthChange?.(false, message);
    } else this.error = message;
    throw new StoreUnavailableError(message);
  }

  private onNotice(m: PgNotice): void {
    if (m.type === 'log') this.options.onRemoteLog?.(m.id);
    else if (m.type === 'due') this.options.onItemDue?.();
    else if (m.type === 'disconnected' && this.error === null) {
      this.error = `database connection lost: ${m.error}`;
      this.options.onHealthChange?.(false, this.error);
    }
  }

  /** Tells the heartbeat what /status.fleet shows of this engine. */
  reportEngine(state: string, running: number): void {
    this.worker.postMessage({ type: 'status', state, running });
  }

  /**
   * Whether this engine's lease is certainly still its own: renewed less than a lease ago, with a
   * margin for clocks. An engine that cannot renew stops claiming: its attempts may be taken over.
   */
  get leaseHeld(): boolean {
    return Date.now() - this.heartbeatAt[0] < this.options.leaseMs * 0.8;
  }

  // ---- StoreBackend ----------------------------------------------------------------------

  mutate(key: MutationKey, params: StoreValue[]): void {
    const sql = PG_MUTATIONS[key];
    if (sql === null) return;
    this.query(toPostgres(sql), WITH_ENGINE_ID.has(key) ? [...params, this.engineId] : params);
  }

  setMeta(key: string, value: string): void {
    this.mutate('meta_set', [key, value]);
  }

  /** Inside batch(): a failure there rolls back the whole unit of work. */
  get inTransaction(): boolean {
    return this.inBatch;
  }

  batch<T>(fn: () => T): T {
    if (this.inBatch) return fn();
    this.query('BEGIN');
    this.inBatch = true;
    try {
      const result = fn();
      this.inBatch = false;
      this.query('COMMIT');
      return result;
    } catch (err) {
      this.inBatch = false;
      try {
        this.query('ROLLBACK');
      } catch {
        // The connection is gone, and the transaction with it.
      }
      throw err;
    }
  }

  /** PostgreSQL keeps its full-text index (an expression index) itself. */
  indexLogs(): number {
    return 0;
  }

  all<T = Record<string, StoreValue>>(sql: string, params: StoreValue[] = []): T[] {
    return this.query<T>(toPostgres(sql), params);
  }

  rows(sql: string, params: StoreValue[] = []): StoreValue[][] {
    return this.query<StoreValue[]>(toPostgres(sql), params, 'array');
  }

  get<T = Record<string, StoreValue>>(sql: string, params: StoreValue[] = []): T | undefined {
    return this.all<T>(sql, params)[0];
  }

  getMeta(key: string): string | undefined {
    return this.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
  }

  /** Attempts and log entries say which engine of the fleet wrote them. */
  readonly recordsWriter = true;

  /**
   * Each entry ingested is three or four statements, each a blocking round trip to the server:
   * 100 of them in one transaction held a loaded engine's event loop (its API, its launches) for
   * seconds. Ten keep a transaction to tens of milliseconds, and the engine answers in between.
   */
  readonly ingestChunk = 10;

  searchItems(words: readonly string[], where: string[], params: StoreValue[]): ItemMatches {
    return searchItemsInPostgres(this, words, where, params);
  }

  /** SQL answers at once: nothing is built in this process. */
  searchItemsReady(): undefined {
    return undefined;
  }

  searchLogs(search: LogSearch): number[] {
    return searchLogsInPostgres(this, search);
  }

  /** A log entry (log_insert's parameters after the id), its id from the sequence in the same statement. */
  insertLog(row: StoreValue[]): number {
    return this.query<{ id: number }>(
      "INSERT INTO logs (id, ts, action, level, message, item_id, details, engine_id) VALUES (nextval('logs_id_seq'), $1, $2, $3, $4, $5, $6, $7) RETURNING id",
      [...row, this.engineId],
    )[0].id;
  }

  /** attempt_insert, its id from the sequence (unique and growing fleet-wide) in the same statement. */
  insertAttempt(itemId: string, attempt: number, startedAt: number): number {
    return this.query<{ id: number }>(
      "INSERT INTO attempts (id, item_id, attempt, started_at, outcome, engine_id) VALUES (nextval('attempts_id_seq'), $1, $2, $3, 'running', $4) RETURNING id",
      [itemId, attempt, startedAt, this.engineId],
    )[0].id;
  }

  get hasPending(): boolean {
    return false;
  }

  /** Every statement is committed when it returns; this checks the connection while it is failing. */
  commit(): boolean {
    if (this.error === null) return true;
    try {
      this.query('SELECT 1');
      this.error = null;
      this.options.onHealthChange?.(true, null);
      return true;
    } catch {
      return false;
    }
  }

  commitDurably(): Promise<boolean> {
    return Promise.resolve(this.commit());
  }

  get journalSynced(): boolean {
    return true;
  }

  get changedSinceSnapshot(): boolean {
    return false;
  }

  get journalSize(): { journalBytes: number; snapshotBytes: number } {
    return { journalBytes: 0, snapshotBytes: 0 };
  }

  snapshotInBackground(): boolean {
    return false;
  }

  abandonCheckpoint(): void {}

  get databasePath(): string {
    return redactStoreUrl(this.options.url);
  }

  get lastError(): string | null {
    return this.error;
  }

  get lastPersistTime(): number | null {
    return this.lastOkAt;
  }

  sizeBytes(): number {
    try {
      return this.query<{ n: number }>('SELECT pg_database_size(current_database()) AS n')[0].n;
    } catch {
      return 0;
    }
  }

  // ---- the fleet ---------------------------------------------------------------------------

  counters(): FleetCounters {
    // One row per connection's slot (pgSchema.ts): the sums are the fleet's counters.
    return this.query<FleetCounters>(
      'SELECT sum(launched) AS launched, sum(pending) AS pending, sum(failed) AS failed, sum(held) AS held, sum(running) AS running, sum(total_launches) AS total_launches, sum(total_failed) AS total_failed FROM counters',
    )[0];
  }

  engines(): FleetEngineRow[] {
    return this.query<FleetEngineRow>('SELECT *, em_now() AS now FROM engines ORDER BY started_at, engine_id');
  }

  /** Leaves the fleet: the row goes when nothing of ours runs, else its lease ends now so another engine takes over at once. */
  close(): void {
    if (this.closed) return;
    try {
      this.query(
        `UPDATE engines SET lease_until = em_now() - 1, state = 'stopped' WHERE engine_id = $1`,
        [this.engineId],
      );
      this.query(`DELETE FROM engines WHERE engine_id = $1 AND NOT EXISTS (SELECT 1 FROM attempts WHERE engine_id = $1 AND outcome = 'running')`, [this.engineId]);
    } catch {
      // Unreachable: the lease lapses on its own.
    }
    this.closed = true;
    this.port.postMessage({ close: true });
    const deadline = performance.now() + 2000;
    while (performance.now() < deadline && !receiveMessageOnPort(this.port)) Atomics.wait(this.flag, 0, 0, 50);
    void this.worker.terminate();
  }

  private async terminate(): Promise<void> {
    this.closed = true;
    await this.worker.terminate();
  }
}

