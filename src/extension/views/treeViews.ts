// The five tree views of the Engine Monitor container, wired to their models. Each model change
// rebuilds that view's nodes once; the node builders are pure, so tests read the same nodes the
// user sees.
import * as vscode from 'vscode';
import { ContextKeys, Views } from '../constants';
import { Disposable } from '../dispose';
import type { EngineModel, ModelPart } from '../engineModel';
import { isLogFilterActive } from '../../shared/logFilter';
import { describeFilter, type LogsModel } from '../logsModel';
import { healthNodes } from './healthNodes';
import { itemNodes } from './itemNodes';
import { logNodes } from './logNodes';
import { NodeTreeProvider, type TreeNode } from './nodeTree';
import { statsNodes } from './statsNodes';
import { statusNodes } from './statusNodes';

export type ViewName = 'stats' | 'health' | 'status' | 'logs' | 'items';

export class EngineViews extends Disposable {
  readonly providers: Record<ViewName, NodeTreeProvider>;
  readonly views: Record<ViewName, vscode.TreeView<unknown>>;
  private readonly logNodeCache = new Map<number, TreeNode>();

  constructor(
    private readonly model: EngineModel,
    private readonly logs: LogsModel,
  ) {
    super();
    const make = () => this._register(new NodeTreeProvider());
    this.providers = { stats: make(), health: make(), status: make(), logs: make(), items: make() };
    const view = (name: ViewName, showCollapseAll = false) =>
      this._register(vscode.window.createTreeView(Views[name], { treeDataProvider: this.providers[name], showCollapseAll })) as vscode.TreeView<unknown>;
    this.views = { stats: view('stats'), health: view('health'), status: view('status', true), logs: view('logs'), items: view('items', true) };

    for (const part of ['status', 'items'] as const) {
      const v = this.views[part];
      model.setWatched(part, v.visible);
      this._register(v.onDidChangeVisibility((e) => model.setWatched(part, e.visible)));
    }
    this._register(model.onDidChange((parts) => this.render(parts)));
    this._register(logs.onDidChange(() => this.renderLogs()));
    this.render(new Set(['stats', 'health', 'status', 'items']));
    this.renderLogs();
  }

  private render(parts: ReadonlySet<ModelPart>): void {
    const m = this.model;
    if (parts.has('stats') || parts.has('health')) this.providers.stats.setRoots(statsNodes(m.stats, m.health, m.error));
    if (parts.has('health')) {
      this.providers.health.setRoots(healthNodes(m.health, m.error));
      void vscode.commands.executeCommand('setContext', ContextKeys.engineState, m.health?.checks.engine ?? '');
    }
    if (parts.has('status')) this.providers.status.setRoots(statusNodes(m.status, m.error));
    if (parts.has('items')) {
      this.providers.items.setRoots(itemNodes(m.items, m.error));
      void vscode.commands.executeCommand('setContext', ContextKeys.hasFailedItems, (m.items?.byOutcome.failed.total ?? 0) > 0);
      this.views.items.description = m.items ? `${m.stats?.total ?? ''}`.trim() || undefined : undefined;
    }
  }

  private renderLogs(): void {
    this.providers.logs.setRoots(logNodes(this.logs.entries, this.logs.error, this.logNodeCache));
    const f = this.logs.filter;
    this.views.logs.description = isLogFilterActive(f) ? `Filter: ${describeFilter(f)}` : undefined;
  }
}
