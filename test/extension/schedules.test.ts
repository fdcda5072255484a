// The Schedules view against the real engine: a schedule template written
// into the queue folder shows as a row with its next run and its cron expression, and Hold and
// Release (the same commands as for items, given the row) disable and enable it.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ScheduleSummary } from '../../src/shared/api';
import { writeQueueItem } from '../../src/extension/queue';
import type { TreeNode } from '../../src/extension/views/nodeTree';
import { getApi, getJson, nodeById, waitFor, waitForEngine } from './helpers';

const CRON = '0 2 * * * (Europe/Berlin)';

describe('Schedules view', () => {
  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await vscode.commands.executeCommand('workbench.view.extension.engineMonitor');
    await vscode.commands.executeCommand('engineMonitor.schedules.focus');
    await waitFor('the Schedules view to be visible', () => api._testing.views.views.schedules.visible, 10_000);
  });

  it('Schedules view lists a template with its next run and cron; Hold disables it, Release enables it again', async function () {
    this.timeout(90_000);
    const api = await getApi();
    const queueDir = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
    await writeQueueItem(queueDir, { id: 'nightly', command: '/bin/true', schedule: { cron: '0 2 * * *', timezone: 'Europe/Berlin' } });
    await vscode.commands.executeCommand('engineMonitor.pollNow');

    const row = (): TreeNode | undefined => nodeById(api, 'schedules', 'schedules.nightly');
    const enabled = await waitFor('the nightly row', () => row()?.contextValue === 'schedule.enabled' && row(), 30_000);
    assert.equal(enabled.label, 'nightly');
    assert.match(enabled.description ?? '', new RegExp(`^next in .+ · ${escape(CRON)}$`));
    const [listed] = (await getJson<ScheduleSummary[]>(api, '/schedules')).filter((s) => s.id === 'nightly');
    assert.equal(listed?.enabled, true);
    assert.ok(listed.nextRunAt, 'the engine has a next run');
    const tooltip = resolveTooltip(api._testing.views.providers.schedules, enabled);
    for (const field of ['Schedule:** 0 2 * * *', 'Timezone:** Europe/Berlin', `Overlap:** ${listed.overlap}`, 'Last run:** never']) {
      assert.ok(tooltip.includes(field), `tooltip has ${field}: ${tooltip}`);
    }

    // The row is what the inline action passes to the command.
    await vscode.commands.executeCommand('engineMonitor.holdItem', enabled);
    const held = await waitFor('the row to say disabled', () => row()?.contextValue === 'schedule.disabled' && row(), 30_000);
    assert.equal(held.description, `disabled · ${CRON}`);
    assert.equal((await getJson<ScheduleSummary[]>(api, '/schedules')).find((s) => s.id === 'nightly')?.enabled, false);

    await vscode.commands.executeCommand('engineMonitor.releaseItem', held);
    const released = await waitFor('the row to be enabled again', () => row()?.contextValue === 'schedule.enabled' && row(), 30_000);
    assert.match(released.description ?? '', new RegExp(`^next in .+ · ${escape(CRON)}$`));
    assert.equal((await getJson<ScheduleSummary[]>(api, '/schedules')).find((s) => s.id === 'nightly')?.enabled, true);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function resolveTooltip(provider: { getTreeItem(n: TreeNode): vscode.TreeItem; resolveTreeItem(i: vscode.TreeItem, n: TreeNode): vscode.TreeItem }, node: TreeNode): string {
  const tooltip = provider.resolveTreeItem(provider.getTreeItem(node), node).tooltip;
  const md = typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? '');
  // Engine strings are escaped Markdown text: read them as the user does.
  return md.replace(/&nbsp;/g, ' ').replace(/\\([^\n])/g, '$1');
}
