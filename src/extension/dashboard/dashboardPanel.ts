// The extension-host half of the dashboard: one WebviewPanel, its message pump, nothing else.
// Reads go through dashboardQueries (the engine's HTTP API); buttons run the extension's own
// commands, so the dashboard never controls the engine by a path the rest of the UI does not use.
import * as vscode from 'vscode';
import { Commands, type CommandId } from '../constants';
import type { EngineConnection } from '../engineConnection';
import type { HostState } from '../engineMode';
import {
  isWebviewToHost,
  type ConnectionInfo,
  type ConnectionPhase,
  type DashboardCommand,
  type HostToWebview,
  type LiveEvent,
  type QueryRequest,
  type WebviewToHost,
} from '../../shared/webviewProtocol';
import type { ItemAction } from '../../shared/itemActions';
import { dashboardHtml, dashboardWebviewOptions } from './dashboardHtml';
import { openItemSource } from './itemSource';
import { readAttention, readItem, readLogPage, readOutput, readOverview, readTimeline, readUpcoming } from './dashboardQueries';

// The dashboard's buttons are named like the extension's commands, so a name is a key of Commands
// (a dashboard command without one does not compile).
const COMMAND_IDS: Record<DashboardCommand, CommandId> = Commands;

// The item detail's buttons, each the extension's own command for one item: the webview names an
// action of this list, never a command.
const ITEM_ACTION_COMMANDS: Record<ItemAction, CommandId> = {
  retry: Commands.retryItem,
  cancel: Commands.cancelItem,
  hold: Commands.holdItem,
  release: Commands.releaseItem,
};

/** What the window's engine policy knows (EngineController): read, never driven, by the panel. */
export interface EngineStateSource {
  readonly state: HostState;
  /** Activation has decided whether this window starts, attaches to or monitors an engine. */
  readonly decided: boolean;
  readonly onDidChangeState: vscode.Event<unknown>;
}

/** The connection's reason to be down, where the connection knows one (EngineClient does). */
type WithProblem = EngineConnection & { readonly problem?: unknown; readonly onDidChangeProblem?: vscode.Event<unknown> };

/** How long an engine event may wait to go to the webview with the ones after it. */
const EVENTS_MS = 50;

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
    private readonly connection: WithProblem,
    private readonly engineState?: EngineStateSource,
  ) {
    // Set here as well as at creation: a panel restored by the serializer comes with defaults.
    panel.webview.options = dashboardWebviewOptions(extensionUri);
    panel.webview.html = dashboardHtml(panel.webview, extensionUri);
    if (engineState) this.disposables.push(engineState.onDidChangeState(() => this.postConnection()));
    if (connection.onDidChangeProblem) this.disposables.push(connection.onDidChangeProblem(() => this.postConnection()));
    this.disposables.push(
      this.onDidDisposeEmitter,
      panel.onDidDispose(() => this.dispose()),
      panel.webview.onDidReceiveMessage((m: unknown) => this.onMessage(m)),
      connection.onDidChangeConnection(() => this.postConnection()),
      connection.onDidReceiveEvent((event) => this.queueEvent(event)),
    );
  }

  private postConnection(): void {
    const info = this.connectionInfo();
    const key = JSON.stringify(info);
    if (key === this.lastConnection) return;
    this.lastConnection = key;
    this.post({ type: 'connection', connection: info });
  }
  private lastConnection: string | undefined;

  reveal(): void {
    this.panel.reveal(undefined, false);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    clearTimeout(this.eventsTimer);
    this.onDidDisposeEmitter.fire();
    while (this.disposables.length) this.disposables.pop()?.dispose();
    this.panel.dispose();
  }

  private connectionInfo(): ConnectionInfo {
    return { connected: this.connection.connected, baseUrl: this.connection.baseUrl, phase: this.phase() };
  }

  /**
   * "connecting" for everything that ends in data within moments (an engine starting, one being
   * reached, activation not decided yet), so a panel restored by a reload shows neither "live"
   * nor a Start button for an engine that is only on its way.
   */
  private phase(): ConnectionPhase {
    const c = this.connection;
    if (c.connected) return 'live';
    const source = this.engineState;
    if (!source) return c.baseUrl ? 'unreachable' : 'off';
    const state = source.state;
    if (state === 'failed' || (state === 'off' && source.decided)) return 'off';
    if (state !== 'starting' && c.problem) return 'unreachable';
    return 'connecting';
  }

  private post(message: HostToWebview): void {
    // Before `ready` the webview has no listener yet; it asks for everything after it. A hidden
    // panel has no content at all (no retainContextWhenHidden): when shown again, its script
    // starts over with `ready` and reads everything afresh.
    if (!this.webviewReady || this.disposed || !this.panel.visible) return;
    // Nothing overtakes the events already queued (a connection change after them, say).
    if (message.type !== 'events') this.flushEvents();
    void this.panel.webview.postMessage(message);
  }

  private queuedEvents: LiveEvent[] = [];
  private eventsTimer: NodeJS.Timeout | undefined;

  /**
   * Engine events go to the webview at most every EVENTS_MS, as one message: while items launch
   * the engine sends several a millisecond, and a message each (serialized, crossing to the
   * window's renderer, handled there) cost more than what they said.
   */
  private queueEvent(event: LiveEvent): void {
    if (!this.webviewReady || this.disposed || !this.panel.visible) return;
    this.queuedEvents.push(event);
    this.eventsTimer ??= setTimeout(() => this.flushEvents(), EVENTS_MS);
  }

  private flushEvents(): void {
    clearTimeout(this.eventsTimer);
    this.eventsTimer = undefined;
    if (this.queuedEvents.length === 0) return;
    const events = this.queuedEvents;
    this.queuedEvents = [];
    this.post({ type: 'events', events });
  }

  private onMessage(message: unknown): void {
    if (!isWebviewToHost(message)) return;
    const m: WebviewToHost = message;
    switch (m.type) {
      case 'ready':
        this.webviewReady = true;
        this.lastConnection = JSON.stringify(this.connectionInfo());
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
      case 'itemAction':
        void this.answer(m.requestId, async () => {
          await vscode.commands.executeCommand(ITEM_ACTION_COMMANDS[m.action], m.itemId);
          return null;
        });
        return;
      case 'openSource':
        void this.answer(m.requestId, async () => {
          await openItemSource(this.connection, m.itemId);
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
