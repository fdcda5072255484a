// Items view: items grouped by outcome. Failed items carry contextValue "item.failed", which the
// manifest's view/item/context menu turns into an inline Retry.
import * as vscode from 'vscode';
import type { ItemOutcome, ItemSummary } from '../../shared/api';
import { Commands } from '../constants';
import type { ItemsSnapshot } from '../engineModel';
import { OUTCOMES } from '../engineModel';
import { appendField, formatAgo, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

const GROUPS: Record<ItemOutcome, { label: string; icon: string; color: string; expanded: boolean }> = {
  failed: { label: 'Failed', icon: 'error', color: 'problemsErrorIcon.foreground', expanded: true },
  pending: { label: 'Pending', icon: 'clock', color: 'charts.yellow', expanded: true },
  launched: { label: 'Launched', icon: 'pass', color: 'testing.iconPassed', expanded: false },
};

const PHASE_ICONS: Record<ItemSummary['phase'], string> = {
  waiting: 'circle-large-outline',
  scheduled: 'calendar',
  backoff: 'history',
  running: 'loading~spin',
  done: 'check',
};

function describe(item: ItemSummary): string {
  const attempts = `${item.attempts}/${item.maxAttempts}`;
  switch (item.outcome) {
    case 'failed':
      return `${attempts} attempts${item.lastError ? ` · ${item.lastError.replace(/\s+/g, ' ')}` : ''}`;
    case 'launched':
      return `${formatTime(item.updatedAt)} · attempt ${item.attempts}`;
    default:
      if (item.phase === 'running') return `running · attempt ${item.attempts}/${item.maxAttempts}`;
      if (item.phase === 'backoff') return `retry ${formatAgo(item.nextAttemptAt)} · ${attempts}`;
      if (item.phase === 'scheduled') return `scheduled ${formatTime(item.nextAttemptAt)}`;
      return 'waiting';
  }
}

function itemTooltip(item: ItemSummary): vscode.MarkdownString {
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown('**').appendText(item.name).appendMarkdown('**  \n');
  appendField(tooltip, 'Id', item.id);
  appendField(tooltip, 'Outcome', item.outcome === 'pending' ? `pending (${item.phase})` : item.outcome);
  appendField(tooltip, 'Attempts', `${item.attempts} of ${item.maxAttempts}`);
  if (item.nextAttemptAt) appendField(tooltip, 'Next attempt', formatTime(item.nextAttemptAt));
  appendField(tooltip, 'Source', item.source);
  appendField(tooltip, 'Updated', formatTime(item.updatedAt));
  if (item.lastError) appendField(tooltip, 'Last error', item.lastError);
  return tooltip;
}

export function itemNode(item: ItemSummary): TreeNode {
  const icon =
    item.outcome === 'pending'
      ? new vscode.ThemeIcon(PHASE_ICONS[item.phase] ?? 'circle-large-outline')
      : new vscode.ThemeIcon(GROUPS[item.outcome].icon, new vscode.ThemeColor(GROUPS[item.outcome].color));
  return {
    // Outcome in the id: the three lists are fetched separately, so an item moving between them
    // may briefly appear in two, and ids must stay unique.
    id: `items.${item.outcome}.${item.id}`,
    label: item.name || item.id,
    description: describe(item),
    // Built on hover only (see TreeNode.tooltip).
    tooltip: () => itemTooltip(item),
    icon,
    contextValue: `item.${item.outcome}`,
    // A click shows the latest attempt's output; an item that never ran has none to show.
    command: item.attempts > 0 ? { command: Commands.showOutput, title: 'Show Output', arguments: [item.id] } : undefined,
    item,
  };
}

export function itemNodes(items: ItemsSnapshot | undefined, error?: string): TreeNode[] {
  if (!items) return error ? [errorNode('items', error)] : [];
  const total = OUTCOMES.reduce((n, o) => n + items.byOutcome[o].total, 0);
  if (total === 0) return error ? [errorNode('items', error)] : []; // the welcome offers Add Item
  const nodes = OUTCOMES.map((o): TreeNode => {
    const { items: list, total: count } = items.byOutcome[o];
    const g = GROUPS[o];
    const children = list.map(itemNode);
    if (count > list.length) {
      children.push({
        id: `items.${o}.more`,
        label: `… ${count - list.length} more`,
        description: 'see the dashboard or GET /items',
        icon: new vscode.ThemeIcon('ellipsis'),
      });
    }
    return {
      id: `items.${o}`,
      label: g.label,
      description: String(count),
      icon: new vscode.ThemeIcon(g.icon, new vscode.ThemeColor(g.color)),
      contextValue: `itemGroup.${o}`,
      children: children.length ? children : undefined,
      expanded: g.expanded,
    };
  });
  if (error) nodes.push(errorNode('items', error));
  return nodes;
}
