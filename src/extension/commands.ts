// Every command of package.json's contributes.commands, registered in one place. Each handler
// reports its own failure to the user; none throws into VS Code's generic error toast.
import * as vscode from 'vscode';
import type { ItemDetail, ItemSummary } from '../shared/api';
import { Commands, type CommandId, REMOTE_TOKEN_SECRET, STORE_PASSWORD_SECRET, Views } from './constants';
import type { Container } from './container';
import { ControlNeedsTokenError, ControlUnavailableError } from './engineController';
import { itemCommandHandlers, targetOf } from './itemCommands';
import { showDashboard } from './dashboard/dashboard';
import { pickLogFilter } from './logFilterPick';
import { openInTerminal } from './openInTerminal';
import { addItemCommand, createQueueFolderCommand, openQueueFolderCommand } from './queue';

function describeResult(result: unknown): string | undefined {
  if (result && typeof result === 'object') {
    const r = result as Record<string, unknown>;
    const n = r.retried ?? r.count;
    if (typeof n === 'number') return `${n} item${n === 1 ? '' : 's'}`;
  }
  if (typeof result === 'number') return `${result} item${result === 1 ? '' : 's'}`;
  return undefined;
}

/** The item's name from a control command's answer (the item as GET /items/{id} reports it). */
export function nameOf(result: unknown): string | undefined {
  const name = (result as Partial<ItemDetail> | undefined)?.item?.name;
  return typeof name === 'string' && name ? name : undefined;
}

async function copyEndpointUrl(url: string | undefined): Promise<void> {
  if (!url) {
    void vscode.window.showInformationMessage('The engine is not running, so there is no endpoint yet.');
    return;
  }
  await vscode.env.clipboard.writeText(url);
  void vscode.window.setStatusBarMessage(`$(check) Copied ${url}`, 3000);
}

/** Retry Item from the palette: which failed item? undefined when none failed or none was picked. */
async function pickFailedItem(c: Container): Promise<string | undefined> {
  const failed = (await c.client.get<{ items: ItemSummary[] }>('/items?outcome=failed&limit=200')).items;
  if (failed.length === 0) {
    void vscode.window.showInformationMessage('No item has failed.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    failed.map((i) => ({ label: i.name, description: i.id, detail: i.lastError ?? undefined, id: i.id })),
    { placeHolder: 'Retry which failed item?' },
  );
  return pick?.id;
}

async function setRemoteToken(c: Container): Promise<void> {
  const { context, controller } = c;
  const had = (await context.secrets.get(REMOTE_TOKEN_SECRET)) !== undefined;
  const token = await vscode.window.showInputBox({
    title: 'Remote Engine Token',
    prompt: `The token the remote engine was started with (--token). Kept in VS Code's secret storage, never in settings.${had ? ' Leave empty to remove the stored token.' : ''}`,
    password: true,
    ignoreFocusOut: true,
    validateInput: (v) => (/\s/.test(v) ? 'A token has no spaces or line breaks.' : undefined),
  });
  if (token === undefined) return;
  if (token) await context.secrets.store(REMOTE_TOKEN_SECRET, token);
  else if (had) await context.secrets.delete(REMOTE_TOKEN_SECRET);
  else return;
  const where = controller.remote ? ` for ${controller.remote}` : '; it is used when engineMonitor.remote.url is set';
  void vscode.window.setStatusBarMessage(token ? `$(key) Remote engine token stored${where}` : '$(key) Remote engine token removed', 4000);
}

/**
 * The PostgreSQL store's password (section 11), kept in SecretStorage: a settings file is plain
 * text and often committed. Storing or removing it restarts this window's engine on the store
 * (EngineController listens to the secret).
 */
async function setStorePassword(c: Container): Promise<void> {
  const { context } = c;
  const had = (await context.secrets.get(STORE_PASSWORD_SECRET)) !== undefined;
  const password = await vscode.window.showInputBox({
    title: 'Store Password',
    prompt: `The password of the user in engineMonitor.store.url. Kept in VS Code's secret storage, never in settings; the engine host gets it as PGPASSWORD.${had ? ' Leave empty to remove the stored password.' : ''}`,
    password: true,
    ignoreFocusOut: true,
  });
  if (password === undefined) return;
  if (password) await context.secrets.store(STORE_PASSWORD_SECRET, password);
  else if (had) await context.secrets.delete(STORE_PASSWORD_SECRET);
  else return;
  void vscode.window.setStatusBarMessage(password ? '$(key) Store password stored' : '$(key) Store password removed', 4000);
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
      // A stopped engine (here or remote) neither polls nor launches: a poll that seems to do
      // nothing would leave the user guessing (#21 item 5).
      if (model.health?.checks.engine === 'stopped') {
        void vscode.window.showInformationMessage('The engine is stopped: start it to poll.', 'Start Engine').then((choice) => {
          if (choice) void vscode.commands.executeCommand(Commands.start);
        });
        return;
      }
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
    [Commands.copyEndpointUrl]: () => copyEndpointUrl(client.baseUrl),
    [Commands.openQueueFolder]: () => openQueueFolderCommand(queue),
    [Commands.createQueueFolder]: () => createQueueFolderCommand(queue),
    [Commands.addItem]: () => addItemCommand(queue, () => (controller.isOwner ? controller.control({ command: 'pollNow' }) : Promise.resolve())),
    [Commands.retryItem]: async (arg) => {
      const itemId = targetOf(arg)?.itemId ?? (await pickFailedItem(c));
      if (!itemId) return;
      const result = await controller.control({ command: 'retryItem', itemId });
      // The name the user gave the item, as everywhere else; the id only if the answer lacks it (#21 item 12).
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${nameOf(result) ?? itemId}`, 3000);
      afterControl();
    },
    [Commands.retryAllFailed]: async () => {
      const result = await controller.control({ command: 'retryAllFailed' });
      const what = describeResult(result);
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${what ?? 'all failed items'}`, 3000);
      afterControl();
    },
    [Commands.showItemLogs]: async (arg) => {
      const itemId = targetOf(arg)?.itemId;
      await logs.setFilter(itemId ? { itemId } : { actions: ['item_failed'] });
      await vscode.commands.executeCommand(`${Views.logs}.focus`);
    },
    [Commands.setRemoteToken]: () => setRemoteToken(c),
    [Commands.openInTerminal]: (arg) => openInTerminal(c, arg),
    [Commands.setStorePassword]: () => setStorePassword(c),
    ...itemCommandHandlers(c),
  };

  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (err instanceof ControlNeedsTokenError) {
          // The remote engine has no token, so it takes no control over HTTP: say how to give it one.
          void vscode.window.showWarningMessage(message, 'Set Remote Engine Token…').then((choice) => {
            if (choice) void vscode.commands.executeCommand(Commands.setRemoteToken);
          });
          return undefined;
        }
        if (err instanceof ControlUnavailableError) {
          // Not a failure: this window cannot control that engine, and says where to.
          void vscode.window.showInformationMessage(message);
          return undefined;
        }
        c.output.error(`${id}: ${message}`);
        void vscode.window.showErrorMessage(`Engine Monitor: ${message}`);
        return undefined;
      }
    }),
  );
}
