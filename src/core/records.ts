// The engine's reads of its items and attempts, and the one shape in which an attempt is reported
// as /status's lastLaunch. Writes stay with the engine, which keeps its counters in step with them.
import type { ItemOutcome, ItemState, ItemSummary, LaunchOutcome, LaunchRecord, StatsOverview } from '../shared/api';
import type { ItemDefinition } from './items';
import type { Store } from './store';

/** An `items` row as stored. */
export interface ItemRow {
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
  /** 1 while the user holds the item (section 8). */
  held: number;
}

/** Items by outcome and launches ever made: what /stats answers from, kept by the engine. */
export interface Counters {
  launched: number;
  pending: number;
  failed: number;
  totalLaunches: number;
  totalFailed: number;
  /** Pending items held by the user. */
  held: number;
}

/** /stats: the counters as they are, without counting a row. `running`: attempts running now. */
export function statsOverview(c: Counters, lastPollAt: number | null, running: number): StatsOverview {
  return {
    total: c.launched + c.pending + c.failed,
    launched: c.launched,
    pending: c.pending,
    failed: c.failed,
    totalLaunches: c.totalLaunches,
    totalFailed: c.totalFailed,
    lastPollAt: lastPollAt === null ? null : new Date(lastPollAt).toISOString(),
    held: c.held,
    running,
  };
}

/** What a starting engine takes over from the database. */
export interface StoredState {
  counters: Counters;
  lastPollAt: number | null;
  lastLogId: number;
  lastAttemptId: number;
  lastLaunch: LaunchRecord | null;
}

/** How an attempt ended; absent while it runs. Times in epoch milliseconds. */
export interface LaunchEnd {
  outcome: LaunchOutcome;
  finishedAt: number;
  /** The process's own run time, which starts after the attempt was recorded. */
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
}

/** An attempt as /status reports it: from its start (recorded at `startedAt`) and how it ended. */
export function launchRecord(item: { id: string; name: string }, attempt: number, startedAt: number, end: LaunchEnd | null): LaunchRecord {
  return {
    itemId: item.id,
    name: item.name,
    attempt,
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: end === null ? null : new Date(end.finishedAt).toISOString(),
    durationMs: end === null ? null : end.durationMs,
    outcome: end === null ? 'running' : end.outcome,
    exitCode: end === null ? null : end.exitCode,
    signal: end === null ? null : end.signal,
    error: end === null ? null : end.error,
  };
}

export function readStoredState(store: Store): StoredState {
  const counters: Counters = { launched: 0, pending: 0, failed: 0, totalLaunches: 0, totalFailed: 0, held: 0 };
  counters.held = store.get<{ n: number }>("SELECT COUNT(*) AS n FROM items WHERE outcome = 'pending' AND held = 1")?.n ?? 0;
  const counts = store.all<{ outcome: ItemOutcome; n: number }>('SELECT outcome, COUNT(*) AS n FROM items GROUP BY outcome');
  for (const { outcome, n } of counts) counters[outcome] = n;
  counters.totalLaunches = Number(store.getMeta('total_launches') ?? 0);
  counters.totalFailed = Number(store.getMeta('total_failed') ?? 0);
  const lastPoll = store.getMeta('last_poll_at');
  // Ids only grow, even when retention has pruned every entry (kept in meta at snapshot time).
  const maxLog = store.get<{ m: number | null }>('SELECT MAX(id) AS m FROM logs')?.m ?? 0;
  return {
    counters,
    lastPollAt: lastPoll === undefined ? null : Number(lastPoll),
    lastLogId: Math.max(maxLog, Number(store.getMeta('last_log_id') ?? 0)),
    lastAttemptId: store.get<{ m: number | null }>('SELECT MAX(id) AS m FROM attempts')?.m ?? 0,
    lastLaunch: readLastLaunch(store),
  };
}

function readLastLaunch(store: Store): LaunchRecord | null {
  const last = store.get<{
    item_id: string;
    attempt: number;
    started_at: number;
    finished_at: number | null;
    outcome: LaunchOutcome;
    exit_code: number | null;
    signal: string | null;
    error: string | null;
    name: string;
  }>('SELECT a.*, i.name FROM attempts a JOIN items i ON i.id = a.item_id ORDER BY a.id DESC LIMIT 1');
  if (!last) return null;
  // An attempt is finished (with an outcome) exactly when it has a finish time.
  const end: LaunchEnd | null =
    last.finished_at === null
      ? null
      : {
          outcome: last.outcome,
          finishedAt: last.finished_at,
          durationMs: last.finished_at - last.started_at,
          exitCode: last.exit_code,
          signal: last.signal,
          error: last.error,
        };
  return launchRecord({ id: last.item_id, name: last.name }, last.attempt, last.started_at, end);
}

/** Attempts recorded as running: at startup, those the last engine left behind when it died. */
export function readRunningAttempts(store: Store): { id: number; attempt: number; startedAt: number; item: ItemDefinition }[] {
  const rows = store.all<{ id: number; item_id: string; attempt: number; started_at: number; definition: string }>(
    "SELECT a.id, a.item_id, a.attempt, a.started_at, i.definition FROM attempts a JOIN items i ON i.id = a.item_id WHERE a.outcome = 'running' ORDER BY a.id",
  );
  return rows.map((r) => ({ id: r.id, attempt: r.attempt, startedAt: r.started_at, item: JSON.parse(r.definition) as ItemDefinition }));
}

export function readItem(store: Store, itemId: string): ItemRow | undefined {
  return store.get<ItemRow>('SELECT * FROM items WHERE id = ?', [itemId]);
}

export function readFailedItemIds(store: Store): string[] {
  return store.all<{ id: string }>("SELECT id FROM items WHERE outcome = 'failed' ORDER BY seq").map((r) => r.id);
}

/** Pending items due by `now`, the longest-waiting first, at most `limit`. */
export function readDueItems(store: Store, now: number, limit: number): ItemRow[] {
  return store.all<ItemRow>("SELECT * FROM items WHERE outcome = 'pending' AND due_at <= ? ORDER BY due_at, seq LIMIT ?", [now, limit]);
}

/** When the next pending item not yet due becomes due; null when none is waiting for a time. */
export function readNextDueAt(store: Store, now: number): number | null {
  return store.get<{ t: number | null }>("SELECT MIN(due_at) AS t FROM items WHERE outcome = 'pending' AND due_at > ?", [now])?.t ?? null;
}

/** A page of items in discovery order, as /items lists them. */
export function readItemSummaries(store: Store, filter: { outcome?: ItemOutcome; limit: number; offset: number }): ItemSummary[] {
  const rows = filter.outcome
    ? store.all<ItemRow>('SELECT * FROM items WHERE outcome = ? ORDER BY seq LIMIT ? OFFSET ?', [filter.outcome, filter.limit, filter.offset])
    : store.all<ItemRow>('SELECT * FROM items ORDER BY seq LIMIT ? OFFSET ?', [filter.limit, filter.offset]);
  const now = Date.now();
  return rows.map((r) => toSummary(r, now));
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
    state: itemState(r, now),
  };
}

/** An item's state (contract section 8), from its row. */
export function itemState(r: ItemRow, now: number): ItemState {
  if (r.outcome !== 'pending') return r.outcome;
  if (r.running) return 'running';
  if (r.held) return 'held';
  if (r.due_at !== null && r.due_at > now) return r.attempts > 0 ? 'backoff' : 'scheduled';
  return 'waiting';
}
