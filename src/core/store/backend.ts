// What the engine needs from its store, apart from how the store keeps its data: the interface a
// store for another database would implement. It is what the engine calls today, no more. Writes
// are the named mutations of schema.ts (a name and its parameters), which a backend maps to its own
// statements; reads are SQL text in the dialect of the engine's queries (SQLite's), which another
// backend would have to accept or translate.
import type { MutationKey } from './schema';

/** A value in a row or a statement's parameters. */
export type StoreValue = number | string | Uint8Array | null;

/** Something the store did on its own that the engine should log: a recovery, a fallback. */
export interface StoreNote {
  level: 'info' | 'warn' | 'error';
  action: 'database_recovered' | 'database_error';
  message: string;
  details?: Record<string, unknown>;
}

/** The items a word search found, in discovery (seq) order. */
export interface ItemMatches {
  count: number;
  /** The seqs of matches `from` to `to` (excluded). Read before the store's next search: they may be in a scratch array it reuses. */
  seqs(from: number, to: number): number[];
}

/** A word search of the log, with the other filters of its page. */
export interface LogSearch {
  /** The other filters' conditions on `logs` (SQLite SQL, `?` parameters) and their parameters. */
  where: string[];
  params: StoreValue[];
  /** Lower-case words (searchWords, none starting another): each must start a word of the message. */
  words: string[];
  desc: boolean;
  /** Keyset cursor: the ids after this one in the page's order. */
  afterId?: number;
  /** Ids wanted: the page size plus one, which says whether more entries match. */
  want: number;
}

export interface StoreBackend {
  // ---- writes: applied at once, durable once committed ----
  mutate(key: MutationKey, params: StoreValue[]): void;
  setMeta(key: string, value: string): void;
  /** Runs `fn` as one transaction. */
  batch<T>(fn: () => T): T;
  /**
   * Brings the log's full-text index up to date, at most `max` entries at a time; returns how many
   * it added (0 when it is up to date, or when the database keeps its index itself).
   */
  indexLogs(max?: number): number;

  // ---- reads ----
  /** Rows as objects. */
  all<T = Record<string, StoreValue>>(sql: string, params?: StoreValue[]): T[];
  /** Rows as arrays in column order: for large result pages. */
  rows(sql: string, params?: StoreValue[]): StoreValue[][];
  get<T = Record<string, StoreValue>>(sql: string, params?: StoreValue[]): T | undefined;
  getMeta(key: string): string | undefined;

  // ---- reads each store answers in its own way ----
  /**
   * Whether attempts and log entries record which engine wrote them (an `engine_id` column): true
   * for a store several engines share, whose readers show it.
   */
  readonly recordsWriter: boolean;
  /**
   * At most how many queue entries one transaction ingests (the event loop turns between them);
   * undefined: the ingester's own size. A store whose every statement is a round trip fewer.
   */
  readonly ingestChunk?: number;
  /**
   * /items?q=: the items each of whose `words` starts a word of the item's search text
   * (wordsStartWords over itemSearchText), among those the SQL conditions `where` on `items`
   * select; the count is exact.
   */
  searchItems(words: readonly string[], where: string[], params: StoreValue[]): ItemMatches;
  /**
   * undefined when searchItems can answer now without holding the event loop long; else a promise
   * of when it can (sql.js builds its word index in steps; PostgreSQL needs nothing built).
   */
  searchItemsReady(): Promise<void> | undefined;
  /** /logs?q=: the ids of the entries the search selects, in its order, at most `want` of them. */
  searchLogs(search: LogSearch): number[];

  // ---- durability ----
  /** True when mutations are waiting to be committed. */
  readonly hasPending: boolean;
  /**
   * Commits pending mutations; false (with lastError set) while storage fails, the state then
   * staying in memory. `background` may finish making them durable after it returns.
   */
  commit(mode?: 'sync' | 'background'): boolean;
  /** Commits pending mutations and resolves once they are durable: the engine spawns nothing before. */
  commitDurably(): Promise<boolean>;
  /** Whether everything committed so far is durable. */
  readonly journalSynced: boolean;

  // ---- snapshots: the engine decides when, the store how ----
  /** True when something changed since the last snapshot. */
  readonly changedSinceSnapshot: boolean;
  /** How much a snapshot would fold in, against the size of the one it would rewrite. */
  readonly journalSize: { journalBytes: number; snapshotBytes: number };
  /** Starts a snapshot without blocking the engine; false when none was started. */
  snapshotInBackground(): boolean;
  /** Gives up a snapshot in flight: the engine is shutting down, and close() persists everything. */
  abandonCheckpoint(): void;

  // ---- status and lifetime ----
  readonly databasePath: string;
  readonly lastError: string | null;
  readonly lastPersistTime: number | null;
  /** Bytes the store takes on disk. */
  sizeBytes(): number;
  /** Persists what is pending and releases the database. */
  close(): void;
}
