// LogsModel: the newest log entries matching the Logs view's filter. Loaded from /logs, then kept
// live from /events `log` events (no polling). The filter survives reloads (workspaceState).
import * as vscode from 'vscode';
import { LOG_LEVELS, type LogAction, type LogEntry, type LogLevel } from '../shared/api';
import { ContextKeys } from './constants';
import { Disposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { Throttled } from './throttle';

export interface LogFilter {
  actions?: LogAction[];
  /** Minimum level. */
  level?: LogLevel;
  /** Text search, as /logs `q`. */
  text?: string;
  /** One item's entries. */
  itemId?: string;
}

export const LOGS_SHOWN = 200;
/** How long live entries are gathered before the view is updated with all of them. */
const LIVE_BATCH_MS = 250;
const FILTER_KEY = 'engineMonitor.logFilter';

export function isFilterActive(f: LogFilter): boolean {
  return !!(f.actions?.length || f.level || f.text || f.itemId);
}

export function describeFilter(f: LogFilter): string {
  const parts: string[] = [];
  if (f.actions?.length) parts.push(f.actions.length <= 2 ? f.actions.join(', ') : `${f.actions.length} actions`);
  if (f.level) parts.push(`≥ ${f.level}`);
  if (f.text) parts.push(`“${f.text}”`);
  if (f.itemId) parts.push(`item ${f.itemId}`);
  return parts.join(' · ');
}

export function logsQuery(f: LogFilter, limit = LOGS_SHOWN): string {
  const p = new URLSearchParams();
  if (f.actions?.length) p.set('action', f.actions.join(','));
  if (f.level) p.set('level', f.level);
  if (f.text) p.set('q', f.text);
  if (f.itemId) p.set('item', f.itemId);
  p.set('limit', String(limit));
  return `/logs?${p.toString()}`;
}

/** Whether a live entry belongs in the filtered list (text filters are left to the server). */
function matchesStructured(f: LogFilter, e: LogEntry): boolean {
  if (f.actions?.length && !f.actions.includes(e.action)) return false;
  if (f.level && LOG_LEVELS.indexOf(e.level) < LOG_LEVELS.indexOf(f.level)) return false;
  if (f.itemId && e.itemId !== f.itemId) return false;
  return true;
}

export class LogsModel extends Disposable {
  private _entries: LogEntry[] = [];
  private _filter: LogFilter;
  error: string | undefined;
  private readonly reload: Throttled;
  private live: LogEntry[] = [];
  private liveTimer: NodeJS.Timeout | undefined;

  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>());
  readonly onDidChange = this._onDidChange.event;

  constructor(
    private readonly connection: EngineConnection,
    private readonly state: vscode.Memento,
  ) {
    super();
    this._filter = state.get<LogFilter>(FILTER_KEY) ?? {};
    void vscode.commands.executeCommand('setContext', ContextKeys.logFilterActive, isFilterActive(this._filter));
    this.reload = this._register(new Throttled(() => this.load(), 1000));
    this._register(
      connection.onDidChangeConnection((connected) => {
        if (connected) this.reload.trigger(true);
        else {
          this._entries = [];
          this.error = undefined;
          this._onDidChange.fire();
        }
      }),
    );
    this._register(
      connection.onDidReceiveEvent((e) => {
        if (e.name !== 'log') return;
        if (this._filter.text) this.reload.trigger(); // word matching is the server's
        else if (matchesStructured(this._filter, e.data)) this.queueLive(e.data);
      }),
    );
    if (connection.connected) this.reload.trigger(true);
  }

  get entries(): readonly LogEntry[] {
    return this._entries;
  }

  get filter(): LogFilter {
    return this._filter;
  }

  async setFilter(filter: LogFilter): Promise<void> {
    const clean: LogFilter = {};
    if (filter.actions?.length) clean.actions = [...filter.actions];
    if (filter.level) clean.level = filter.level;
    if (filter.text?.trim()) clean.text = filter.text.trim();
    if (filter.itemId) clean.itemId = filter.itemId;
    this._filter = clean;
    await this.state.update(FILTER_KEY, clean);
    void vscode.commands.executeCommand('setContext', ContextKeys.logFilterActive, isFilterActive(clean));
    this._entries = [];
    this._onDidChange.fire();
    this.reload.trigger(true);
  }

  refresh(): void {
    this.reload.trigger(true);
  }

  /**
   * A busy engine sends hundreds of entries a second; the view is rebuilt for a batch of them at
   * most every LIVE_BATCH_MS, not once per entry (that kept the extension host busy for seconds).
   */
  private queueLive(entry: LogEntry): void {
    this.live.push(entry);
    this.liveTimer ??= setTimeout(() => this.flushLive(), LIVE_BATCH_MS);
  }

  private flushLive(): void {
    this.liveTimer = undefined;
    const newestShown = this._entries.length ? this._entries[0].id : 0;
    const fresh = this.live.filter((e) => e.id > newestShown);
    this.live = [];
    if (fresh.length === 0) return;
    // Entries arrive in id order, so the batch reversed goes on top as it is.
    fresh.sort((a, b) => b.id - a.id);
    this._entries = fresh.length >= LOGS_SHOWN ? fresh.slice(0, LOGS_SHOWN) : [...fresh, ...this._entries.slice(0, LOGS_SHOWN - fresh.length)];
    this._onDidChange.fire();
  }

  override dispose(): void {
    clearTimeout(this.liveTimer);
    super.dispose();
  }

  private async load(): Promise<void> {
    if (!this.connection.connected) return;
    const filter = this._filter;
    try {
      const entries = await this.connection.get<LogEntry[]>(logsQuery(filter));
      if (filter !== this._filter) return; // a newer filter's load is on its way
      this._entries = entries;
      this.live = this.live.filter((e) => e.id > (entries[0]?.id ?? 0));
      this.error = undefined;
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
    }
    this._onDidChange.fire();
  }
}
