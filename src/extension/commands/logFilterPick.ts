// "Filter Logs…": three short steps (actions, minimum level, text); Escape at any step cancels
// and keeps the current filter.
import * as vscode from 'vscode';
import { LOG_ACTIONS, LOG_LEVELS, type LogLevel } from '../../shared/api';
import type { LogFilter } from '../../shared/logFilter';
import { actionIcon } from '../views/format';

export async function pickLogFilter(current: LogFilter): Promise<LogFilter | undefined> {
  const actionItems = LOG_ACTIONS.map((a) => ({
    label: a,
    iconPath: actionIcon(a),
    picked: current.actions?.includes(a) ?? false,
    action: a,
  }));
  const actions = await vscode.window.showQuickPick(actionItems, {
    title: 'Filter Logs (1/3): actions',
    placeHolder: 'Pick the actions to show (none picked = all actions)',
    canPickMany: true,
    ignoreFocusOut: true,
  });
  if (!actions) return undefined;

  const levelItems = [
    { label: 'Any level', level: undefined as LogLevel | undefined },
    ...LOG_LEVELS.map((l) => ({ label: `${l} and above`, level: l })),
  ].map((i) => ({ ...i, description: i.level === current.level ? 'current' : undefined }));
  const level = await vscode.window.showQuickPick(levelItems, {
    title: 'Filter Logs (2/3): minimum level',
    placeHolder: 'Show entries at this level or above',
    ignoreFocusOut: true,
  });
  if (!level) return undefined;

  const text = await vscode.window.showInputBox({
    title: 'Filter Logs (3/3): text',
    prompt: 'Words that must start words of the message (empty = any message)',
    placeHolder: 'e.g. exit code',
    value: current.q ?? '',
    ignoreFocusOut: true,
  });
  if (text === undefined) return undefined;

  return { actions: actions.map((a) => a.action), level: level.level, q: text, itemId: current.itemId };
}
