// The dashboard's reads, answered over the engine's public HTTP API. No `vscode` here: these are
// plain functions of an EngineConnection-like reader, so they can be unit-tested in Node.
import type { HealthResponse, LogEntry, StatusResponse } from '../../shared/api';
import { healthStatus } from '../../shared/health';
import type { LaunchTimeline, LogFilter, LogPage, LogPageToken, Overview } from '../../shared/webviewProtocol';

/** What the queries need of EngineConnection; `getWithLink` is optional (see below). */
export interface DashboardReader {
  get<T>(pathAndQuery: string): Promise<T>;
  /**
   * Like `get`, plus the `rel="next"` target of the response's `Link` header. Optional: when the
   * connection does not offer it, pages are read by time (`until`/`since`) instead of the API's
   * opaque cursor.
   */
  getWithLink?<T>(pathAndQuery: string): Promise<{ body: T; next: string | undefined }>;
}

export const MAX_LOG_LIMIT = 1000;
/** Actions that count as a launch attempt started, and as one failed, in the chart. */
export const TIMELINE_STARTED = ['launch_started'] as const;
export const TIMELINE_FAILED = ['launch_failed', 'launch_interrupted'] as const;
/** A safety net against a runaway loop on a very busy engine: 50 000 entries. */
const MAX_TIMELINE_PAGES = 50;

export async function readOverview(reader: DashboardReader): Promise<Overview> {
  const [status, health] = await Promise.allSettled([
    reader.get<StatusResponse>('/status'),
    reader.get<HealthResponse>('/health'),
  ]);
  if (status.status === 'rejected') throw status.reason;
  // /health answers 503 when unhealthy, and a reader may reject non-2xx responses; /status holds
  // the same facts, so the checks are derived from it then.
  return {
    status: status.value,
    health: health.status === 'fulfilled' ? health.value : healthFromStatus(status.value),
  };
}

/** Health by the engine's own rule, from the facts /status reports. */
export function healthFromStatus(status: StatusResponse): HealthResponse {
  const database = status.database.lastError ? 'error' : 'ok';
  const engine = status.engine.state;
  return {
    status: healthStatus({ database, engine }),
    engine: status.engine.name,
    version: status.engine.version,
    timestamp: status.timestamp,
    checks: { database, engine },
  };
}

/** `/logs` path and query for a filter (newest first). */
export function logsQuery(filter: LogFilter, limit: number, extra: Record<string, string> = {}): string {
  const p = new URLSearchParams();
  if (filter.actions.length) p.set('action', filter.actions.join(','));
  if (filter.level) p.set('level', filter.level);
  const q = filter.q.trim();
  if (q) p.set('q', q);
  p.set('limit', String(Math.min(Math.max(1, Math.floor(limit)), MAX_LOG_LIMIT)));
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  return `/logs?${p.toString()}`;
}

/** The path and query of a `Link` target, which may be absolute or relative. */
export function toPathAndQuery(next: string): string {
  const u = new URL(next, 'http://127.0.0.1');
  return u.pathname + u.search;
}

export async function readLogPage(
  reader: DashboardReader,
  filter: LogFilter,
  limit: number,
  page?: LogPageToken,
): Promise<LogPage> {
  if (reader.getWithLink && (!page || page.kind === 'link')) {
    const path = page ? page.pathAndQuery : logsQuery(filter, limit);
    const { body, next } = await reader.getWithLink<LogEntry[]>(path);
    return { entries: body, next: next ? { kind: 'link', pathAndQuery: toPathAndQuery(next) } : undefined };
  }
  if (page?.kind === 'link') {
    // A link token from a reader that had getWithLink; read it plainly, paging then goes on by time.
    return byTime(await reader.get<LogEntry[]>(page.pathAndQuery), limit);
  }
  if (!page) return byTime(await reader.get<LogEntry[]>(logsQuery(filter, limit)), limit);

  // `until` is exclusive and several entries can share a millisecond, so ask up to and including
  // the last entry's millisecond and drop what was already shown (ids only grow).
  const until = new Date(Date.parse(page.timestamp) + 1).toISOString();
  let ask = limit;
  for (;;) {
    const body = await reader.get<LogEntry[]>(logsQuery(filter, ask, { until }));
    const fresh = body.filter((e) => e.id < page.id);
    // All of a full page sat in the boundary millisecond: ask for more at once.
    if (fresh.length === 0 && body.length === ask && ask < MAX_LOG_LIMIT) {
      ask = MAX_LOG_LIMIT;
      continue;
    }
    return byTime(fresh, limit, body.length === ask);
  }
}

function byTime(entries: LogEntry[], limit: number, full = entries.length >= limit): LogPage {
  const last = entries[entries.length - 1];
  return { entries, next: full && last ? { kind: 'before', id: last.id, timestamp: last.timestamp } : undefined };
}

/** Timestamps of launch attempts started and failed since `since`, read oldest first. */
export async function readTimeline(reader: DashboardReader, since: string): Promise<LaunchTimeline> {
  const started: number[] = [];
  const failed: number[] = [];
  const failedActions = new Set<string>(TIMELINE_FAILED);
  const filter: LogFilter = { actions: [...TIMELINE_STARTED, ...TIMELINE_FAILED], level: undefined, q: '' };
  let path: string | undefined = logsQuery(filter, MAX_LOG_LIMIT, { since, order: 'asc' });
  let lastId = -1;
  for (let pages = 0; path; pages++) {
    if (pages === MAX_TIMELINE_PAGES) return { started, failed, lastId, truncated: true };
    let body: LogEntry[];
    let next: string | undefined;
    if (reader.getWithLink) {
      const r: { body: LogEntry[]; next: string | undefined } = await reader.getWithLink<LogEntry[]>(path);
      body = r.body;
      next = r.next ? toPathAndQuery(r.next) : undefined;
    } else {
      body = await reader.get<LogEntry[]>(path);
      const last = body[body.length - 1];
      // `since` is inclusive: the boundary millisecond comes again and is skipped by id below.
      next =
        body.length === MAX_LOG_LIMIT && last && last.id > lastId
          ? logsQuery(filter, MAX_LOG_LIMIT, { since: last.timestamp, order: 'asc' })
          : undefined;
    }
    for (const e of body) {
      if (e.id <= lastId) continue;
      lastId = e.id;
      (failedActions.has(e.action) ? failed : started).push(Date.parse(e.timestamp));
    }
    path = next;
  }
  return { started, failed, lastId, truncated: false };
}
