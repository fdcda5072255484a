// The dashboard's reads, answered over the engine's public HTTP API. No `vscode` here: these are
// plain functions of an EngineConnection-like reader, so they can be unit-tested in Node.
import type { HealthResponse, ItemDetail, ItemState, ItemSummary, LogEntry, ScheduleSummary, StatusResponse } from '../../shared/api';
import { logsPath, type LogFilter } from '../../shared/logFilter';
import { MAX_LIMIT } from '../../shared/queryParams';
import type { AttentionItems, LaunchTimeline, LogPageToken, LogTablePage, OutputExcerpt, OutputStream, Overview, UpcomingRun } from '../../shared/webviewProtocol';
import { healthStatus } from '../../shared/health';

/** What the queries need of EngineConnection. */
export interface DashboardReader {
  get<T>(pathAndQuery: string): Promise<T>;
  /** Like `get`, plus the `rel="next"` target of the response's `Link` header. */
  getWithLink<T>(pathAndQuery: string): Promise<{ body: T; next: string | undefined }>;
  /** A plain-text GET with an optional `Range` (see EngineConnection.getText). */
  getText(pathAndQuery: string, range?: string): Promise<{ status: number; text: string; totalBytes: number | undefined }>;
}

/** Bytes of an attempt's output the detail panel shows: the first 16 KiB and the last 48 KiB. */
export const OUTPUT_HEAD_BYTES = 16 * 1024;
export const OUTPUT_TAIL_BYTES = 48 * 1024;

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

/** `/logs` path and query for the first page of a filter, newest first. */
export function logsQuery(filter: LogFilter, limit: number): string {
  return logsPath(filter, { limit: pageSize(limit) });
}

function pageSize(limit: number): number {
  return Math.min(Math.max(1, Math.floor(limit)), MAX_LIMIT);
}

/** The path and query of a `Link` target, which may be absolute or relative. */
export function toPathAndQuery(next: string): string {
  const u = new URL(next, 'http://127.0.0.1');
  return u.pathname + u.search;
}

function linkToken(next: string | undefined): LogPageToken | undefined {
  return next ? { kind: 'link', pathAndQuery: toPathAndQuery(next) } : undefined;
}

/**
 * One page of the log table: the first page of the filter, or the next one by the server's own
 * cursor (the `Link` of the page before).
 */
export async function readLogPage(
  reader: DashboardReader,
  filter: LogFilter,
  limit: number,
  page?: LogPageToken,
): Promise<LogTablePage> {
  if (page?.kind === 'before') return readBefore(reader, filter, limit, page);
  // The token comes back from the webview, which is trusted no more than a web page: it may only
  // continue a log query.
  if (page && !page.pathAndQuery.startsWith('/logs?')) throw new Error('Not a page of the logs.');
  const { body, next } = await reader.getWithLink<LogEntry[]>(page ? page.pathAndQuery : logsQuery(filter, limit));
  return { entries: body, next: linkToken(next) };
}

/**
 * The entries older than one the table shows, for when it dropped its oldest rows while live
 * entries kept coming: the server issues cursors only at the ends of the pages it served, not at
 * an entry that arrived live. `until` is exclusive and several entries can share a millisecond,
 * so ask up to and including the entry's millisecond and drop what is not older (ids only grow);
 * from there on, paging follows the server's cursor again.
 */
async function readBefore(
  reader: DashboardReader,
  filter: LogFilter,
  limit: number,
  before: { id: number; timestamp: string },
): Promise<LogTablePage> {
  const until = new Date(Date.parse(before.timestamp) + 1).toISOString();
  let ask = pageSize(limit);
  for (;;) {
    const { body, next } = await reader.getWithLink<LogEntry[]>(logsPath({ ...filter, until }, { limit: ask }));
    const older = body.filter((e) => e.id < before.id);
    // All of a full page sat in the boundary millisecond: ask for more at once.
    if (older.length === 0 && next && ask < MAX_LIMIT) {
      ask = MAX_LIMIT;
      continue;
    }
    return { entries: older, next: linkToken(next) };
  }
}

/** Timestamps of launch attempts started and failed since `since`, read oldest first. */
export async function readTimeline(reader: DashboardReader, since: string): Promise<LaunchTimeline> {
  const started: number[] = [];
  const failed: number[] = [];
  const failedActions = new Set<string>(TIMELINE_FAILED);
  const filter: LogFilter = { actions: [...TIMELINE_STARTED, ...TIMELINE_FAILED], since };
  let path: string | undefined = logsPath(filter, { order: 'asc', limit: MAX_LIMIT });
  let lastId = -1;
  for (let pages = 0; path; pages++) {
    if (pages === MAX_TIMELINE_PAGES) return { started, failed, lastId, truncated: true };
    const { body, next }: { body: LogEntry[]; next: string | undefined } = await reader.getWithLink<LogEntry[]>(path);
    for (const e of body) {
      lastId = e.id;
      (failedActions.has(e.action) ? failed : started).push(Date.parse(e.timestamp));
    }
    path = next ? toPathAndQuery(next) : undefined;
  }
  return { started, failed, lastId, truncated: false };
}

/** `GET /items/{id}` (ids are percent-encoded in paths). */
export function readItem(reader: DashboardReader, id: string): Promise<ItemDetail> {
  return reader.get<ItemDetail>(`/items/${encodeURIComponent(id)}`);
}

/**
 * The start and the end of an attempt's output: one ranged read for the first 64 KiB, which is
 * all of it most of the time, and a second for the tail when there is more. Never the whole of
 * a 10 MiB output into the webview.
 */
export async function readOutput(reader: DashboardReader, id: string, attempt: number, stream: OutputStream): Promise<OutputExcerpt> {
  const path = `/items/${encodeURIComponent(id)}/attempts/${attempt}/output${stream === 'all' ? '' : `?stream=${stream}`}`;
  const limit = OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES;
  const first = await reader.getText(path, `bytes=0-${limit - 1}`);
  const total = first.totalBytes ?? byteLength(first.text);
  // 200: the server sent everything (it ignored the range, or it was all there was).
  if (first.status !== 206 || total <= limit) return { head: first.text, tail: null, totalBytes: total, omittedBytes: 0 };
  const last = await reader.getText(path, `bytes=-${OUTPUT_TAIL_BYTES}`);
  // The output may have grown between the two reads (a running attempt): the tail is as of now.
  const totalNow = last.totalBytes ?? total;
  const head = cutBytes(first.text, OUTPUT_HEAD_BYTES);
  return { head, tail: last.text, totalBytes: totalNow, omittedBytes: Math.max(0, totalNow - OUTPUT_HEAD_BYTES - byteLength(last.text)) };
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes. */
function cutBytes(text: string, bytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  // A multi-byte character cut in two decodes as U+FFFD at the end: drop it.
  return buf.subarray(0, bytes).toString('utf8').replace(/\uFFFD$/, '');
}

/** Occurrences the dashboard's Upcoming list shows. */
export const UPCOMING_LIMIT = 5;

/**
 * The next occurrence of each enabled schedule template, soonest first, the first five. A held
 * (disabled) template has no next run. An engine from before schedules answers 404: no schedules.
 */
export async function readUpcoming(reader: DashboardReader): Promise<UpcomingRun[]> {
  let schedules: ScheduleSummary[];
  try {
    schedules = await reader.get<ScheduleSummary[]>('/schedules');
  } catch (err) {
    if (/HTTP 404\b/.test(String(err))) return [];
    throw err;
  }
  return schedules
    .filter((s): s is ScheduleSummary & { nextRunAt: string } => s.enabled && s.nextRunAt !== null)
    .sort((a, b) => Date.parse(a.nextRunAt) - Date.parse(b.nextRunAt) || (a.id < b.id ? -1 : 1))
    .slice(0, UPCOMING_LIMIT)
    .map((s) => ({ id: s.id, at: s.nextRunAt, schedule: s.schedule ?? '', timezone: s.timezone ?? '' }));
}

/** Items the dashboard lists per state. */
export const ATTENTION_LIMIT = 50;

/** Running and failed items, for the dashboard's list of items that need a look. */
export async function readAttention(reader: DashboardReader): Promise<AttentionItems> {
  const [running, failed] = await Promise.all([readItemsInState(reader, 'running'), readItemsInState(reader, 'failed')]);
  // The failure that just happened first: /items lists in discovery order.
  failed.items.sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt));
  return { running, failed };
}

type ItemsPage = { items: ItemSummary[]; total: number };

/**
 * `/items?state=`; an older engine refuses the parameter (400), and then the
 * state is found in the `outcome` lists (running ones among the first 500 pending).
 */
async function readItemsInState(reader: DashboardReader, state: 'running' | 'failed'): Promise<ItemsPage> {
  try {
    const { items, total } = await reader.get<ItemsPage>(`/items?state=${state}&limit=${ATTENTION_LIMIT}`);
    return { items, total };
  } catch (err) {
    if (!/HTTP 400\b[\s\S]*\bstate\b/.test(String(err))) throw err;
  }
  if (state === 'failed') {
    const { items, total } = await reader.get<ItemsPage>(`/items?outcome=failed&limit=${ATTENTION_LIMIT}`);
    return { items, total };
  }
  const pending = await reader.get<ItemsPage>('/items?outcome=pending&limit=500');
  const running = pending.items.filter((i) => ((i.state as ItemState | undefined) ?? i.phase) === 'running');
  return { items: running.slice(0, ATTENTION_LIMIT), total: running.length };
}
