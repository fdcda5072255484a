// Getting rid of what the engine has finished with, in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): a deliberately cancelled item leaves Failed and the status bar's
// "1 failed" goes with Remove Item from the palette; Run Again launches a launched item once more
// from the Items view; Retry Item is in the palette with a pick of the failed items; Clear Finished
// asks, then removes every launched and failed item. Screenshots land in
// test-results/screenshots/remove-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { HealthResponse, ItemDetail, LogEntry, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, runPickCommand, screenshot, type Workbench, viewPane } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped)/ }).first();
}

async function rowLabels(view: Locator): Promise<string[]> {
  return view.locator('.monaco-list-row').evaluateAll((els) => els.map((el) => el.querySelector('.label-name')?.textContent?.trim() ?? ''));
}

describe('Remove Item, Run Again, Retry Item and Clear Finished (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;
  const stats = async () => (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-remove-ui-'));
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    writeFileSync(
      path.join(queue, 'items.json'),
      JSON.stringify([
        { id: 'deploy', name: 'Deploy preview', command: node, args: ['-e', 'setTimeout(() => {}, 300000)'] },
        { id: 'lint', name: 'Lint', command: node, args: ['-e', '0'] },
        { id: 'flaky', name: 'Flaky test', command: node, args: ['-e', 'process.exit(2)'], maxAttempts: 1 },
        { id: 'nightly', name: 'Nightly export', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
      ]),
    );
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300 },
    });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('a running engine', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 30_000);
    await waitUntil('lint launched, flaky failed, deploy running', async () => {
      const s = await stats();
      return s.launched === 1 && s.failed === 1 && s.running === 1;
    }, 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('Retry Item is in the palette and offers the failed items', async () => {
    await runPickCommand(wb.page, 'Engine Monitor: Retry Item', 'Flaky test', { beforePick: async () => console.log(`      screenshot: ${await screenshot(wb.page, 'remove-retry-pick')}`) });
    await waitUntil('flaky retried', async () => (await getJson<LogEntry[]>(`${baseUrl}/logs?action=item_retried&item=flaky`)).length === 1, 20_000);
    // It fails again (one attempt): back to one failed item.
    await waitUntil('flaky failed again', async () => (await getJson<ItemDetail>(`${baseUrl}/items/flaky`)).attempts.length === 2 && (await stats()).failed === 1, 30_000);
  });

  it('a cancelled item leaves Failed and the status bar with Remove Item; the log keeps it', async () => {
    const page = wb.page;
    await runPickCommand(page, 'Engine Monitor: Cancel Item', 'Deploy preview');
    await waitUntil('the status bar to say 2 failed', async () => /2 failed/.test((await statusBarItem(page).textContent()) ?? ''), 20_000);

    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const items = viewPane(page, 'Items');
    for (const other of ['Logs', 'Status']) {
      const header = viewPane(page, other).locator('.pane-header');
      if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }
    await waitUntil('Deploy preview under Failed', async () => (await rowLabels(items)).includes('Deploy preview'), 20_000);
    const before = await stats();

    await runPickCommand(page, 'Engine Monitor: Remove Item', 'Deploy preview', { beforePick: async () => console.log(`      screenshot: ${await screenshot(wb.page, 'remove-pick')}`) });
    await waitUntil('the status bar to say 1 failed', async () => /(^|\D)1 failed/.test((await statusBarItem(page).textContent()) ?? ''), 20_000);
    await waitUntil('Deploy preview gone from the Items view', async () => !(await rowLabels(items)).includes('Deploy preview'), 20_000);
    console.log(`      screenshot: ${await screenshot(page, 'remove-removed')}`);
    const after = await stats();
    assert.deepEqual(
      [after.total, after.failed, after.totalLaunches, after.totalFailed],
      [before.total - 1, before.failed - 1, before.totalLaunches, before.totalFailed],
      'total and failed drop; the totals keep the history',
    );
    const entries = await getJson<LogEntry[]>(`${baseUrl}/logs?item=deploy`);
    assert.ok(entries.some((e) => e.action === 'item_removed'), 'the removal is logged');
    assert.ok(entries.some((e) => e.action === 'launch_cancelled'), 'and the history stays');
  });

  it('Run Again on a launched item, from the Items view', async () => {
    const page = wb.page;
    const items = viewPane(page, 'Items');
    // Launched is collapsed by default: open it.
    const group = items.locator('.monaco-list-row[aria-level="1"]', { hasText: 'Launched' }).first();
    if ((await group.getAttribute('aria-expanded')) === 'false') await group.click();
    const row = items.locator('.monaco-list-row', { hasText: 'Lint' }).first();
    await row.click({ button: 'right' });
    const menuItem = page.locator('.context-view .action-item', { hasText: /^Run Again/ }).first();
    await menuItem.waitFor({ timeout: 10_000 });
    console.log(`      screenshot: ${await screenshot(page, 'remove-run-again-menu')}`);
    await menuItem.click();
    await waitUntil('lint launched twice', async () => {
      const d = await getJson<ItemDetail>(`${baseUrl}/items/lint`);
      return d.outcome === 'launched' && d.attempts.filter((a) => a.outcome === 'succeeded').length === 2;
    }, 30_000);
  });

  it('Clear Finished asks, then removes every launched and failed item; the waiting one stays', async () => {
    const page = wb.page;
    await runCommand(page, 'Engine Monitor: Clear Finished');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    assert.match((await dialog.textContent()) ?? '', /Remove every launched and failed item\?/);
    await sleep(300);
    console.log(`      screenshot: ${await screenshot(page, 'remove-clear-finished-ask')}`);
    await dialog.locator('.monaco-button', { hasText: /^Clear Finished$/ }).click();
    await waitUntil('only the waiting item left', async () => {
      const s = await stats();
      return s.total === 1 && s.pending === 1 && s.launched === 0 && s.failed === 0;
    }, 20_000);
    const items = viewPane(page, 'Items');
    await waitUntil('the Items view to show only Nightly export', async () => {
      const labels = await rowLabels(items);
      return !labels.includes('Lint') && !labels.includes('Flaky test') && labels.includes('Nightly export');
    }, 20_000);
    await waitUntil('no failed count in the status bar', async () => !/failed/.test((await statusBarItem(page).textContent()) ?? ''), 20_000);
    console.log(`      screenshot: ${await screenshot(page, 'remove-cleared')}`);
  });
});
