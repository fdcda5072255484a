// Stats view: the /stats overview, one row per counter.
import * as vscode from 'vscode';
import type { HealthResponse, StatsOverview } from '../../shared/api';
import { Commands } from '../constants';
import { formatAgo, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';

export const STAT_ROWS: { key: keyof StatsOverview; label: string; icon: string; color?: string; help: string }[] = [
  { key: 'total', label: 'Total', icon: 'list-unordered', help: 'Known items: launched + pending + failed.' },
  { key: 'launched', label: 'Launched', icon: 'pass', color: 'testing.iconPassed', help: 'Items whose launch succeeded.' },
  { key: 'pending', label: 'Pending', icon: 'clock', color: 'charts.yellow', help: 'Items waiting, scheduled, backing off or running.' },
  { key: 'failed', label: 'Failed', icon: 'error', color: 'problemsErrorIcon.foreground', help: 'Items whose attempts are exhausted.' },
  { key: 'totalLaunches', label: 'Total launches', icon: 'rocket', help: 'Attempts ever started (survives restarts).' },
  { key: 'totalFailed', label: 'Total failed attempts', icon: 'history', help: 'Attempts ever failed (survives restarts).' },
  { key: 'lastPollAt', label: 'Last poll', icon: 'sync', help: 'Start time of the last poll of the item sources.' },
];

/** Banner rows for an engine that is up but not launching. */
export function engineStateNodes(health: HealthResponse | undefined, prefix: string): TreeNode[] {
  switch (health?.checks.engine) {
    case 'stopped':
      return [
        {
          id: `${prefix}.banner.stopped`,
          label: 'Engine stopped',
          description: 'click to start',
          icon: new vscode.ThemeIcon('debug-start', new vscode.ThemeColor('problemsWarningIcon.foreground')),
          tooltip: 'The engine is not launching items. Click to start it.',
          command: { command: Commands.start, title: 'Start Engine' },
        },
      ];
    case 'restricted':
      return [
        {
          id: `${prefix}.banner.restricted`,
          label: 'Workspace not trusted',
          description: 'nothing is launched',
          icon: new vscode.ThemeIcon('shield', new vscode.ThemeColor('problemsWarningIcon.foreground')),
          tooltip: 'In Restricted Mode the engine launches nothing. Click to manage Workspace Trust.',
          command: { command: 'workbench.trust.manage', title: 'Manage Workspace Trust' },
        },
      ];
    default:
      return [];
  }
}

export function statsNodes(stats: StatsOverview | undefined, health: HealthResponse | undefined, error?: string): TreeNode[] {
  if (!stats) return error ? [errorNode('stats', error)] : [];
  const rows = STAT_ROWS.map((r): TreeNode => {
    const value = stats[r.key];
    const isTime = r.key === 'lastPollAt';
    const tooltip = safeMarkdown();
    tooltip.appendMarkdown(`**${r.label}**\n\n${r.help}`);
    if (isTime && value) tooltip.appendMarkdown('\n\n').appendText(String(value));
    return {
      id: `stats.${r.key}`,
      label: r.label,
      description: isTime ? (value ? `${formatTime(value as string)} (${formatAgo(value as string)})` : 'never') : String(value),
      tooltip,
      icon: new vscode.ThemeIcon(r.icon, r.color ? new vscode.ThemeColor(r.color) : undefined),
    };
  });
  return [...engineStateNodes(health, 'stats'), ...rows, ...(error ? [errorNode('stats', error)] : [])];
}

export function errorNode(prefix: string, message: string): TreeNode {
  const tooltip = safeMarkdown();
  tooltip.appendText(message);
  return {
    id: `${prefix}.error`,
    label: message,
    tooltip,
    icon: new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground')),
  };
}
