// The one read surface every view uses: the engine's public HTTP API plus /events, the same
// surface scripts use. Implemented by EngineClient (engineClient.ts); the tree views, the status
// bar and the dashboard depend only on this interface.
import type * as vscode from 'vscode';
import type { LiveEvent } from '../shared/webviewProtocol';

export interface EngineConnection {
  /** Base URL of the engine's API (no trailing slash); undefined while no engine is known. */
  readonly baseUrl: string | undefined;
  /** True while /events is connected. */
  readonly connected: boolean;
  /**
   * GET a JSON endpoint, e.g. `/stats` or `/logs?action=launch_failed&limit=50`.
   * Rejects with an Error whose message can be shown to the user as it is.
   */
  get<T>(pathAndQuery: string): Promise<T>;
  /** Like `get`, plus the `rel="next"` target of the response's `Link` header (the next page). */
  getWithLink<T>(pathAndQuery: string): Promise<{ body: T; next: string | undefined }>;
  /**
   * GET a plain-text endpoint (an attempt's output), with an optional `Range` header value such
   * as `bytes=0-16383` or `bytes=-49152`. Rejects like `get` for an error answer (404, 410).
   */
  getText(pathAndQuery: string, range?: string): Promise<TextResponse>;
  readonly onDidReceiveEvent: vscode.Event<LiveEvent>;
  /** Fires with the new value of `connected`. */
  readonly onDidChangeConnection: vscode.Event<boolean>;
}

export interface TextResponse {
  /** 200 (all of it), 206 (the range asked for) or 416 (nothing in that range: no output yet). */
  status: number;
  text: string;
  /** The full size in bytes, from `Content-Range`; undefined for a 200. */
  totalBytes: number | undefined;
}
