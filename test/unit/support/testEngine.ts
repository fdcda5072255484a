// A small, deterministic, in-memory MonitoredEngine for the HTTP server's tests.
//
// It is a *test engine*, not the real one: the server tests need an engine they can drive
// precisely (set counters, health, append log entries at known ids). It still implements LogQuery
// faithfully — filtering, ordering, keyset paging and hasMore — so the server's parameter handling
// and cursor paging are exercised for real. The real engine (src/core) has its own API tests
// against the same server (api.test.ts).
import type { ItemDetail, ItemOutcome, ItemSummary, LogEntry, StatsOverview, StatusResponse } from '../../../src/shared/api';
import { itemWords, wordsMatch } from '../../../src/shared/itemFilter';
import { searchWords } from '../../../src/shared/logFilter';
import { ENGINE_NAME, LOG_ACTIONS, LOG_LEVELS } from '../../../src/shared/api';
import type { AttemptOutput, EngineEvent, HealthSnapshot, ItemsPage, LogPage, LogQuery, MonitoredEngine } from '../../../src/core/kernel/monitoredEngine';

/** Mulberry32: a tiny seeded PRNG so generated data is the same on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BASE_TIME = Date.parse('2024-05-01T00:00:00.000Z');
const MESSAGES = [
  'Item build-{n} exited with code 3',
  'Launching build-{n} attempt 1',
  'Discovered item build-{n} in queue.json',
  'Retry scheduled for build-{n} in 2000 ms',
  'Engine started with concurrency 4',
  'Database persist failed: disk full',
  'Item deploy-{n} succeeded after 1520 ms',
];

/**
 * The first actions the engine had: the generated log stays the same when new actions come, so
 * tests that rely on what a seed produces keep their data.
 */
const GENERATED_ACTIONS = LOG_ACTIONS.slice(0, LOG_ACTIONS.indexOf('database_recovered') + 1);

export class TestEngine implements MonitoredEngine {
  readonly version = '0.1.0-test';
  private readonly listeners = new Set<(event: EngineEvent) => void>();
  private logs: LogEntry[] = [];
  private nextId = 1;
  overview: StatsOverview = { total: 3, launched: 1, pending: 1, failed: 1, totalLaunches: 5, totalFailed: 3, lastPollAt: '2024-05-01T10:00:00.000Z', held: 0, running: 0 };
  healthSnapshot: HealthSnapshot = { status: 'healthy', checks: { database: 'ok', engine: 'running' } };
  items: ItemSummary[] = [];
  /** Every query the server sent, so tests can check what the server asked for. */
  readonly queries: LogQuery[] = [];
  /** When set, the named method throws (to test the server's 500 path). */
  failOn: 'stats' | 'health' | 'status' | 'queryLogs' | undefined;
  /** Counts calls to health(), to check the server's polling of it. */
  healthCalls = 0;

  constructor() {
    for (let i = 0; i < 7; i++) {
      const outcome: ItemOutcome = (['launched', 'pending', 'failed'] as const)[i % 3];
      this.items.push({
        id: `item-${i}`,
        name: `Item ${i}`,
        outcome,
        phase: outcome === 'pending' ? (i % 2 ? 'backoff' : 'waiting') : 'done',
        attempts: i % 4,
        maxAttempts: 3,
        nextAttemptAt: outcome === 'pending' ? '2024-05-01T10:00:05.000Z' : null,
        source: '.engine/queue/items.json',
        updatedAt: '2024-05-01T10:00:00.000Z',
        lastError: outcome === 'failed' ? 'exit code 1' : null,
        state: outcome === 'pending' ? (i % 2 ? 'backoff' : 'waiting') : outcome,
      });
    }
  }

  get logCount(): number {
    return this.logs.length;
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Appends a log entry (ids increase by 1 from 1) and emits it, as the real engine does after storing it. */
  addLog(partial: Partial<Omit<LogEntry, 'id'>> = {}, emit = true): LogEntry {
    const id = this.nextId++;
    const entry: LogEntry = {
      id,
      timestamp: partial.timestamp ?? new Date(BASE_TIME + id * 1000).toISOString(),
      action: partial.action ?? 'item_discovered',
      level: partial.level ?? 'info',
      message: partial.message ?? `Entry ${id}`,
      itemId: partial.itemId === undefined ? null : partial.itemId,
      details: partial.details === undefined ? null : partial.details,
    };
    this.logs.push(entry);
    if (emit) this.emit({ type: 'log', entry });
    return entry;
  }

  /** Deterministic varied entries: actions, levels, items, messages and timestamps (some equal). */
  seedLogs(count: number, seed = 42): void {
    const random = seededRandom(seed);
    let time = BASE_TIME;
    for (let i = 0; i < count; i++) {
      time += Math.floor(random() * 3) * 500; // steps of 0, 500 or 1000 ms: equal timestamps occur
      const n = Math.floor(random() * 5);
      this.addLog(
        {
          timestamp: new Date(time).toISOString(),
          action: GENERATED_ACTIONS[Math.floor(random() * GENERATED_ACTIONS.length)],
          level: LOG_LEVELS[Math.floor(random() * LOG_LEVELS.length)],
          itemId: random() < 0.2 ? null : `build-${n}`,
          message: MESSAGES[Math.floor(random() * MESSAGES.length)].replace('{n}', String(n)),
          details: random() < 0.5 ? null : { n, note: 'line\nbreak "quoted"' },
        },
        false,
      );
    }
  }

  /** Changes counters and emits 'stats', as the engine does when a counter changes. */
  setStats(partial: Partial<StatsOverview>): void {
    this.overview = { ...this.overview, ...partial };
    this.emit({ type: 'stats' });
  }

  emit(event: EngineEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  stats(): StatsOverview {
    if (this.failOn === 'stats') throw new Error('test engine: stats failed');
    return { ...this.overview };
  }

  health(): HealthSnapshot {
    this.healthCalls++;
    if (this.failOn === 'health') throw new Error('test engine: health failed');
    return { status: this.healthSnapshot.status, checks: { ...this.healthSnapshot.checks } };
  }

  status(): Omit<StatusResponse, 'timestamp' | 'server'> {
    if (this.failOn === 'status') throw new Error('test engine: status failed');
    return {
      engine: {
        name: ENGINE_NAME,
        version: this.version,
        state: this.healthSnapshot.checks.engine,
        startedAt: '2024-05-01T09:00:00.000Z',
        uptimeMs: 3_600_000,
        pollIntervalMs: 2000,
        concurrency: 4,
        running: 1,
        polls: 1800,
      },
      scanner: {
        sources: [{ kind: 'queue-directory', location: '/ws/.engine/queue', lastScanAt: '2024-05-01T10:00:00.000Z', lastError: null, itemsDiscovered: 3, itemsKnown: 5 }],
        lastScanAt: '2024-05-01T10:00:00.000Z',
        lastScanDurationMs: 12,
        scans: 1800,
        itemsDiscovered: 3,
        itemsRejected: 1,
      },
      stats: this.stats(),
      lastLaunch: {
        itemId: 'item-1',
        name: 'Item 1',
        attempt: 2,
        startedAt: '2024-05-01T09:59:58.000Z',
        finishedAt: null,
        durationMs: null,
        outcome: 'running',
        exitCode: null,
        signal: null,
        error: null,
      },
      database: { path: '/ws/.engine/state/engine.sqlite', sizeBytes: 40960, lastPersistAt: '2024-05-01T09:59:59.000Z', lastError: null, recovery: null },
    };
  }

  queryLogs(query: LogQuery): LogPage {
    this.queries.push(query);
    if (this.failOn === 'queryLogs') throw new Error('test engine: queryLogs failed');
    const minRank = query.minLevel ? LOG_LEVELS.indexOf(query.minLevel) : 0;
    const matches = this.logs.filter(
      (e) =>
        (!query.actions || query.actions.includes(e.action)) &&
        LOG_LEVELS.indexOf(e.level) >= minRank &&
        (query.itemId === undefined || e.itemId === query.itemId) &&
        (query.since === undefined || e.timestamp >= query.since) &&
        (query.until === undefined || e.timestamp < query.until) &&
        (!query.words || matchesWords(e.message, query.words)) &&
        (query.afterId === undefined || (query.order === 'asc' ? e.id > query.afterId : e.id < query.afterId)),
    );
    matches.sort((a, b) => (query.order === 'asc' ? a.id - b.id : b.id - a.id));
    return { entries: matches.slice(0, query.limit).map((e) => ({ ...e })), hasMore: matches.length > query.limit };
  }

  /** Output of attempts, by `${itemId}/${attempt}`; other attempts of a known item are unknown. */
  readonly outputs = new Map<string, AttemptOutput>();

  attemptOutput(itemId: string, attempt: number): AttemptOutput {
    const output = this.outputs.get(`${itemId}/${attempt}`);
    if (output) return output;
    return this.items.some((i) => i.id === itemId) ? { found: 'no_attempt' } : { found: 'no_item' };
  }

  listItems(query: ItemsPage): { items: ItemSummary[]; total: number } {
    const { outcome, states, q } = query.filter ?? {};
    const wanted = q === undefined ? [] : searchWords(q);
    const matching = this.items.filter(
      (i) =>
        (!outcome || i.outcome === outcome) &&
        (!states?.length || states.includes(i.state)) &&
        wordsMatch(wanted, itemWords({ id: i.id, name: i.name, command: 'node', args: [] })),
    );
    return { items: matching.slice(query.offset, query.offset + query.limit), total: matching.length };
  }

  /** The item as GET /items/{id} reports it: its summary turned into a detail with one attempt per attempt made. */
  itemDetail(itemId: string): ItemDetail | undefined {
    const i = this.items.find((x) => x.id === itemId);
    if (!i) return undefined;
    return {
      item: {
        id: i.id,
        name: i.name,
        command: 'node',
        args: ['-e', '0'],
        shell: false,
        cwd: '/tmp',
        env: {},
        timeoutMs: 600_000,
        maxAttempts: i.maxAttempts,
        runAt: null,
        schedule: null,
        dependsOn: [],
        priority: 0,
        source: i.source,
      },
      outcome: i.outcome,
      state: i.state,
      error: i.outcome === 'failed' ? i.lastError : null,
      attempts: Array.from({ length: i.attempts }, (_, n) => ({
        attempt: n + 1,
        startedAt: i.updatedAt,
        finishedAt: i.updatedAt,
        durationMs: 0,
        outcome: n + 1 === i.attempts && i.outcome === 'launched' ? ('succeeded' as const) : ('failed' as const),
        exitCode: n + 1 === i.attempts && i.outcome === 'launched' ? 0 : 1,
        signal: null,
        error: null,
        outputBytes: null,
        problems: [],
        resources: null,
        firstOutputMs: null,
        slow: false,
      })),
      durations: { count: 0, medianMs: null, p90Ms: null },
    };
  }

  subscribe(listener: (event: EngineEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** This engine launches nothing: no attempt ever finishes. */
  onAttemptFinished(): () => void {
    return () => undefined;
  }
}

/** Every word must start a word of the message (white-space separated), case-insensitive. */
function matchesWords(message: string, words: string[]): boolean {
  const messageWords = message.toLowerCase().split(/\s+/);
  return words.every((w) => messageWords.some((m) => m.startsWith(w)));
}
