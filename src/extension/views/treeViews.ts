// The seven tree views of the Engine Monitor container, wired to their models. Each model change
// rebuilds that view's nodes once; the node builders are pure, so tests read the same nodes the
// user sees.
import * as vscode from 'vscode';
import { ContextKeys, Views } from '../constants';
import { Disposable } from '../dispose';
import type { EngineModel, ModelPart } from '../engineModel';
import { isLogFilterActive } from '../../shared/logFilter';
import { describeFilter, type LogsModel } from '../logsModel';
import { fleetNodes, isFleet } from './fleetNodes';
import { healthNodes } from './healthNodes';
import { hasRunningItems, itemNodes } from './itemNodes';
import { logNodes } from './logNodes';
import { NodeTreeProvider, type TreeNode } from './nodeTree';
import { scheduleNodes } from './scheduleNodes';
import { statsNodes } from './statsNodes';
import { statusNodes } from './statusNodes';

export type ViewName = 'stats' | 'health' | 'status' | 'logs' | 'items' | 'schedules' | 'fleet';

/** The Schedules view is rendered again this often while visible, to move "next in …" on. */
const SCHEDULE_TICK_MS = 10_000;
/**
 * /status is read again this often while the Fleet view is visible: heartbeats age, and an engine
 * whose lease expires becomes "lost" without anything else changing.
 */
const FLEET_TICK_MS = 5_000;
/**
 * The model's changes are drawn at most this often: at once when nothing was drawn for that long,
 * else at its end, with every part that changed meanwhile. Drawn on every engine event, the Items
 * view was built 2,000 times while 2,000 items launched, and the extension host's thread was busy
 * 13 of those 17 seconds (its event-loop p99 28.8 ms; 10.6 ms drawn every 100 ms, 9.5 every 250).
 * A quarter of a second behind a burst is still "at once" to someone watching the view.
 */
const RENDER_MS = 250;

export class EngineViews extends Disposable {
  readonly providers: Record<ViewName, NodeTreeProvider>;
  readonly views: Record<ViewName, vscode.TreeView<unknown>>;
  private readonly logNodeCache = new Map<number, TreeNode>();
  /** Ticks once a second while an item runs and the Items view is visible: its elapsed time. */
  private elapsedTimer: NodeJS.Timeout | undefined;
  /** Ticks while the Schedules view is visible and lists a schedule: its relative times. */
  private scheduleTimer: NodeJS.Timeout | undefined;
  /** Ticks while the Fleet view is visible: reads /status again (FLEET_TICK_MS). */
  private fleetTimer: NodeJS.Timeout | undefined;
  /** How many items the Failed group had, to expand it when its first item arrives. */
  private failedShown = 0;
  /** Parts changed since the last drawing, and the timer that draws them (RENDER_MS). */
  private changedParts = new Set<ModelPart>();
  private renderTimer: NodeJS.Timeout | undefined;
  private renderedAt = -Infinity;
  /** What each part's views last showed: data, an error or nothing yet. */
  private readonly shownKind = new Map<ModelPart, 'data' | 'error' | 'none'>();

  constructor(
    private readonly model: EngineModel,
    private readonly logs: LogsModel,
  ) {
    super();
    const make = () => this._register(new NodeTreeProvider());
    this.providers = { stats: make(), health: make(), status: make(), logs: make(), items: make(), schedules: make(), fleet: make() };
    const view = (name: ViewName, showCollapseAll = false) =>
      this._register(vscode.window.createTreeView(Views[name], { treeDataProvider: this.providers[name], showCollapseAll })) as vscode.TreeView<unknown>;
    this.views = {
      stats: view('stats'),
      health: view('health'),
      status: view('status', true),
      logs: view('logs'),
      items: view('items', true),
      schedules: view('schedules'),
      fleet: view('fleet'),
    };

    for (const part of ['items', 'schedules'] as const) {
      const v = this.views[part];
      model.setWatched(part, v.visible);
      this._register(v.onDidChangeVisibility((e) => model.setWatched(part, e.visible)));
    }
    // The Fleet view renders /status too: keep it fetched while either view is visible.
    const watchStatus = () => model.setWatched('status', this.views.status.visible || this.views.fleet.visible);
    watchStatus();
    this._register(this.views.status.onDidChangeVisibility(watchStatus));
    this._register(this.views.fleet.onDidChangeVisibility(watchStatus));
    this._register(this.views.fleet.onDidChangeVisibility(() => this.updateFleetTimer()));
    this._register(this.views.items.onDidChangeVisibility(() => this.updateElapsedTimer()));
    this._register(this.views.schedules.onDidChangeVisibility(() => this.updateScheduleTimer()));
    this._register({
      dispose: () => (clearInterval(this.elapsedTimer), clearInterval(this.scheduleTimer), clearInterval(this.fleetTimer), clearTimeout(this.renderTimer)),
    });
    this._register(model.onDidChange((parts) => this.changed(parts)));
    this._register(logs.onDidChange(() => this.renderLogs()));
    this.changed(new Set(['stats', 'health', 'status', 'items', 'schedules']));
    this.renderLogs();
  }

  /**
   * Resolves once every visible view has handed VS Code its current rows, or after `capMs` (a
   * view VS Code does not ask, e.g. one collapsed meanwhile, must not hold the others back). The
   * cap is generous because on a loaded machine a window can take over a second to ask for rows
   * it was told changed, and a cap that fires first lets the views' empty states show before their
   * data. Resolves with the views that had not been asked when the cap fired (none: all shown).
   */
  rowsShown(capMs = 5000): Promise<ViewName[]> {
    // Changes the throttle holds are drawn first: else "shown" would be said of rows the window
    // had already fetched, and the views' empty states could show before their data.
    if (this.renderTimer) this.renderChanged();
    const visible = (Object.keys(this.views) as ViewName[]).filter((n) => this.views[n].visible);
    const waiting = new Set(visible);
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<void>((r) => (timer = setTimeout(r, capMs)));
    const shown = visible.map((n) => this.providers[n].rootsShown().then(() => void waiting.delete(n)));
    return Promise.race([Promise.all(shown), cap])
      .then(() => [...waiting])
      .finally(() => clearTimeout(timer));
  }

  private changed(parts: ReadonlySet<ModelPart>): void {
    for (const part of parts) this.changedParts.add(part);
    // A view going from nothing to its first data (or to an error, or back to nothing) is drawn at
    // once: the throttle is for the stream of changes to data already shown, and a window that
    // has just started or reloaded must not wait for it to show its first rows.
    const kindChanged = [...parts].some((part) => this.shownKind.get(part) !== this.kindOf(part));
    if (this.renderTimer && !kindChanged) return;
    const wait = kindChanged ? 0 : this.renderedAt + RENDER_MS - performance.now();
    if (wait <= 0) this.renderChanged();
    else this.renderTimer = setTimeout(() => this.renderChanged(), wait);
  }

  private kindOf(part: ModelPart): 'data' | 'error' | 'none' {
    return this.model[part] !== undefined ? 'data' : this.model.error ? 'error' : 'none';
  }

  /** Draws every part changed since the last drawing, now (a pending timer is dropped). */
  private renderChanged(): void {
    clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
    this.renderedAt = performance.now();
    const parts = this.changedParts;
    this.changedParts = new Set();
    for (const part of parts) this.shownKind.set(part, this.kindOf(part));
    this.render(parts);
  }

  private render(parts: ReadonlySet<ModelPart>): void {
    const m = this.model;
    if (parts.has('stats') || parts.has('health')) this.providers.stats.setRoots(statsNodes(m.stats, m.health, m.error));
    // However the first item arrived (Add Item…, a file written by hand, a script), the
    // walkthrough's step completes on it.
    if (parts.has('stats') && m.stats) this.setKey(ContextKeys.hasItems, m.stats.total > 0);
    // And "See it launched" on a launch, not on a look at the Items view before anything ran.
    if (parts.has('stats') && m.stats) this.setKey(ContextKeys.hasLaunched, m.stats.totalLaunches > 0);
    if (parts.has('health')) {
      this.providers.health.setRoots(healthNodes(m.health, m.error));
      this.setKey(ContextKeys.engineState, m.health?.checks.engine ?? '');
    }
    if (parts.has('status')) {
      this.providers.status.setRoots(statusNodes(m.status, m.error));
      this.providers.fleet.setRoots(fleetNodes(m.status, m.error));
      // Kept while a transient error leaves the status unknown, so the view does not flash away.
      if (m.status || !m.error) this.setKey(ContextKeys.fleet, isFleet(m.status));
      const fleet = m.status?.fleet;
      this.views.fleet.description = fleet ? `${fleet.filter((e) => e.state !== 'lost').length} of ${fleet.length} live` : undefined;
    }
    if (parts.has('items')) {
      this.renderItems();
      const failed = m.items?.byGroup.failed.total ?? 0;
      this.setKey(ContextKeys.hasFailedItems, failed > 0);
      this.views.items.description = m.items ? `${m.stats?.total ?? ''}`.trim() || undefined : undefined;
      this.revealFirstFailure(failed);
      this.updateElapsedTimer();
    }
    if (parts.has('schedules')) {
      if (m.schedules) this.setKey(ContextKeys.hasSchedules, m.schedules.length > 0);
      this.renderSchedules();
      this.updateScheduleTimer();
    }
  }

  /** The context keys as this window last set them: each drawing sets them, the window hears of changes only. */
  private readonly keys = new Map<string, boolean | string>();

  /** Sets a context key the views' menus and welcomes read, unless it already has this value. */
  private setKey(key: string, value: boolean | string): void {
    if (this.keys.get(key) === value) return;
    this.keys.set(key, value);
    void vscode.commands.executeCommand('setContext', key, value);
  }

  private updateFleetTimer(): void {
    const tick = this.views.fleet.visible;
    if (tick && !this.fleetTimer) this.fleetTimer = setInterval(() => this.model.refreshStatus(), FLEET_TICK_MS);
    else if (!tick && this.fleetTimer) {
      clearInterval(this.fleetTimer);
      this.fleetTimer = undefined;
    }
  }

  private renderSchedules(): void {
    this.providers.schedules.setRoots(scheduleNodes(this.model.schedules, this.model.error));
  }

  /**
   * "next in 4 min" moves on although nothing in the engine changed, so the view is rendered
   * again every few seconds while visible; setRoots refreshes only the rows whose text changed.
   */
  private updateScheduleTimer(): void {
    const tick = this.views.schedules.visible && (this.model.schedules?.length ?? 0) > 0;
    if (tick && !this.scheduleTimer) this.scheduleTimer = setInterval(() => this.renderSchedules(), SCHEDULE_TICK_MS);
    else if (!tick && this.scheduleTimer) {
      clearInterval(this.scheduleTimer);
      this.scheduleTimer = undefined;
    }
  }

  private renderItems(): void {
    this.providers.items.setRoots(itemNodes(this.model.items, this.model.error));
  }

  /**
   * Running items show their elapsed time, so the view is rendered again once a second while
   * one runs and the view is visible; setRoots then refreshes just the running items' rows.
   */
  private updateElapsedTimer(): void {
    const tick = this.views.items.visible && hasRunningItems(this.model.items);
    if (tick && !this.elapsedTimer) this.elapsedTimer = setInterval(() => this.renderItems(), 1000);
    else if (!tick && this.elapsedTimer) {
      clearInterval(this.elapsedTimer);
      this.elapsedTimer = undefined;
    }
  }

  /**
   * The Failed group starts expanded, but VS Code remembers a collapsed state by id (Collapse All,
   * or a collapse in an earlier session) and a group that reappears would open collapsed, hiding
   * the new failure: when failures appear, expand the group explicitly.
   */
  private revealFirstFailure(failed: number): void {
    const before = this.failedShown;
    this.failedShown = failed;
    if (before > 0 || failed === 0 || !this.views.items.visible) return;
    const group = this.providers.items.getRoots().find((n) => n.id === 'items.failed');
    if (group) void Promise.resolve(this.views.items.reveal(group, { expand: true, select: false, focus: false })).catch(() => undefined);
  }

  private renderLogs(): void {
    this.setKey(ContextKeys.hasLogs, this.logs.entries.length > 0);
    this.providers.logs.setRoots(logNodes(this.logs.entries, this.logs.error, this.logNodeCache));
    const f = this.logs.filter;
    this.views.logs.description = isLogFilterActive(f) ? `Filter: ${describeFilter(f)}` : undefined;
  }
}
