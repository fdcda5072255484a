// Shared by the extension-host tests: the extension's API object and polling helpers. No fake
// timers here: the engine is a real process and the UI updates over a real event stream.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ItemDetail } from '../../src/shared/api';
import { writeQueueItem } from '../../src/extension/queue';
import type { EngineMonitorApi } from '../../src/extension/extension';
import type { TreeNode } from '../../src/extension/views/nodeTree';
import type { ViewName } from '../../src/extension/views/treeViews';
// The engine's own liveness check (signal 0; EPERM means alive), re-exported for the suites.
export { isAlive } from '../../src/shared/processAlive';

export const EXTENSION_ID = 'engine-monitor.engine-monitor';

export async function getApi(): Promise<EngineMonitorApi> {
  const ext = vscode.extensions.getExtension<EngineMonitorApi>(EXTENSION_ID);
  assert.ok(ext, `extension ${EXTENSION_ID} is not installed`);
  return ext.isActive ? ext.exports : await ext.activate();
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value that is not undefined/false, or fails with `what`. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await sleep(200);
  }
}

/** Waits until the engine answers and the views have their first snapshot. */
/**
 * Makes `item` the quick pick's active entry and accepts it, as Enter would. The extension host
 * sends a quick pick's changes to the window on a timer of 0 ms, while a command goes at once:
 * accepting right after the change could reach the window first and accept what it showed before
 * (or nothing). One turn of the timers sends the change (its timer is older) before the command.
 */
export async function acceptInQuickPick(qp: vscode.QuickPick<vscode.QuickPickItem>, item: vscode.QuickPickItem): Promise<void> {
  qp.activeItems = [item];
  await new Promise<void>((r) => setTimeout(r, 0));
  await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
}

export async function waitForEngine(api: EngineMonitorApi, timeoutMs = 60_000): Promise<string> {
  return waitFor('the engine to be connected', () => api._testing.model.available && api.baseUrl(), timeoutMs);
}

/** GET a JSON endpoint of the engine the way a script would (plain fetch, its own request). */
export async function getJson<T>(api: EngineMonitorApi, pathAndQuery: string): Promise<T> {
  const base = api.baseUrl();
  assert.ok(base, 'no engine URL');
  const token = vscode.workspace.getConfiguration('engineMonitor').get<string>('server.token');
  const get = () => fetch(base + pathAndQuery, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  // A pooled keep-alive socket to an engine that was just restarted fails once: retry like a client would.
  const res = await get().catch(get);
  return (await res.json()) as T;
}

/** The nodes a view shows now (roots and, recursively, their children). */
export function viewNodes(api: EngineMonitorApi, view: ViewName): TreeNode[] {
  const out: TreeNode[] = [];
  const walk = (nodes: readonly TreeNode[]) => nodes.forEach((n) => (out.push(n), walk(n.children ?? [])));
  walk(api._testing.views.providers[view].getRoots());
  return out;
}

export function nodeById(api: EngineMonitorApi, view: ViewName, id: string): TreeNode | undefined {
  return viewNodes(api, view).find((n) => n.id === id);
}

/** Opens the Engine Monitor container with every view expanded (Status and Items fetch only while visible). */
export async function showViews(api: EngineMonitorApi): Promise<void> {
  await vscode.commands.executeCommand('workbench.view.extension.engineMonitor');
  for (const view of ['stats', 'health', 'status', 'logs', 'items'] as const) {
    await vscode.commands.executeCommand(`engineMonitor.${view}.focus`);
  }
  await waitFor('the Status and Items views to be visible', () =>
    api._testing.views.views.status.visible && api._testing.views.views.items.visible, 10_000);
}

/** Writes an item into the workspace's queue folder, polls, and waits until the engine knows it. */
export async function addItem(def: Record<string, unknown> & { id: string }): Promise<void> {
  const api = await getApi();
  await writeQueueItem(path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue'), def);
  await vscode.commands.executeCommand('engineMonitor.pollNow');
  await waitFor(`item ${def.id} to be known`, async () => (await getJson<{ item?: { id: string } }>(api, `/items/${encodeURIComponent(def.id)}`)).item?.id === def.id);
}

/** GET /items/{id}. */
export async function itemDetail(id: string): Promise<ItemDetail> {
  return getJson<ItemDetail>(await getApi(), `/items/${encodeURIComponent(id)}`);
}
