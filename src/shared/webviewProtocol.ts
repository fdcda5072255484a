// Messages between the "Show Engine Status" dashboard webview (media/src) and its panel in the
// extension host (src/extension/dashboard). The webview never talks HTTP itself: its CSP has no
// connect-src, and the engine may need a token. It asks the host, which reads through the same
// EngineConnection the tree views use.
//
// Handshake: the webview posts `ready` once its script runs (again after every reload of its
// content); only then does the host post `init` and forward live events. Queries carry a
// `requestId` that the host echoes in its `response`.
import type { HealthResponse, IsoTime, LogEntry, StatsOverview, StatusResponse } from './api';
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
  | { type: 'runCommand'; requestId: number; command: DashboardCommand };

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
}

/** Host → webview. */
export type HostToWebview =
  | { type: 'init'; connection: ConnectionInfo }
  | { type: 'connection'; connection: ConnectionInfo }
  | { type: 'event'; event: LiveEvent }
  | { type: 'response'; requestId: number; ok: true; result: unknown }
  | { type: 'response'; requestId: number; ok: false; error: string };

/** The webview's persisted UI state (`getState`/`setState`), restored after a reload. */
export interface DashboardState {
  filter: LogFilter;
  /** Vertical scroll of the page and of the log table. */
  scrollY: number;
  logScrollTop: number;
}

/** Runtime check for messages from the webview: its content is not trusted more than a page. */
export function isWebviewToHost(value: unknown): value is WebviewToHost {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as { type?: unknown; requestId?: unknown; kind?: unknown; command?: unknown; params?: unknown };
  switch (m.type) {
    case 'ready':
      return true;
    case 'query':
      return (
        Number.isSafeInteger(m.requestId) &&
        (m.kind === 'overview' || m.kind === 'logs' || m.kind === 'timeline') &&
        typeof m.params === 'object' &&
        m.params !== null
      );
    case 'runCommand':
      return Number.isSafeInteger(m.requestId) && (DASHBOARD_COMMANDS as readonly unknown[]).includes(m.command);
    default:
      return false;
  }
}
