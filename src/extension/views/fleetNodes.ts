// Fleet view: one row per engine sharing the PostgreSQL store, from
// /status.fleet: where it runs, its state, what it runs now and when it last renewed its lease.
// The view is shown only when more than one engine is listed (the `engineMonitor.fleet` context
// key); a single engine is what every other view already describes.
//
// Node ids are `fleet.<engineId>`, so a heartbeat refreshes just that engine's row.
import * as vscode from 'vscode';
import type { FleetEngine, StatusResponse } from '../../shared/api';
import { appendField, formatAgo, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

/** Whether /status lists a fleet worth a view of its own: more than one engine. */
export function isFleet(status: StatusResponse | undefined): boolean {
  return (status?.fleet?.length ?? 0) > 1;
}

const STATE_ICONS: Record<FleetEngine['state'], [string, string | undefined]> = {
  running: ['pass', 'testing.iconPassed'],
  stopped: ['debug-pause', 'charts.orange'],
  restricted: ['shield', 'charts.orange'],
  stalled: ['warning', 'problemsWarningIcon.foreground'],
  lost: ['error', 'problemsErrorIcon.foreground'],
};

/** "running 2 · heartbeat 4 s ago", or for a lost engine "lost · last heartbeat 2 min ago". */
export function describeEngine(e: FleetEngine): string {
  if (e.state === 'lost') return `lost · last heartbeat ${formatAgo(e.lastHeartbeatAt)}`;
  return `${e.state} · ${e.running} running · heartbeat ${formatAgo(e.lastHeartbeatAt)}`;
}

function engineTooltip(e: FleetEngine, self: boolean): vscode.MarkdownString {
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown('**').appendText(`${e.host} · pid ${e.pid}`).appendMarkdown('**');
  if (self) tooltip.appendMarkdown(' (the engine this window talks to)');
  tooltip.appendMarkdown('  \n');
  appendField(tooltip, 'Engine id', e.engineId);
  appendField(tooltip, 'State', e.state === 'lost' ? 'lost: its lease expired; another engine records its running attempts as interrupted and retries them' : e.state);
  appendField(tooltip, 'Running', String(e.running));
  appendField(tooltip, 'Started', formatTime(e.startedAt));
  appendField(tooltip, 'Last heartbeat', `${formatTime(e.lastHeartbeatAt)} (${formatAgo(e.lastHeartbeatAt)})`);
  return tooltip;
}

export function fleetNode(e: FleetEngine, self: boolean): TreeNode {
  const [icon, color] = STATE_ICONS[e.state] ?? ['server-process', undefined];
  return {
    id: `fleet.${e.engineId}`,
    label: `${e.host} · pid ${e.pid}${self ? ' (this engine)' : ''}`,
    description: describeEngine(e),
    tooltip: () => engineTooltip(e, self),
    icon: new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined),
    contextValue: e.state === 'lost' ? 'fleetEngine.lost' : 'fleetEngine',
  };
}

/**
 * The Fleet view's roots: the answering engine first, then live engines by host, lost ones last
 * (they matter only until their attempts have been taken over).
 */
export function fleetNodes(status: StatusResponse | undefined, error?: string): TreeNode[] {
  if (!status?.fleet) return error ? [errorNode('fleet', error)] : [];
  const self = status.engine.engineId;
  const rank = (e: FleetEngine) => (e.engineId === self ? 0 : e.state === 'lost' ? 2 : 1);
  return [...status.fleet]
    .sort((a, b) => rank(a) - rank(b) || a.host.localeCompare(b.host) || a.pid - b.pid)
    .map((e) => fleetNode(e, e.engineId === self));
}
