// The extension-host half of the dashboard: one WebviewPanel, its message pump, nothing else.
// Reads go through dashboardQueries (the engine's HTTP API); buttons run the extension's own
// commands, so the dashboard never controls the engine by a path the rest of the UI does not use.
import * as vscode from 'vscode';
import { Commands, type CommandId } from '../constants';
import type { EngineConnection } from '../engineConnection';
import {
  isWebviewToHost,
  type ConnectionInfo,
  type DashboardCommand,
  type HostToWebview,
  type QueryRequest,
  type WebviewToHost,
} from '../../shared/webviewProtocol';
import { dashboardHtml, dashboardWebviewOptions } from './dashboardHtml';
import { readAttention, readItem, readLogPage, readOutput, readOverview, readTimeline, readUpcoming } from './dashboardQueries';

// The dashboard's buttons are named like the extension's commands, so a name is a key of Commands
// (a dashboard command without one does not compile).
const COMMAND_IDS: Record<DashboardCommand, CommandId> = Commands;

export class DashboardPanel implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** False until the webview's script says `ready`; reset when its content is reloaded. */
  private webviewReady = false;
  private disposed = false;
  private readonly onDidDisposeEmitter = new vscode.EventEmitter<void>();
  readonly onDidDispose = this.onDidDisposeEmitter.event;

  constructor(
    readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    private readonly connection: EngineConnection,
  ) {
    // Set here as well as at creation: a panel restored by the serializer comes with defaults.
    panel.webview.options = dashboardWebviewOptions(extensionUri);
    panel.webview.html = dashboardHtml(panel.webview, extensionUri);
    this.disposables.push(
      this.onDidDisposeEmitter,
      panel.onDidDispose(() => this.dispose()),
      panel.webview.onDidReceiveMessage((m: unknown) => this.onMessage(m)),
      connection.onDidChangeConnection(() => this.post({ type: 'connection', connection: this.connectionInfo() })),
      connection.onDidReceiveEvent((event) => this.post({ type: 'event', event })),
    );
  }

  reveal(): void {
    this.panel.reveal(undefined, false);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.onDidDisposeEmitter.fire();
    while (this.disposables.length) this.disposables.pop()?.dispose();
    this.panel.dispose();
  }

  private connectionInfo(): ConnectionInfo {
    return { connected: this.connection.connected, baseUrl: this.connection.baseUrl };
  }

  private post(message: HostToWebview): void {
    // Before `ready` the webview has no listener yet; it asks for everything after it. A hidden
    // panel has no content at all (no retainContextWhenHidden): when shown again, its script
    // starts over with `ready` and reads everything afresh.
    if (!this.webviewReady || this.disposed || !this.panel.visible) return;
    void this.panel.webview.postMessage(message);
  }

  private onMessage(message: unknown): void {
    if (!isWebviewToHost(message)) return;
    const m: WebviewToHost = message;
    switch (m.type) {
      case 'ready':
        this.webviewReady = true;
        this.post({ type: 'init', connection: this.connectionInfo() });
        return;
      case 'query':
        void this.answer(m.requestId, () => this.query(m));
        return;
      case 'runCommand':
        void this.answer(m.requestId, async () => {
          await vscode.commands.executeCommand(COMMAND_IDS[m.command]);
          return null;
        });
        return;
      case 'showOutput':
        void this.answer(m.requestId, async () => {
          // The Show Output terminal (itemCommands.ts), for the attempt the panel shows.
          await vscode.commands.executeCommand(Commands.showOutput, { itemId: m.itemId, attempt: m.attempt });
          return null;
        });
        return;
    }
  }

  private query(q: QueryRequest): Promise<unknown> {
    const reader = this.connection;
    switch (q.kind) {
      case 'overview':
        return readOverview(reader);
      case 'logs':
        return readLogPage(reader, q.params.filter, q.params.limit, q.params.page);
      case 'timeline':
        return readTimeline(reader, q.params.since);
      case 'attention':
        return readAttention(reader);
      case 'upcoming':
        return readUpcoming(reader);
      case 'item':
        return readItem(reader, q.params.id);
      case 'output':
        return readOutput(reader, q.params.id, q.params.attempt, q.params.stream);
    }
  }

  private async answer(requestId: number, run: () => Promise<unknown>): Promise<void> {
    try {
      this.post({ type: 'response', requestId, ok: true, result: await run() });
    } catch (err) {
      this.post({ type: 'response', requestId, ok: false, error: err instanceof Error ? err.message : String(err) });
    }
  }
}
