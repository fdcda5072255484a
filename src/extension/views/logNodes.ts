// Logs view: newest first, an icon per action, details in a Markdown tooltip (escaped).
import type * as vscode from 'vscode';
import type { LogAction, LogEntry } from '../../shared/api';
import { Commands } from '../constants';
import { actionIcon, appendField, fenced, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

const LABEL_MAX = 160;

/** Entries whose `details.attempt` is the attempt they are about (retry_scheduled's is the next one). */
const ATTEMPT_ACTIONS: ReadonlySet<LogAction> = new Set<LogAction>([
  'launch_started',
  'launch_succeeded',
  'launch_failed',
  'launch_interrupted',
  'launch_cancelled',
  'item_failed',
]);

/** A click on an entry about an item shows that attempt's output (else the item's latest). */
function showOutputCommand(e: LogEntry): vscode.Command | undefined {
  if (!e.itemId) return undefined;
  const attempt = ATTEMPT_ACTIONS.has(e.action) && typeof e.details?.attempt === 'number' ? e.details.attempt : undefined;
  return { command: Commands.showOutput, title: 'Show Output', arguments: [{ itemId: e.itemId, attempt }] };
}

export function logNode(e: LogEntry): TreeNode {
  const oneLine = e.message.replace(/\s+/g, ' ');
  return {
    id: `log.${e.id}`,
    label: oneLine.length > LABEL_MAX ? `${oneLine.slice(0, LABEL_MAX - 1)}…` : oneLine,
    description: `${formatTime(e.timestamp)} · ${e.action}`,
    // Built on hover only (see TreeNode.tooltip).
    tooltip: () => logTooltip(e),
    icon: actionIcon(e.action),
    // A click opens the output (a click that refiltered the whole view would surprise: "Show Item
    // Logs" is in the context menu, and gets the item id from the entry).
    command: showOutputCommand(e),
    contextValue: e.itemId ? 'logEntry.item' : 'logEntry',
    entry: e,
  };
}

function logTooltip(e: LogEntry): vscode.MarkdownString {
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown(`**${e.action}** · ${e.level}  \n`);
  tooltip.appendText(e.message);
  tooltip.appendMarkdown('\n\n');
  appendField(tooltip, 'Time', `${formatTime(e.timestamp)} (${e.timestamp})`);
  if (e.itemId) appendField(tooltip, 'Item', e.itemId);
  appendField(tooltip, 'Entry', `#${e.id}`);
  if (e.details && Object.keys(e.details).length) tooltip.appendMarkdown(fenced(JSON.stringify(e.details, null, 2), 'json'));
  return tooltip;
}

/**
 * The view's nodes. With a `cache` (entry id → node), each entry's node, tooltip included, is built
 * once however often the view is redrawn; entries that left the view leave the cache.
 */
export function logNodes(entries: readonly LogEntry[], error?: string, cache?: Map<number, TreeNode>): TreeNode[] {
  const nodes = cache ? entries.map((e) => cache.get(e.id) ?? logNode(e)) : entries.map(logNode);
  if (cache) {
    cache.clear();
    entries.forEach((e, i) => cache.set(e.id, nodes[i]));
  }
  if (error) nodes.unshift(errorNode('logs', error));
  return nodes;
}
