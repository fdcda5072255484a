// The engine's reads of its items and attempts, and the one shape in which an attempt is reported
// as /status's lastLaunch. Writes stay with the engine, which keeps its counters in step with them.
import type { AttemptDetail, AttemptProblem, AttemptResources, ItemDetail, ItemOutcome, ItemState, ItemSummary, LaunchOutcome, LaunchRecord, ServiceSummary, StatsOverview } from '../../shared/api';
import { searchWords } from '../../shared/logFilter';
import { itemFromRow, type ItemDefinition } from '../intake/items';
import type { ItemsPage } from '../kernel/monitoredEngine';
import type { StoreBackend, StoreValue } from '../store/backend';
import { whereClause } from '../store/reads';
import { DURATIONS_WINDOW, summarizeDurations } from '../features/insight/durations';

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
  run_at: number | null;
  due_at: number | null;
  /** 0, or an attempt under way: RUNNING, or for a service STARTING then READY. */
  running: number;
  last_error: string | null;
  updated_at: number;
  /** 1 while the user holds the item: it is not launched until released. */
  held: number;
  /** −100…100: dispatch takes the highest first. */
  priority: number;
  /** 1 while a dependency has not launched (src/core/dependencies.ts keeps it). */
  blocked: number;
}

/** An items row's `running`: an attempt under way; a service's attempt is starting, then ready. */
export const RUNNING = 1;
export const STARTING = 2;
export const READY = 3;

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

export function readStoredState(store: StoreBackend): StoredState {
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

/** An `attempts` row as stored (the columns the reads use). */
interface AttemptRow {
  item_id: string;
  attempt: number;
  started_at: number;
  finished_at: number | null;
  outcome: LaunchOutcome;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  output_bytes: number | null;
  /** The problem matcher's problems as JSON; null when the item has no matcher (or before v4). */
  problems: string | null;
  /** A service's attempt: when it became ready. */
  ready_at: number | null;
  /** What it cost (v6): sampled_every_ms null means not measured. */
  cpu_ms: number | null;
  peak_rss_bytes: number | null;
  sampled_every_ms: number | null;
  first_output_ms: number | null;
  slow: number;
}

function readLastLaunch(store: StoreBackend): LaunchRecord | null {
  const last = store.get<AttemptRow & { name: string }>('SELECT a.*, i.name FROM attempts a JOIN items i ON i.id = a.item_id ORDER BY a.id DESC LIMIT 1');
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
export function readRunningAttempts(store: StoreBackend): { id: number; attempt: number; startedAt: number; item: ItemDefinition }[] {
  const rows = store.all<{ id: number; item_id: string; attempt: number; started_at: number; definition: string; name: string; max_attempts: number; run_at: number | null }>(
    "SELECT a.id, a.item_id, a.attempt, a.started_at, i.definition, i.name, i.max_attempts, i.run_at FROM attempts a JOIN items i ON i.id = a.item_id WHERE a.outcome = 'running' ORDER BY a.id",
  );
  return rows.map((r) => ({ id: r.id, attempt: r.attempt, startedAt: r.started_at, item: itemFromRow(r.definition, { ...r, id: r.item_id }) }));
}

export function readItem(store: StoreBackend, itemId: string): ItemRow | undefined {
  return store.get<ItemRow>('SELECT * FROM items WHERE id = ?', [itemId]);
}

export function readFailedItemIds(store: StoreBackend): string[] {
  return store.all<{ id: string }>("SELECT id FROM items WHERE outcome = 'failed' ORDER BY seq").map((r) => r.id);
}

/**
 * Pending items due by `now`, neither held, blocked nor running: the highest priority
 * first, then the longest due, then discovery order, at most `limit`. Items without runAt
 * are due from discovery (due_at 0), so among them this is discovery order, and they go before
 * items whose runAt or retry time has come, as before priorities existed. The conditions are the
 * partial index items_ready's, which holds exactly the dispatchable rows in this order: dispatch
 * reads the first `limit` due ones without sorting, and items not due yet sit at the end of their
 * priority, so they are passed over only when a higher priority has none due.
 */
export function readDueItems(store: StoreBackend, now: number, limit: number, claim = false): ItemRow[] {
  // A fleet engine claims them: the rows another engine is claiming are skipped, not waited for.
  return store.all<ItemRow>(
    "SELECT * FROM items INDEXED BY items_ready WHERE outcome = 'pending' AND held = 0 AND blocked = 0 AND running = 0 AND due_at <= ? ORDER BY priority DESC, due_at, seq LIMIT ?" +
      (claim ? ' FOR UPDATE SKIP LOCKED' : ''),
    [now, limit],
  );
}

/** When the next pending item not yet due (and not held) becomes due; null when none is waiting for a time. */
export function readNextDueAt(store: StoreBackend, now: number): number | null {
  return store.get<{ t: number | null }>("SELECT MIN(due_at) AS t FROM items WHERE outcome = 'pending' AND due_at > ? AND held = 0 AND blocked = 0", [now])?.t ?? null;
}

/** Whether the user holds the item (read when it reaches an outcome, which ends the hold). */
export function readHeld(store: StoreBackend, itemId: string): boolean {
  return (store.get<{ held: number }>('SELECT held FROM items WHERE id = ?', [itemId])?.held ?? 0) === 1;
}

/**
 * An items row's state in SQL, `?` standing for now: itemState() below, the same rule in
 * TypeScript.
 */
const STATE_SQL = `CASE WHEN outcome <> 'pending' THEN outcome WHEN running = 1 THEN 'running' WHEN running = 2 THEN 'starting' WHEN running = 3 THEN 'ready' WHEN held = 1 THEN 'held' WHEN blocked = 1 THEN 'blocked'
  WHEN due_at > ? THEN (CASE WHEN attempts > 0 THEN 'backoff' ELSE 'scheduled' END) ELSE 'waiting' END`;

/**
 * `order=launch`: the order the engine will launch pending items in, as far as it can be known now.
 * Those due now first, in readDueItems' order (the dispatch order: priority, then the longest due,
 * then discovery); then the others by when they become due, a higher priority first among those
 * due at the same time. `?` stands for now, three times.
 */
const LAUNCH_ORDER =
  'CASE WHEN due_at <= ? THEN 0 ELSE 1 END, CASE WHEN due_at <= ? THEN -priority ELSE due_at END, CASE WHEN due_at <= ? THEN due_at ELSE -priority END, seq';
/** `order=recent`: the latest change first; a launched item's is the end of its last attempt. */
const RECENT_ORDER = 'updated_at DESC, seq DESC';

/**
 * A page of the items `query` selects, in discovery order (or `query.order`), as /items lists them. `total` is null
 * when the filter is by outcome at most: the engine's counters answer that without a scan. The
 * SQL has one text per combination of filters given (eight in all), so the store's cache of
 * prepared statements stays small whatever clients ask.
 */
export function readItemPage(store: StoreBackend, query: ItemsPage, now: number): { items: ItemSummary[]; total: number | null } {
  const { filter = {}, limit, offset } = query;
  const where: string[] = [];
  const params: StoreValue[] = [];
  if (filter.outcome) {
    where.push('outcome = ?');
    params.push(filter.outcome);
  }
  if (filter.states?.length) {
    where.push(`instr(?, ',' || (${STATE_SQL}) || ',') > 0`);
    params.push(`,${filter.states.join(',')},`, now);
  }
  if (filter.source !== undefined) {
    where.push('source = ?');
    params.push(filter.source);
  }
  const wanted = filter.q === undefined ? [] : searchWords(filter.q);
  if (wanted.length > 0) {
    // Each store matches the words its own way (sql.js from an index kept in memory, PostgreSQL,
    // where other engines add items, in SQL) and applies the other filters; the total is exact.
    const found = store.searchItems(wanted, where, params);
    const total = found.count;
    if (query.order !== undefined && query.order !== 'discovery') {
      // Another order than the index's: the page is taken from every match, sorted in SQL.
      const all = found.seqs(0, total);
      const sql = `SELECT ${SUMMARY_COLUMNS} FROM items WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY ${query.order === 'launch' ? LAUNCH_ORDER : RECENT_ORDER} LIMIT ? OFFSET ?`;
      const rows = all.length === 0 ? [] : readSummaryRows(store, sql, [JSON.stringify(all), ...(query.order === 'launch' ? [now, now, now] : []), limit, offset]);
      return { items: withLastFinish(store, rows.map((r) => toSummary(store, r, now))), total };
    }
    // Only the page's seqs: a word in every item is 100,000 matches.
    const page = found.seqs(offset, offset + limit);
    const rows = page.length === 0 ? [] : readSummaryRows(store, `SELECT ${SUMMARY_COLUMNS} FROM items WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq`, [JSON.stringify(page)]);
    return { items: withLastFinish(store, rows.map((r) => toSummary(store, r, now))), total };
  }
  const order = query.order === 'launch' ? LAUNCH_ORDER : query.order === 'recent' ? RECENT_ORDER : 'seq';
  const orderParams = query.order === 'launch' ? [now, now, now] : [];
  const rows = readSummaryRows(store, `SELECT ${SUMMARY_COLUMNS} FROM items${whereClause(where)} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, ...orderParams, limit, offset]);
  const counted = filter.states?.length || filter.source !== undefined;
  const total = counted ? (store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM items${whereClause(where)}`, params)?.n ?? 0) : null;
  return { items: withLastFinish(store, rows.map((r) => toSummary(store, r, now))), total };
}

/**
 * Each summary's `lastFinishedAt` (the CodeLens's "3 min ago") and what that attempt cost (the
 * Items view's tooltip): one read for the whole page, by the attempts index.
 */
function withLastFinish(store: StoreBackend, items: ItemSummary[]): ItemSummary[] {
  if (items.length === 0) return items;
  const finished = new Map<string, { at: number; resources: AttemptResources | null }>();
  const ids = JSON.stringify(items.map((i) => i.id));
  const sql = `SELECT item_id, finished_at, cpu_ms, peak_rss_bytes, sampled_every_ms FROM attempts WHERE id IN
    (SELECT MAX(id) FROM attempts WHERE item_id IN (SELECT value FROM json_each(?)) AND finished_at IS NOT NULL GROUP BY item_id)`;
  for (const [id, at, cpu, peak, every] of store.rows(sql, [ids])) {
    if (at === null) continue;
    const resources = every === null ? null : { cpuMs: nullableNumber(cpu as number | null), peakRssBytes: nullableNumber(peak as number | null), sampledEveryMs: Number(every) };
    finished.set(id as string, { at: Number(at), resources });
  }
  for (const item of items) {
    const last = finished.get(item.id);
    item.lastFinishedAt = last === undefined ? null : new Date(last.at).toISOString();
    item.lastResources = last?.resources ?? null;
  }
  return items;
}

/** GET /items/{id}: the definition with its defaults, the state, and every attempt. */
export function readItemDetail(store: StoreBackend, itemId: string, now: number): ItemDetail | undefined {
  const row = readItem(store, itemId);
  if (!row) return undefined;
  const def = itemFromRow(row.definition, row);
  // A store engines share also says which engine ran each attempt.
  const attempts = store.all<Omit<AttemptRow, 'item_id'> & { engine_id?: string | null }>(
    `SELECT attempt, started_at, finished_at, outcome, exit_code, signal, error, output_bytes, problems, ready_at,
     cpu_ms, peak_rss_bytes, sampled_every_ms, first_output_ms, slow${store.recordsWriter ? ', engine_id' : ''} FROM attempts WHERE item_id = ? ORDER BY id`,
    [itemId],
  );
  const finished = attempts.filter((a) => a.finished_at !== null).slice(-DURATIONS_WINDOW);
  return {
    item: {
      id: def.id,
      name: def.name,
      command: def.command,
      args: def.args,
      shell: def.shell,
      cwd: def.cwd,
      env: def.env,
      timeoutMs: def.timeoutMs,
      maxAttempts: def.maxAttempts,
      runAt: def.runAt === null ? null : new Date(def.runAt).toISOString(),
      schedule: def.schedule ?? null,
      dependsOn: def.dependsOn ?? [],
      priority: def.priority ?? 0,
      ...(def.problemMatcher !== undefined ? { problemMatcher: def.problemMatcher } : {}),
      ...(def.service ? { service: true, ready: def.service.ready ?? null, readyTimeoutMs: def.service.readyTimeoutMs, restart: def.service.restart } : {}),
      source: row.source,
    },
    outcome: row.outcome,
    state: itemState(row, now),
    error: row.outcome === 'failed' ? row.last_error : null,
    ...(itemState(row, now) === 'blocked' ? { waitingFor: readWaitingFor(store, row.id) } : {}),
    attempts: attempts.map(
      (a): AttemptDetail => ({
        attempt: a.attempt,
        startedAt: new Date(a.started_at).toISOString(),
        finishedAt: a.finished_at === null ? null : new Date(a.finished_at).toISOString(),
        durationMs: a.finished_at === null ? null : Math.max(0, a.finished_at - a.started_at),
        outcome: a.outcome,
        exitCode: a.exit_code,
        signal: a.signal,
        error: a.error,
        outputBytes: a.output_bytes,
        problems: a.problems === null ? [] : (JSON.parse(a.problems) as AttemptProblem[]),
        resources:
          a.sampled_every_ms === null ? null : { cpuMs: nullableNumber(a.cpu_ms), peakRssBytes: nullableNumber(a.peak_rss_bytes), sampledEveryMs: Number(a.sampled_every_ms) },
        firstOutputMs: nullableNumber(a.first_output_ms),
        slow: Number(a.slow) === 1,
        ...(def.service ? { readyAt: a.ready_at === null ? null : new Date(a.ready_at).toISOString() } : {}),
        ...(a.engine_id !== undefined ? { engineId: a.engine_id } : {}),
      }),
    ),
    durations: summarizeDurations(finished.map((a) => Math.max(0, Number(a.finished_at) - Number(a.started_at)))),
  };
}

/** PostgreSQL's BIGINT columns arrive as strings: numbers, null kept. */
function nullableNumber(v: number | string | null): number | null {
  return v === null ? null : Number(v);
}

/** The ids a blocked item still waits for (not launched, or no item has them), in dependsOn order. */
export function readWaitingFor(store: StoreBackend, itemId: string): string[] {
  return store
    .all<{ id: string }>(
      // A ready service (running 3) lets its dependents start.
      "SELECT d.depends_on AS id FROM dependencies d LEFT JOIN items i ON i.id = d.depends_on WHERE d.item_id = ? AND (i.outcome IS NULL OR (i.outcome <> 'launched' AND NOT (i.outcome = 'pending' AND i.running = 3))) ORDER BY d.rowid",
      [itemId],
    )
    .map((d) => d.id);
}

/** What an item's summary (and its state) is made of: a page reads these columns, not the definition. */
type SummaryRow = Pick<ItemRow, 'id' | 'name' | 'source' | 'outcome' | 'attempts' | 'max_attempts' | 'due_at' | 'running' | 'last_error' | 'updated_at' | 'held' | 'blocked' | 'priority'> & {
  /** 1 for a service. */
  service: number;
};
const SUMMARY_COLUMNS = "id, name, source, outcome, attempts, max_attempts, due_at, running, last_error, updated_at, held, blocked, CASE WHEN json_extract(definition, '$.service') IS NULL THEN 0 ELSE 1 END, priority";

/**
 * A page's rows as arrays (Store.rows), without the definitions: `SELECT *` + getAsObject (every
 * column's name read again on every row, each definition copied out of sql.js) was about half of
 * a 100-item /items?q= page at 100,000 items (docs/PERFORMANCE.md).
 */
function readSummaryRows(store: StoreBackend, sql: string, params: StoreValue[]): SummaryRow[] {
  return store.rows(sql, params).map(([id, name, source, outcome, attempts, max_attempts, due_at, running, last_error, updated_at, held, blocked, service, priority]) => ({
    id: id as string,
    name: name as string,
    source: source as string,
    outcome: outcome as ItemOutcome,
    attempts: attempts as number,
    max_attempts: max_attempts as number,
    due_at: due_at as number | null,
    running: running as number,
    last_error: last_error as string | null,
    updated_at: updated_at as number,
    held: held as number,
    blocked: blocked as number,
    service: Number(service),
    priority: Number(priority),
  }));
}

function toSummary(store: StoreBackend, r: SummaryRow, now: number): ItemSummary {
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
    priority: r.priority,
    state: itemState(r, now),
    // Why it waits, for the Items view and the dashboard: one indexed read per blocked item on the page.
    ...(r.blocked === 1 && r.outcome === 'pending' && !r.held && !r.running ? { waitingFor: readWaitingFor(store, r.id) } : {}),
    ...(r.service ? { service: readServiceSummary(store, r) } : {}),
  };
}

/** A service's readiness and restarts: the ready time of its running attempt (one indexed read, only while ready). */
export function readServiceSummary(store: StoreBackend, r: Pick<ItemRow, 'id' | 'running' | 'attempts'>): ServiceSummary {
  const readyAt = r.running === READY ? (store.get<{ t: number | null }>("SELECT MAX(ready_at) AS t FROM attempts WHERE item_id = ? AND outcome = 'running'", [r.id])?.t ?? null) : null;
  // Its attempts count from its start (by the engine or the user's Retry): each after the first was a restart.
  return { readyAt: readyAt === null ? null : new Date(readyAt).toISOString(), restarts: Math.max(0, r.attempts - 1) };
}

/** An item's state, as /items and /items/{id} report it, from its row. */
export function itemState(r: Pick<ItemRow, 'outcome' | 'running' | 'held' | 'blocked' | 'due_at' | 'attempts'>, now: number): ItemState {
  if (r.outcome !== 'pending') return r.outcome;
  if (r.running === STARTING) return 'starting';
  if (r.running === READY) return 'ready';
  if (r.running) return 'running';
  if (r.held) return 'held';
  if (r.blocked) return 'blocked';
  if (r.due_at !== null && r.due_at > now) return r.attempts > 0 ? 'backoff' : 'scheduled';
  return 'waiting';
}
