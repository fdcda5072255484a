// Messages between the "Show Engine Status" dashboard webview (media/src) and its panel in the
// extension host (src/extension/dashboard). The webview never talks HTTP itself: its CSP has no
// connect-src, and the engine may need a token. It asks the host, which reads through the same
// EngineConnection the tree views use.
//
// Handshake: the webview posts `ready` once its script runs (again after every reload of its
// content); only then does the host post `init` and forward live events. Queries carry a
// `requestId` that the host echoes in its `response`.
import type { HealthResponse, IsoTime, ItemDetail, ItemSummary, LogEntry, StatsOverview, StatusResponse } from './api';
import { isItemAction, type ItemAction } from './itemActions';
import type { LogFilter } from './logFilter';

/**
 * Where the next page of the log table starts. Opaque to the webview: it only hands it back.
 * `link` is the API's own cursor (the `Link` header of the page before); `before` is for a table
 * that dropped its oldest rows while live entries came in: entries older than the last one kept.
 */
export type LogPageToken =
  | { kind: 'link'; pathAndQuery: string }
  | { kind: 'before'; id: number; timestamp: IsoTime };

/** Timestamps (ms since the epoch) of launch attempts started and failed, for the chart. */
export interface LaunchTimeline {
  started: number[];
  failed: number[];
  /** Id of the newest log entry read; live `log` events up to it are already counted. */
  lastId: number;
  /** True when the host stopped paging before reaching the present (very busy engine). */
  truncated: boolean;
}

export interface Overview {
  status: StatusResponse;
  health: HealthResponse;
}

/** Every query the webview can make: its parameters and the result the host answers with. */
export interface QueryMap {
  /** `/status` and `/health` together. */
  overview: { params: Record<string, never>; result: Overview };
  /** One page of `/logs`, newest first. */
  logs: { params: { filter: LogFilter; page?: LogPageToken; limit: number }; result: LogTablePage };
  /** Launch attempts since `since`, oldest first. */
  timeline: { params: { since: IsoTime }; result: LaunchTimeline };
  /** The items that need a look: running now, and failed for good (the newest first). */
  attention: { params: Record<string, never>; result: AttentionItems };
  /** The next occurrences of the enabled schedule templates, soonest first (`GET /schedules`). */
  upcoming: { params: Record<string, never>; result: UpcomingRun[] };
  /** `GET /items/{id}`: the definition and every attempt, for the item detail panel. */
  item: { params: { id: string }; result: ItemDetail };
  /** The start and the end of an attempt's output (`GET /items/{id}/attempts/{n}/output`). */
  output: { params: { id: string; attempt: number; stream: OutputStream }; result: OutputExcerpt };
}

/** One schedule template's next occurrence, for the dashboard's Upcoming list. */
export interface UpcomingRun {
  /** The template's id. */
  id: string;
  at: IsoTime;
  schedule: string;
  timezone: string;
}

export interface AttentionItems {
  running: { items: ItemSummary[]; total: number };
  failed: { items: ItemSummary[]; total: number };
}

/** Which output the detail panel shows: both streams in arrival order, or one of them. */
export const OUTPUT_STREAMS = ['all', 'stdout', 'stderr'] as const;
export type OutputStream = (typeof OUTPUT_STREAMS)[number];

/**
 * An attempt's output as the panel shows it: all of it when small, else its first and last
 * bytes (a webview holding megabytes of text gets slow; Show Output's terminal has it all).
 */
export interface OutputExcerpt {
  head: string;
  /** The end of the output when the middle was left out; null when `head` is all of it. */
  tail: string | null;
  /** Bytes of the output (this stream) kept by the engine. */
  totalBytes: number;
  /** Bytes between head and tail not shown. */
  omittedBytes: number;
}
export type QueryKind = keyof QueryMap;

/** One page of the log table, newest first. */
export interface LogTablePage {
  entries: LogEntry[];
  next: LogPageToken | undefined;
}

/** Engine commands the dashboard's buttons may run (each maps to `engineMonitor.<name>`). */
export const DASHBOARD_COMMANDS = ['start', 'stop', 'pollNow'] as const;
export type DashboardCommand = (typeof DASHBOARD_COMMANDS)[number];

export type QueryRequest = {
  [K in QueryKind]: { type: 'query'; requestId: number; kind: K; params: QueryMap[K]['params'] };
}[QueryKind];

/** Webview → host. */
export type WebviewToHost =
  | { type: 'ready' }
  | QueryRequest
  | { type: 'runCommand'; requestId: number; command: DashboardCommand }
  /** "Open in Terminal": the extension's Show Output command for one attempt. */
  | { type: 'showOutput'; requestId: number; itemId: string; attempt: number }
  /** The item detail's Retry, Cancel, Hold and Release: the extension's command of that name, for this item. */
  | { type: 'itemAction'; requestId: number; itemId: string; action: ItemAction }
  /** The item detail's source link: the item's queue file in an editor, at its entry. */
  | { type: 'openSource'; requestId: number; itemId: string };

/** A live event from `/events`: what EngineConnection receives and the panel forwards as it arrives. */
export type LiveEvent =
  | { name: 'log'; data: LogEntry }
  | { name: 'stats'; data: StatsOverview }
  | { name: 'health'; data: HealthResponse };

export interface ConnectionInfo {
  /** True while the extension's `/events` stream is connected. */
  connected: boolean;
  /** The engine's API URL, or undefined while no engine is known. */
  baseUrl: string | undefined;
  /**
   * What the window knows while the stream is not connected: 'connecting' (an engine is starting,
   * or being reached, or the window has not decided yet), 'unreachable' (a known engine stopped
   * answering), 'off' (none runs and none is expected). 'live' while connected. Absent from an
   * older host: the webview then guesses from `baseUrl`.
   */
  phase?: ConnectionPhase;
}

export type ConnectionPhase = 'connecting' | 'live' | 'unreachable' | 'off';

/** Host → webview. */
export type HostToWebview =
  | { type: 'init'; connection: ConnectionInfo }
  | { type: 'connection'; connection: ConnectionInfo }
  /** The engine's events since the last message, in order: one message per burst, not per event. */
  | { type: 'events'; events: LiveEvent[] }
  | { type: 'response'; requestId: number; ok: true; result: unknown }
  | { type: 'response'; requestId: number; ok: false; error: string };

/** The webview's persisted UI state (`getState`/`setState`), restored after a reload. */
export interface DashboardState {
  filter: LogFilter;
  /** Vertical scroll of the page and of the log table. */
  scrollY: number;
  logScrollTop: number;
  /** The item whose detail panel is open, if any. */
  detailItemId?: string;
}

/** Runtime check for messages from the webview: its content is not trusted more than a page. */
export function isWebviewToHost(value: unknown): value is WebviewToHost {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as { type?: unknown; requestId?: unknown; kind?: unknown; command?: unknown; params?: unknown; itemId?: unknown; attempt?: unknown };
  switch (m.type) {
    case 'ready':
      return true;
    case 'query':
      if (!Number.isSafeInteger(m.requestId) || typeof m.params !== 'object' || m.params === null) return false;
      switch (m.kind) {
        case 'overview':
        case 'logs':
        case 'timeline':
        case 'attention':
        case 'upcoming':
          return true;
        case 'item':
          return isItemId((m.params as { id?: unknown }).id);
        case 'output': {
          const p = m.params as { id?: unknown; attempt?: unknown; stream?: unknown };
          return isItemId(p.id) && isAttempt(p.attempt) && (OUTPUT_STREAMS as readonly unknown[]).includes(p.stream);
        }
        default:
          return false;
      }
    case 'showOutput':
      return Number.isSafeInteger(m.requestId) && isItemId(m.itemId) && isAttempt(m.attempt);
    case 'itemAction':
      return Number.isSafeInteger(m.requestId) && isItemId(m.itemId) && isItemAction((value as { action?: unknown }).action);
    case 'openSource':
      return Number.isSafeInteger(m.requestId) && isItemId(m.itemId);
    case 'runCommand':
      return Number.isSafeInteger(m.requestId) && (DASHBOARD_COMMANDS as readonly unknown[]).includes(m.command);
    default:
      return false;
  }
}

function isItemId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= 1000;
}

function isAttempt(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 1;
}
