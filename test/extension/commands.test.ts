import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HealthResponse, ItemSummary, LogEntry, StatusResponse } from '../../src/shared/api';
import { newItemId, writeQueueItem } from '../../src/extension/queue';
import { getApi, getJson, nodeById, showViews, waitFor, waitForEngine } from './helpers';

describe('Commands', () => {
  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
  });

  it('Stop Engine stops launching (health degraded) and Start Engine resumes', async function () {
    this.timeout(60_000);
    const api = await getApi();
    await vscode.commands.executeCommand('engineMonitor.stop');
    await waitFor('/health to report the engine stopped', async () => {
      const h = await getJson<HealthResponse>(api, '/health');
      return h.checks.engine === 'stopped' && h.status === 'degraded';
    });
    await waitFor('the status bar to say stopped', () => api._testing.statusBar.text.includes('stopped'));
    await waitFor('the Stats view to offer Start', () => nodeById(api, 'stats', 'stats.banner.stopped'));
    await vscode.commands.executeCommand('engineMonitor.start');
    await waitFor('/health to report the engine running', async () => (await getJson<HealthResponse>(api, '/health')).checks.engine === 'running');
    await waitFor('the status bar to say healthy', () => api._testing.statusBar.text.includes('healthy'));
  });

  it('Poll Now starts a poll', async () => {
    const api = await getApi();
    const before = (await getJson<StatusResponse>(api, '/status')).engine.polls;
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('a new poll', async () => (await getJson<StatusResponse>(api, '/status')).engine.polls > before, 10_000);
  });

  it('Add Item writes a queue file atomically and the item shows up in the Items view', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const folder = vscode.workspace.workspaceFolders![0];
    const queueDir = path.join(folder.uri.fsPath, '.engine', 'queue');
    const id = newItemId('Extension test item');
    const file = await writeQueueItem(queueDir, { id, name: 'Extension test item', command: 'node -e "process.exit(0)"', shell: true });
    assert.equal(path.basename(file), `${id}.json`);
    const leftovers = (await fs.readdir(queueDir)).filter((f) => f.endsWith('.tmp'));
    assert.deepEqual(leftovers, [], 'no temporary file left behind');
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor(`item ${id} in the Items view`, () =>
      ['running', 'waiting', 'launched', 'failed'].some((g) => nodeById(api, 'items', `items.${g}.${id}`)));
    await waitFor(`item ${id} launched`, () => nodeById(api, 'items', `items.launched.${id}`));
  });

  it('Retry Item makes a failed item pending again', async function () {
    this.timeout(60_000);
    const api = await getApi();
    // The demo's broken-migration always fails (2 attempts, 1 s backoff).
    const failed = await waitFor('a failed item', async () => {
      const list = await getJson<{ items: ItemSummary[] }>(api, '/items?outcome=failed&limit=100');
      return list.items.find((i) => i.id === 'broken-migration') ?? list.items[0];
    });
    const node = await waitFor('the failed item in the Items view', () => nodeById(api, 'items', `items.failed.${failed.id}`));
    assert.equal(node.contextValue, 'item.failed');
    // As the inline action invokes it: with the tree node.
    await vscode.commands.executeCommand('engineMonitor.retryItem', node);
    await waitFor('an item_retried log entry', async () => {
      const entries = await getJson<LogEntry[]>(api, `/logs?action=item_retried&item=${encodeURIComponent(failed.id)}&limit=1`);
      return entries.length > 0;
    });
  });

  it('Retry All Failed retries every failed item', async function () {
    this.timeout(60_000);
    const api = await getApi();
    const failed = await waitFor('failed items', async () => {
      const list = await getJson<{ total: number }>(api, '/items?outcome=failed&limit=1');
      return list.total > 0 && list.total;
    }, 30_000);
    const before = (await getJson<LogEntry[]>(api, '/logs?action=item_retried&limit=1000')).length;
    await vscode.commands.executeCommand('engineMonitor.retryAllFailed');
    await waitFor(`${failed} more item_retried entries`, async () =>
      (await getJson<LogEntry[]>(api, '/logs?action=item_retried&limit=1000')).length >= before + failed);
  });

  it('Show Engine Status opens the dashboard', async () => {
    await vscode.commands.executeCommand('engineMonitor.showStatus');
    await waitFor('a dashboard tab', () =>
      vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .some((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.includes('engineMonitor.dashboard')),
    10_000);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Refresh, Clear Log Filter and Copy Endpoint URL run without error', async () => {
    await vscode.commands.executeCommand('engineMonitor.refresh');
    await vscode.commands.executeCommand('engineMonitor.clearLogFilter');
    await vscode.commands.executeCommand('engineMonitor.copyEndpointUrl');
  });
});
