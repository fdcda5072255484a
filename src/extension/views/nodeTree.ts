// The provider half of every tree view: views build plain TreeNode trees from a model (pure
// functions in the *Nodes.ts files) and this provider maps them to TreeItems. getChildren never
// fetches and never calls UI; it returns what the last model change produced.
import * as vscode from 'vscode';
import type { ItemSummary, LogEntry, ScheduleSummary } from '../../shared/api';

export interface TreeNode {
  /** Stable and unique within the view: expansion state and selection follow it. */
  id: string;
  label: string;
  description?: string;
  /**
   * A function is called only when VS Code asks for the tooltip (hover), through resolveTreeItem:
   * a MarkdownString tooltip is parsed by VS Code's extension host (marked) every time its tree
   * item is sent to the window, which during launch bursts was the extension host's largest cost.
   */
  tooltip?: string | vscode.MarkdownString | (() => string | vscode.MarkdownString);
  icon?: vscode.ThemeIcon;
  contextValue?: string;
  command?: vscode.Command;
  children?: TreeNode[];
  /** For nodes with children: start expanded (default) or collapsed. */
  expanded?: boolean;
  /** The item a node stands for (Items view), passed to item commands. */
  item?: ItemSummary;
  /** The log entry a node stands for (Logs view). */
  entry?: LogEntry;
  /** The schedule template a node stands for (Schedules view); Hold and Release take its id. */
  schedule?: ScheduleSummary;
}

export class NodeTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private roots: TreeNode[] = [];
  private parents = new Map<string, TreeNode>();
  private readonly _onDidChangeTreeData = new vscode.EventEmitter<TreeNode | TreeNode[] | undefined | void>();
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  /**
   * Shows a new tree. Nodes are matched to the ones shown by id: a node whose content is the same
   * is left alone, one that changed is updated in place (VS Code knows elements by identity) and
   * only it is refreshed. Only a change in the list of roots refreshes the whole view. Rebuilding
   * everything on every poll made VS Code redraw every row, which closed any open tooltip within
   * a second and cost the extension host work proportional to the view.
   */
  setRoots(roots: TreeNode[]): void {
    const full = !sameIds(this.roots, roots);
    const changed: TreeNode[] = [];
    const old = new Map(this.roots.map((n) => [n.id, n]));
    this.roots = roots.map((n) => {
      const before = old.get(n.id);
      return before ? merge(before, n, full ? undefined : changed) : n;
    });
    this.parents.clear();
    const walk = (n: TreeNode) => n.children?.forEach((c) => (this.parents.set(c.id, n), walk(c)));
    this.roots.forEach(walk);
    if (full) {
      this.rootsServed = false;
      this._onDidChangeTreeData.fire();
    } else if (changed.length) this._onDidChangeTreeData.fire(changed);
  }

  /** VS Code has asked for the current roots since the last setRoots that changed them. */
  private rootsServed = true;
  private readonly _onDidServeRoots = new vscode.EventEmitter<void>();
  /** VS Code has asked for roots that changed since it last asked: the rows are on their way to the window. */
  readonly onDidServeRoots = this._onDidServeRoots.event;

  /**
   * Resolves once VS Code has fetched the current roots (at once if it has), so a context key that
   * hides the "Loading…" welcome is set after the rows are on their way to the window, not before
   * (else an empty view flashes its empty state between the two).
   */
  rootsShown(): Promise<void> {
    if (this.rootsServed) return Promise.resolve();
    return new Promise((resolve) => {
      const sub = this.onDidServeRoots(() => (sub.dispose(), resolve()));
    });
  }

  getRoots(): readonly TreeNode[] {
    return this.roots;
  }

  getChildren(node?: TreeNode): TreeNode[] {
    if (node) return node.children ?? [];
    if (!this.rootsServed) {
      this.rootsServed = true;
      this._onDidServeRoots.fire();
    }
    return this.roots;
  }

  getParent(node: TreeNode): TreeNode | undefined {
    return this.parents.get(node.id);
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const state = node.children
      ? node.expanded === false
        ? vscode.TreeItemCollapsibleState.Collapsed
        : vscode.TreeItemCollapsibleState.Expanded
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, state);
    item.id = node.id;
    item.description = node.description;
    if (typeof node.tooltip !== 'function') item.tooltip = node.tooltip;
    item.iconPath = node.icon;
    item.contextValue = node.contextValue;
    item.command = node.command;
    return item;
  }

  resolveTreeItem(item: vscode.TreeItem, node: TreeNode): vscode.TreeItem {
    if (typeof node.tooltip === 'function') item.tooltip = node.tooltip();
    return item;
  }

  dispose(): void {
    this._onDidChangeTreeData.dispose();
    this._onDidServeRoots.dispose();
  }
}

function sameIds(a: readonly TreeNode[] | undefined, b: readonly TreeNode[] | undefined): boolean {
  if (!a || !b) return a === b;
  return a.length === b.length && a.every((n, i) => n.id === b[i].id);
}

function iconKey(icon: vscode.ThemeIcon | undefined): string {
  return icon ? `${icon.id}/${(icon.color as { id?: string } | undefined)?.id ?? ''}` : '';
}

function tooltipKey(t: TreeNode['tooltip']): string {
  if (t === undefined || typeof t === 'string') return t ?? '';
  // A lazy tooltip is built from the node's item, entry or schedule, which sameContent compares.
  return typeof t === 'function' ? 'lazy' : t.value;
}

/** Everything of a node VS Code shows, apart from its children. */
function sameContent(a: TreeNode, b: TreeNode): boolean {
  return (
    a.label === b.label &&
    a.description === b.description &&
    a.contextValue === b.contextValue &&
    iconKey(a.icon) === iconKey(b.icon) &&
    tooltipKey(a.tooltip) === tooltipKey(b.tooltip) &&
    JSON.stringify(a.command) === JSON.stringify(b.command) &&
    JSON.stringify(a.item) === JSON.stringify(b.item) &&
    JSON.stringify(a.schedule) === JSON.stringify(b.schedule) &&
    (a.entry === b.entry || JSON.stringify(a.entry) === JSON.stringify(b.entry))
  );
}

/**
 * Updates `shown` (the instance VS Code knows) to `next` and returns it. Nodes that must be
 * refreshed go to `changed`; undefined when an ancestor is refreshed anyway (a refreshed element
 * has its children read again).
 */
function merge(shown: TreeNode, next: TreeNode, changed: TreeNode[] | undefined): TreeNode {
  if (shown === next) return shown;
  const oldChildren = shown.children;
  const refresh = !sameContent(shown, next) || !sameIds(oldChildren, next.children);
  if (refresh) changed?.push(shown);
  const below = refresh ? undefined : changed;
  const byId = new Map((oldChildren ?? []).map((c) => [c.id, c]));
  const children = next.children?.map((c) => {
    const before = byId.get(c.id);
    return before ? merge(before, c, below) : c;
  });
  // Every property of the new node, and none left over from the old one.
  for (const key of Object.keys(shown)) Reflect.deleteProperty(shown, key);
  Object.assign(shown, next, { children });
  return shown;
}
