// Health view: the overall status and each check of /health, coloured by theme.
import * as vscode from 'vscode';
import type { DatabaseCheck, EngineState, HealthResponse } from '../../shared/api';
import { formatTime, healthIcon, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { engineStateNodes, errorNode } from './statsNodes';

const STATUS_HELP = {
  healthy: 'The database is fine and the engine is launching.',
  degraded: 'The engine is stopped or restricted (untrusted workspace): nothing is launched.',
  unhealthy: 'The database failed, or the engine stalled (no poll for more than 3 poll intervals).',
};

function checkIcon(value: DatabaseCheck | EngineState): vscode.ThemeIcon {
  switch (value) {
    case 'ok':
    case 'running':
      return healthIcon('healthy');
    case 'stopped':
    case 'restricted':
      return healthIcon('degraded');
    default:
      return healthIcon('unhealthy');
  }
}

export function healthNodes(health: HealthResponse | undefined, error?: string): TreeNode[] {
  if (!health) return error ? [errorNode('health', error)] : [];
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown(`**${cap(health.status)}**\n\n${STATUS_HELP[health.status] ?? ''}\n\n`);
  tooltip.appendText(`${health.engine} ${health.version}, checked ${formatTime(health.timestamp)}`);
  const nodes: TreeNode[] = [
    {
      id: 'health.status',
      label: cap(health.status),
      description: `${health.engine} ${health.version}`,
      tooltip,
      icon: healthIcon(health.status),
    },
    ...Object.entries(health.checks).map(([name, value]): TreeNode => ({
      id: `health.check.${name}`,
      label: cap(name),
      description: String(value),
      tooltip: `${cap(name)} check: ${String(value)}`,
      icon: checkIcon(value),
    })),
    ...engineStateNodes(health, 'health'),
  ];
  if (error) nodes.push(errorNode('health', error));
  return nodes;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
