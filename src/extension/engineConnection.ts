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
  readonly onDidReceiveEvent: vscode.Event<LiveEvent>;
  /** Fires with the new value of `connected`. */
  readonly onDidChangeConnection: vscode.Event<boolean>;
}
