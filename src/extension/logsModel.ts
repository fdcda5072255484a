// LogsModel: the newest log entries matching the Logs view's filter. Loaded from /logs, then kept
// live from /events `log` events (no polling). The filter survives reloads (workspaceState).
import * as vscode from 'vscode';
import type { LogEntry } from '../shared/api';
import { isLogFilterActive, logsPath, matchesLogFilter, type LogFilter } from '../shared/logFilter';
import { ContextKeys } from './constants';
import { Disposable } from './dispose';
import type { EngineConnection } from './engineConnection';
import { Throttled } from './throttle';

export const LOGS_SHOWN = 200;
/** How long live entries are gathered before the view is updated with all of them. */
const LIVE_BATCH_MS = 250;
const FILTER_KEY = 'engineMonitor.logFilter';

export function describeFilter(f: LogFilter): string {
  const parts: string[] = [];
  if (f.actions?.length) parts.push(f.actions.length <= 2 ? f.actions.join(', ') : `${f.actions.length} actions`);
  if (f.level) parts.push(`≥ ${f.level}`);
  if (f.q) parts.push(`“${f.q}”`);
  if (f.itemId) parts.push(`item ${f.itemId}`);
  return parts.join(' · ');
}

/** The filter as the view keeps it: empty parts left out, the text trimmed. */
function cleanFilter(filter: LogFilter): LogFilter {
  const clean: LogFilter = {};
  if (filter.actions?.length) clean.actions = [...filter.actions];
  if (filter.level) clean.level = filter.level;
  if (filter.q?.trim()) clean.q = filter.q.trim();
  if (filter.itemId) clean.itemId = filter.itemId;
  return clean;
}

/** The saved filter. Earlier builds saved its text as `text`; it is read as `q`. */
function savedFilter(state: vscode.Memento): LogFilter {
  const saved = state.get<LogFilter & { text?: string }>(FILTER_KEY) ?? {};
  if (saved.text === undefined) return saved;
  const { text, ...rest } = saved;
  return cleanFilter({ ...rest, q: text });
}

export class LogsModel extends Disposable {
  private _entries: LogEntry[] = [];
  private _filter: LogFilter;
  error: string | undefined;
  /** The first answer of /logs (or its error) since the engine connected: before it, "no entries" would be a guess. */
  loaded = false;
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
    this._filter = savedFilter(state);
    void vscode.commands.executeCommand('setContext', ContextKeys.logFilterActive, isLogFilterActive(this._filter));
    this.reload = this._register(new Throttled(() => this.load(), 1000));
    this._register(
      connection.onDidChangeConnection((connected) => {
        if (connected) this.reload.trigger(true);
        else {
          this._entries = [];
          this.error = undefined;
          this.loaded = false;
          this._onDidChange.fire();
        }
      }),
    );
    this._register(
      connection.onDidReceiveEvent((e) => {
        if (e.name !== 'log') return;
        // Text is left to the server, whose index also folds diacritics: reload instead.
        if (this._filter.q) this.reload.trigger();
        else if (matchesLogFilter(this._filter, e.data)) this.queueLive(e.data);
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
    const clean = cleanFilter(filter);
    this._filter = clean;
    await this.state.update(FILTER_KEY, clean);
    void vscode.commands.executeCommand('setContext', ContextKeys.logFilterActive, isLogFilterActive(clean));
    this._entries = [];
    this.live = []; // gathered under the old filter
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
    // What is shown is told by id, not by "at most the newest id shown": on a fleet an entry can
    // come after one with a higher id (engines draw ids from one sequence and commit in any order).
    // It goes where its id puts it, newest first.
    const shown = new Set(this._entries.map((e) => e.id));
    const fresh = this.live.filter((e) => !shown.has(e.id) && (shown.add(e.id), true));
    this.live = [];
    if (fresh.length === 0) return;
    this._entries = [...fresh, ...this._entries].sort((a, b) => b.id - a.id).slice(0, LOGS_SHOWN);
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
      const entries = await this.connection.get<LogEntry[]>(logsPath(filter, { limit: LOGS_SHOWN }));
      if (filter !== this._filter) return; // a newer filter's load is on its way
      this._entries = entries;
      // Live entries that came while this load was on its way stay queued: the ones it holds
      // already are told apart by id when the queue is shown.
      this.error = undefined;
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
    }
    if (this.connection.connected) this.loaded = true;
    this._onDidChange.fire();
  }
}
