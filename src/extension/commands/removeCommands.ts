// Remove Item, Clear Finished and Run Again: how a user gets rid of an item the engine has
// finished with (a deliberately cancelled one sitting in Failed, a launched one they no longer care
// about) and how a launched item runs once more. Removing keeps the log and the totals; a running
// item is cancelled first, so the engine asks before it ends a process.
import * as vscode from 'vscode';
import type { ItemDetail, ItemSummary } from '../../shared/api';
import { itemPath } from '../output/outputTerminal';
import { Commands } from '../constants';
import type { ItemCommandServices } from './itemCommands';
import { nameOf } from './itemCommands';
import { stateOf, targetOf } from './itemTarget';
import type { CommandHandlers } from './register';

const PICK_LIMIT = 500;

/** An item picked from those listed by `query` (`/items?…`); undefined when none or none picked. */
async function pickItem(s: ItemCommandServices, query: string, placeHolder: string, none: string): Promise<ItemSummary | undefined> {
  const items = (await s.client.get<{ items: ItemSummary[] }>(`/items?${query ? `${query}&` : ''}limit=${PICK_LIMIT}`)).items;
  if (items.length === 0) {
    void vscode.window.showInformationMessage(none);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    items.map((i) => ({ label: i.name || i.id, description: `${stateOf(i)} · ${i.id}`, detail: i.lastError ?? undefined, item: i })),
    { placeHolder, matchOnDescription: true },
  );
  return pick?.item;
}

/** The item an argument names, as the engine reports it now (for its name and state). */
async function detailOf(s: ItemCommandServices, itemId: string): Promise<{ id: string; name: string; state: string }> {
  const d = await s.client.get<ItemDetail>(itemPath(itemId));
  return { id: d.item.id, name: d.item.name, state: d.state };
}

async function removeItem(s: ItemCommandServices, arg: unknown): Promise<void> {
  const given = targetOf(arg)?.itemId;
  const item = given ? await detailOf(s, given) : await pickItem(s, '', 'Remove which item? (the log keeps its history)', 'There is no item to remove.');
  if (!item) return;
  const name = item.name || item.id;
  if ((item.state ?? '') === 'running') {
    const choice = await vscode.window.showWarningMessage(`"${name}" is running. Cancel it (its process is ended) and remove it?`, { modal: true }, 'Cancel and Remove');
    if (choice !== 'Cancel and Remove') return;
  }
  await s.controller.control({ command: 'removeItem', itemId: item.id });
  void vscode.window.setStatusBarMessage(`$(trash) Removed ${name}`, 3000);
  s.model.refresh(true);
}

async function clearFinished(s: ItemCommandServices): Promise<void> {
  const choice = await vscode.window.showInformationMessage(
    'Remove every launched and failed item?',
    { modal: true, detail: 'Pending and running items stay. The log, and the counts of launches and failures ever, keep their history.' },
    'Clear Finished',
  );
  if (choice !== 'Clear Finished') return;
  const removed = await s.controller.control({ command: 'clearFinished' });
  // A remote engine answers with its /status, not a count.
  const what = typeof removed === 'number' ? `${removed} finished item${removed === 1 ? '' : 's'}` : 'the finished items';
  void vscode.window.setStatusBarMessage(`$(clear-all) Removed ${what}`, 3000);
  s.model.refresh(true);
}

async function runAgain(s: ItemCommandServices, arg: unknown): Promise<void> {
  const itemId = targetOf(arg)?.itemId ?? (await pickItem(s, 'outcome=launched', 'Run which launched item again?', 'No item has launched yet.'))?.id;
  if (!itemId) return;
  const result = await s.controller.control({ command: 'runAgain', itemId });
  void vscode.window.setStatusBarMessage(`$(refresh) Running ${nameOf(result) ?? itemId} again`, 3000);
  s.model.refresh(true);
}

export function removeCommands(s: ItemCommandServices): CommandHandlers<(typeof Commands)['removeItem' | 'clearFinished' | 'runAgain']> {
  return {
    [Commands.removeItem]: (arg) => removeItem(s, arg),
    [Commands.clearFinished]: () => clearFinished(s),
    [Commands.runAgain]: (arg) => runAgain(s, arg),
  };
}
