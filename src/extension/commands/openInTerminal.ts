// Open Attempt in Terminal: reproduce an item by hand. An integrated terminal
// in the item's cwd, with the item's env plus ENGINE_ITEM_ID / ENGINE_ATTEMPT / ENGINE_MAX_ATTEMPTS
// as the engine gives its processes, and the command typed but not run: the user reads it, edits
// it if they like, and presses Enter.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ItemDetail } from '../../shared/api';
import { itemPath } from '../output/outputTerminal';
import { commandLine, shellKindOf } from '../shellQuote';
import { Commands } from '../constants';
import { findItem, type ItemCommandServices } from './itemCommands';
import { latestAttempt, targetOf } from './itemTarget';
import type { CommandHandlers } from './register';

/** Finding the item asks with the same pick as Find Item, so it takes the item commands' services. */
export function terminalCommands(s: ItemCommandServices): CommandHandlers<typeof Commands.openInTerminal> {
  return { [Commands.openInTerminal]: (arg) => openInTerminal(s, arg) };
}

async function openInTerminal(s: ItemCommandServices, arg: unknown): Promise<vscode.Terminal | undefined> {
  if (!vscode.workspace.isTrusted) {
    // The palette hides the command in restricted mode; a lens or a stale menu may still call it.
    void vscode.window.showInformationMessage('Open Attempt in Terminal runs an item\'s command in this workspace: trust the workspace first.');
    return undefined;
  }
  const target = targetOf(arg) ?? (await findItem(s, 'Open which item\'s command in a terminal?', false));
  if (!target) return undefined;
  const detail = await s.client.get<ItemDetail>(itemPath(target.itemId));
  const attempt = target.attempt ?? latestAttempt(detail)?.attempt ?? 1;
  const cwd = localCwd(detail);
  const kind = shellKindOf(vscode.env.shell);
  const terminal = vscode.window.createTerminal({
    name: `${detail.item.name || detail.item.id} · attempt ${attempt}`,
    cwd,
    env: {
      ...detail.item.env,
      ENGINE_ITEM_ID: detail.item.id,
      ENGINE_ATTEMPT: String(attempt),
      ENGINE_MAX_ATTEMPTS: String(detail.item.maxAttempts),
    },
    iconPath: new vscode.ThemeIcon('debug-rerun'),
  });
  terminal.show();
  // false: typed, not run.
  terminal.sendText(commandLine(detail.item, kind), false);
  return terminal;
}

/**
 * The item's working folder on this machine. A local engine gives a path here. A remote engine
 * gives its own path: used when it lies inside one of this window's workspace folders (the same
 * path on both sides: a shared mount, a container with the same layout); otherwise the workspace
 * folder that holds the item's queue file (`source`, relative to the folder) stands in, and the
 * user is told.
 */
function localCwd(detail: ItemDetail): string {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const cwd = detail.item.cwd;
  if (cwd) {
    for (const f of folders) {
      const rel = path.relative(f.uri.fsPath, cwd);
      if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) return cwd;
    }
  }
  const source = detail.item.source;
  const home = folders.find((f) => f.uri.scheme === 'file' && existsSync(path.join(f.uri.fsPath, ...source.split('/')))) ?? folders[0];
  if (!home) throw new Error(`"${detail.item.id}" runs in ${cwd ?? 'its workspace folder'}, and this window has no workspace folder to open a terminal in.`);
  void vscode.window.showWarningMessage(`"${detail.item.id}" runs in ${cwd ?? '(no cwd)'}, which is not inside this window's workspace; the terminal opens in ${home.uri.fsPath} instead.`);
  return home.uri.fsPath;
}
