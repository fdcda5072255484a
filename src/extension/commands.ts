// Every command of package.json's contributes.commands, registered in one place. Each handler
// reports its own failure to the user; none throws into VS Code's generic error toast.
import * as vscode from 'vscode';
import type { ItemSummary } from '../shared/api';
import { Commands, type CommandId, Views } from './constants';
import type { Container } from './container';
import { showDashboard } from './dashboard/dashboard';
import { pickLogFilter } from './logFilterPick';
import { addItemCommand, createQueueFolderCommand, openQueueFolderCommand } from './queue';
import type { TreeNode } from './views/nodeTree';

/** An item command's argument: a tree node, an ItemSummary, or an item id. */
function itemIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object') {
    const node = arg as Partial<TreeNode> & Partial<ItemSummary>;
    if (node.item) return node.item.id;
    if (node.entry?.itemId) return node.entry.itemId;
    if (typeof node.id === 'string' && 'outcome' in node) return node.id;
  }
  return undefined;
}

function describeResult(result: unknown): string | undefined {
  if (result && typeof result === 'object') {
    const r = result as Record<string, unknown>;
    const n = r.retried ?? r.count;
    if (typeof n === 'number') return `${n} item${n === 1 ? '' : 's'}`;
  }
  if (typeof result === 'number') return `${result} item${result === 1 ? '' : 's'}`;
  return undefined;
}

export function registerCommands(c: Container): vscode.Disposable[] {
  const { context, controller, client, model, logs, queue } = c;
  const afterControl = () => model.refresh(true);

  const handlers: Record<CommandId, (...args: unknown[]) => unknown> = {
    [Commands.showStatus]: () => showDashboard(context, client),
    [Commands.start]: async () => {
      await controller.start();
      afterControl();
    },
    [Commands.stop]: async () => {
      await controller.stop();
      afterControl();
    },
    [Commands.restart]: async () => {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Restarting the engine…' },
        () => controller.restart(),
      );
    },
    [Commands.pollNow]: async () => {
      await controller.control({ command: 'pollNow' });
      afterControl();
    },
    [Commands.filterLogs]: async () => {
      const filter = await pickLogFilter(logs.filter);
      if (filter) await logs.setFilter(filter);
    },
    [Commands.clearLogFilter]: () => logs.setFilter({}),
    [Commands.refresh]: () => {
      client.reconnectNow();
      model.refresh(true);
      logs.refresh();
    },
    [Commands.copyEndpointUrl]: async () => {
      const url = client.baseUrl;
      if (!url) {
        void vscode.window.showInformationMessage('The engine is not running, so there is no endpoint yet.');
        return;
      }
      await vscode.env.clipboard.writeText(url);
      void vscode.window.setStatusBarMessage(`$(check) Copied ${url}`, 3000);
    },
    [Commands.openQueueFolder]: () => openQueueFolderCommand(queue),
    [Commands.createQueueFolder]: () => createQueueFolderCommand(queue),
    [Commands.addItem]: () => addItemCommand(queue, () => (controller.isOwner ? controller.control({ command: 'pollNow' }) : Promise.resolve())),
    [Commands.retryItem]: async (arg) => {
      let itemId = itemIdOf(arg);
      if (!itemId) {
        const failed = (await client.get<{ items: ItemSummary[] }>('/items?outcome=failed&limit=200')).items;
        if (failed.length === 0) {
          void vscode.window.showInformationMessage('No item has failed.');
          return;
        }
        const pick = await vscode.window.showQuickPick(
          failed.map((i) => ({ label: i.name, description: i.id, detail: i.lastError ?? undefined, id: i.id })),
          { placeHolder: 'Retry which failed item?' },
        );
        itemId = pick?.id;
      }
      if (!itemId) return;
      await controller.control({ command: 'retryItem', itemId });
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${itemId}`, 3000);
      afterControl();
    },
    [Commands.retryAllFailed]: async () => {
      const result = await controller.control({ command: 'retryAllFailed' });
      const what = describeResult(result);
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${what ?? 'all failed items'}`, 3000);
      afterControl();
    },
    [Commands.showItemLogs]: async (arg) => {
      const itemId = itemIdOf(arg);
      await logs.setFilter(itemId ? { itemId } : { actions: ['item_failed'] });
      await vscode.commands.executeCommand(`${Views.logs}.focus`);
    },
  };

  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        c.output.error(`${id}: ${message}`);
        void vscode.window.showErrorMessage(`Engine Monitor: ${message}`);
        return undefined;
      }
    }),
  );
}
