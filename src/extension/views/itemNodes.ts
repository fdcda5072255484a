// Items view: items grouped by state, running first with its elapsed time. Each group lists its
// items in a useful order (Waiting by when the engine will launch them, Failed and Launched newest
// first: engineModel.ts reads them so) and folds a template's occurrences into one row.
//
// Context values, for `when` clauses in package.json (`viewItem == …` in view/item/context):
//   item.running   an attempt is running now                   (Cancel, Hold: the attempt goes on, no retry until released)
//   item.pending   waiting, scheduled, in backoff, or blocked  (Cancel, Hold)
//   item.held      held by the user, pending                   (Cancel, Release)
//   item.failed    failed for good                             (Retry)
//   item.launched  succeeded                                   (nothing to control)
//   item.<…>.service  the same for a service, in the Services group (Restart Service; Cancel stops it)
//   itemGroup.<group>  the group rows: running, services, waiting, held, blocked, failed, launched
//                  (itemGroup.failed carries Retry All Failed)
//   itemTemplate   a schedule's or watched item's occurrences in one group, folded (nothing to control)
//   itemsMore      "Show more…" at the end of a group that lists only part of its items
// Every item node is `item.<…>` so `viewItem =~ /^item\./` matches all of them (Show Item Logs).
//
// Node ids are stable (`items.<group>.<item id>`): the view refreshes only the nodes whose
// content changed (NodeTreeProvider.setRoots), so a hovered tooltip stays open across polls.
// The group is part of the id because groups are read separately and an item moving between two
// may briefly be listed in both.
import * as vscode from 'vscode';
import type { ItemState, ItemSummary } from '../../shared/api';
import { Commands } from '../constants';
import type { ItemGroup, ItemsSnapshot } from '../engineModel';
import { ITEM_GROUPS } from '../engineModel';
import { appendField, formatAgo, formatTime, safeMarkdown } from './format';
import { foldOccurrences, occurrenceOf } from './itemGrouping';
import { serviceText } from '../serviceText';
import { formatResources } from '../../shared/format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

const GROUPS: Record<ItemGroup, { label: string; icon: string; color?: string; expanded: boolean }> = {
  services: { label: 'Services', icon: 'server-process', color: 'charts.green', expanded: true },
  running: { label: 'Running', icon: 'play-circle', color: 'charts.blue', expanded: true },
  waiting: { label: 'Waiting', icon: 'clock', color: 'charts.yellow', expanded: true },
  held: { label: 'Held', icon: 'debug-pause', color: 'charts.orange', expanded: true },
  blocked: { label: 'Blocked', icon: 'circle-slash', expanded: true },
  // Expanded: a failure is what the user opened the view for.
  failed: { label: 'Failed', icon: 'error', color: 'problemsErrorIcon.foreground', expanded: true },
  launched: { label: 'Launched', icon: 'pass', color: 'testing.iconPassed', expanded: false },
};

const STATE_ICONS: Record<ItemState, string> = {
  waiting: 'circle-large-outline',
  scheduled: 'calendar',
  backoff: 'history',
  running: 'loading~spin',
  held: 'debug-pause',
  blocked: 'circle-slash',
  failed: 'error',
  launched: 'pass',
  starting: 'loading~spin',
  ready: 'vm-running',
};

const CONTEXT_VALUES: Record<ItemState, string> = {
  running: 'item.running',
  waiting: 'item.pending',
  scheduled: 'item.pending',
  backoff: 'item.pending',
  blocked: 'item.pending',
  held: 'item.held',
  failed: 'item.failed',
  launched: 'item.launched',
  starting: 'item.running',
  ready: 'item.running',
};

/** The state of an item, also from an engine of part one that does not send `state`. */
export function stateOf(item: ItemSummary): ItemState {
  // `state` is absent from an older engine (a remote one not yet upgraded).
  return item.state ?? (item.phase === 'done' ? item.outcome : item.phase);
}

/** Whole seconds, as a running attempt's age is read: "8 s", "1 min 12 s", "2 h 5 min". */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor(s / 60) % 60} min`;
}

/**
 * When the running attempt started: the engine sets `updatedAt` when it launches an attempt and
 * not again until the attempt ends, so for a running item it is the attempt's start.
 */
function runningSince(item: ItemSummary): number {
  return Date.parse(item.updatedAt);
}

/** What a row says about its item, and its priority when not the default (it decides the launch order). */
function describe(item: ItemSummary, now: number): string {
  const text = describeState(item, now);
  return item.priority ? `${text} · priority ${item.priority > 0 ? '+' : ''}${item.priority}` : text;
}

function describeState(item: ItemSummary, now: number): string {
  if (item.service) return serviceText(item, now, true);
  const attempts = `${item.attempts}/${item.maxAttempts}`;
  switch (stateOf(item)) {
    case 'running':
      return `running ${formatElapsed(now - runningSince(item))} · attempt ${attempts}`;
    case 'failed':
      return `${attempts} attempts${item.lastError ? ` · ${item.lastError.replace(/\s+/g, ' ')}` : ''}`;
    case 'launched':
      return `${formatTime(item.updatedAt)} · attempt ${item.attempts}`;
    case 'backoff':
      return `retry ${formatAgo(item.nextAttemptAt, now)} · ${attempts}`;
    case 'scheduled':
      return `scheduled ${formatTime(item.nextAttemptAt)}`;
    case 'held':
      return item.attempts > 0 ? `held · ${attempts} attempts` : 'held';
    case 'blocked':
      return item.waitingFor?.length ? `waits for: ${item.waitingFor.join(', ')}` : 'blocked';
    default:
      return 'waiting';
  }
}

function itemTooltip(item: ItemSummary): vscode.MarkdownString {
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown('**').appendText(item.name).appendMarkdown('**  \n');
  appendField(tooltip, 'Id', item.id);
  appendField(tooltip, 'State', stateOf(item));
  appendField(tooltip, 'Attempts', `${item.attempts} of ${item.maxAttempts}`);
  if (item.priority) appendField(tooltip, 'Priority', String(item.priority));
  if (stateOf(item) === 'running') appendField(tooltip, 'Running since', formatTime(item.updatedAt));
  if (item.nextAttemptAt) appendField(tooltip, 'Next attempt', formatTime(item.nextAttemptAt));
  if (item.waitingFor?.length) appendField(tooltip, 'Waits for', item.waitingFor.join(', '));
  if (item.service?.readyAt) appendField(tooltip, 'Ready since', formatTime(item.service.readyAt));
  if (item.service) appendField(tooltip, 'Restarts', String(item.service.restarts));
  appendField(tooltip, 'Source', item.source);
  appendField(tooltip, 'Updated', formatTime(item.updatedAt));
  // Absent from an engine before attempt insight: nothing to say then.
  if (item.lastResources !== undefined && item.lastFinishedAt) appendField(tooltip, 'Last attempt', formatResources(item.lastResources));
  if (item.lastError) appendField(tooltip, 'Last error', item.lastError);
  return tooltip;
}

/** `label`: an occurrence under its template's row is named by when it fired. */
export function itemNode(item: ItemSummary, group: ItemGroup, now = Date.now(), label = item.name || item.id): TreeNode {
  const state = stateOf(item);
  const g = GROUPS[group];
  const icon =
    group === 'failed' || group === 'launched'
      ? new vscode.ThemeIcon(g.icon, g.color ? new vscode.ThemeColor(g.color) : undefined)
      : new vscode.ThemeIcon(STATE_ICONS[state]);
  return {
    id: `items.${group}.${item.id}`,
    label,
    description: describe(item, now),
    // Built on hover only (see TreeNode.tooltip).
    tooltip: () => itemTooltip(item),
    icon,
    contextValue: item.service ? `${CONTEXT_VALUES[state]}.service` : CONTEXT_VALUES[state],
    // A click shows the latest attempt's output; an item that never ran has none to show.
    command: item.attempts > 0 ? { command: Commands.showOutput, title: 'Show Output', arguments: [item.id] } : undefined,
    item,
  };
}

/**
 * The Items view's roots: one node per non-empty group, always in ITEM_GROUPS order (Blocked
 * stays empty, hence hidden, until dependencies exist). `now` dates the running items' elapsed
 * time; the view calls this again once a second while something runs.
 */
export function itemNodes(items: ItemsSnapshot | undefined, error?: string, now = Date.now()): TreeNode[] {
  if (!items) return error ? [errorNode('items', error)] : [];
  const nodes: TreeNode[] = [];
  for (const group of ITEM_GROUPS) {
    const { items: list, total } = items.byGroup[group];
    if (total === 0 && list.length === 0) continue;
    const g = GROUPS[group];
    const children = foldOccurrences(list).map((e) => (e.kind === 'item' ? itemNode(e.item, group, now) : templateNode(e.templateId, e.items, group, now)));
    if (total > list.length) {
      children.push({
        id: `items.${group}.more`,
        label: 'Show more…',
        description: `${list.length} of ${total} shown`,
        icon: new vscode.ThemeIcon('ellipsis'),
        contextValue: 'itemsMore',
        command: { command: Commands.showMoreItems, title: 'Show More', arguments: [group] },
      });
    }
    nodes.push({
      id: `items.${group}`,
      label: g.label,
      description: String(Math.max(total, list.length)),
      icon: new vscode.ThemeIcon(g.icon, g.color ? new vscode.ThemeColor(g.color) : undefined),
      contextValue: `itemGroup.${group}`,
      children: children.length ? children : undefined,
      expanded: g.expanded,
    });
  }
  // Nothing at all: the welcome offers Add Item.
  if (error) nodes.push(errorNode('items', error));
  return nodes;
}

/**
 * A template's occurrences in one group, in the group's order (newest first where the group is),
 * each named by when it fired; folded, as one row stands for what would otherwise be many alike.
 */
function templateNode(templateId: string, occurrences: ItemSummary[], group: ItemGroup, now: number): TreeNode {
  const first = occurrences[0];
  const done = group === 'launched' || group === 'failed';
  const noun = done ? 'runs' : 'occurrences';
  // The first is the newest of what is done, and the next to launch of what waits.
  const when = done ? ` · latest ${formatTime(occurrenceOf(first.id)?.at)}` : group === 'waiting' ? ` · next ${formatTime(occurrenceOf(first.id)?.at)}` : '';
  return {
    id: `items.${group}.template.${templateId}`,
    label: first.name || templateId,
    description: `${occurrences.length} ${noun}${when}`,
    tooltip: `${occurrences.length} ${noun} of ${templateId}, newest first`,
    icon: new vscode.ThemeIcon('layers'),
    contextValue: 'itemTemplate',
    expanded: false,
    children: occurrences.map((o) => itemNode(o, group, now, formatTime(occurrenceOf(o.id)?.at))),
  };
}

/** True while some listed item is running: its elapsed time needs a tick. */
export function hasRunningItems(items: ItemsSnapshot | undefined): boolean {
  return (items?.byGroup.running.items.length ?? 0) > 0 || (items?.byGroup.services.items.some((i) => i.state === 'starting') ?? false);
}
