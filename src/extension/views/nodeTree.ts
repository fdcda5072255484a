// The provider half of every tree view: views build plain TreeNode trees from a model (pure
// functions in the *Nodes.ts files) and this provider maps them to TreeItems. getChildren never
// fetches and never calls UI; it returns what the last model change produced.
import * as vscode from 'vscode';
import type { ItemSummary, LogEntry } from '../../shared/api';

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
}

export class NodeTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private roots: TreeNode[] = [];
  private parents = new Map<string, TreeNode>();
  private readonly _onDidChangeTreeData = new vscode.EventEmitter<TreeNode | undefined | void>();
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  setRoots(roots: TreeNode[]): void {
    this.roots = roots;
    this.parents.clear();
    const walk = (n: TreeNode) => n.children?.forEach((c) => (this.parents.set(c.id, n), walk(c)));
    roots.forEach(walk);
    this._onDidChangeTreeData.fire();
  }

  getRoots(): readonly TreeNode[] {
    return this.roots;
  }

  getChildren(node?: TreeNode): TreeNode[] {
    return node ? (node.children ?? []) : this.roots;
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
  }
}
