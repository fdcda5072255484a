// What a new user hit in the editor, in a real VS Code
// (code-server + Chromium, see test/vscode/codeServer.ts): the walkthrough's "Add your first item"
// ticks when the engine discovers an item written by hand; every entry of the output channel has its
// own timestamp and level; Poll Now is not offered while the engine is stopped, and says why from the
// palette; the sidebar and the dashboard show the same time for the same log entry; Retry Item names
// the item, not its id; the Logs view says after a reload that its filter is still on.
// Screenshots land in test-results/screenshots/newuser-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { HealthResponse, ItemDetail, LogEntry } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, filterLogsByAction, openWorkbench, runCommand, runPickCommand, screenshot, waitForExtension, waitForWorkbench, type Workbench, viewPane } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';
import { dashboardFrame } from '../vscode/workbenchUi';

const node = process.execPath;

/** Writes a queue file the way an editor or a script would: whole, by a rename. */
function writeQueueFile(queue: string, name: string, text: string): void {
  const tmp = path.join(queue, `${name}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, path.join(queue, name));
}

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped|restricted|stalled)/ }).first();
}

async function clearNotifications(page: Page): Promise<void> {
  await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await page.mouse.move(700, 500);
  await sleep(300);
}

describe('What a new user hit: walkthrough, output channel, Poll Now, times, names, filter (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let queue: string;
  let baseUrl: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-newuser-ui-'));
    queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300 },
    });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('a running engine', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 30_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('the walkthrough ticks "Add your first item" when the engine discovers an item written by hand', async () => {
    const page = wb.page;
    await runPickCommand(page, 'Welcome: Open Walkthrough...', 'Get Started with Engine Monitor');
    const step = page.locator('.getting-started-step', { hasText: 'Add your first item' }).first();
    await step.waitFor({ timeout: 20_000 });
    const ticked = async (s: Locator) => (await s.getAttribute('aria-checked')) === 'true';
    assert.equal(await ticked(step), false, 'unticked while the queue is empty');

    // Not through Add Item…: a file written by hand (or by the notification's editor) is how most
    // items arrive.
    writeQueueFile(queue, 'hello.json', JSON.stringify({ id: 'hello', name: 'Say hello', command: node, args: ['-e', "console.log('hello')"] }));
    await waitUntil('the engine to discover hello', async () => (await getJson<ItemDetail>(`${baseUrl}/items/hello`)).item.id === 'hello', 30_000);
    await waitUntil('the step to be ticked', () => ticked(step), 15_000).finally(async () => {
      console.log(`      screenshot: ${await screenshot(page, 'newuser-walkthrough')}`);
    });
    await runCommand(page, 'View: Close All Editors').catch(() => undefined);
  });

  it('two entries logged at once each get their own timestamp and level in the output channel', async () => {
    const page = wb.page;
    // One file, two items: one poll discovers both, so their entries reach the window together.
    writeQueueFile(
      queue,
      'pair.jsonl',
      [
        { id: 'pair-first', name: 'Pair first', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
        { id: 'pair-second', name: 'Pair second', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
      ].map((i) => JSON.stringify(i)).join('\n') + '\n',
    );
    await waitUntil('both pair items discovered', async () =>
      (await getJson<LogEntry[]>(`${baseUrl}/logs?action=item_discovered`)).filter((e) => e.itemId?.startsWith('pair-')).length === 2, 30_000);
    await runPickCommand(page, 'Output: Show Output Channels...', /^Engine Monitor$/);
    const lines = page.locator('.part.panel .view-lines .view-line');
    const read = async () => (await lines.evaluateAll((els) => els.map((e) => (e.textContent ?? '').replace(/\u00a0/g, ' ')))).filter((l) => l.trim());
    const shown = await waitUntil('both discoveries in the channel', async () => {
      const all = await read();
      return all.some((l) => l.includes('[pair-first]')) && all.some((l) => l.includes('[pair-second]')) && all;
    }, 20_000);
    console.log(`      screenshot: ${await screenshot(page, 'newuser-output-channel')}`);
    const stamped = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[info\] item_discovered \[pair-/;
    for (const id of ['pair-first', 'pair-second']) {
      const line = shown.find((l) => l.includes(`[${id}]`));
      assert.match(line ?? '', stamped, `the line of ${id} has its own timestamp and level: ${JSON.stringify(shown)}`);
    }
    await runCommand(page, 'View: Hide Panel').catch(() => undefined);
  });

  it('Poll Now is not offered in the Stats view while the engine is stopped, and says why from the palette', async () => {
    const page = wb.page;
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const stats = viewPane(page, 'Stats');
    const pollAction = stats.locator('.pane-header .actions .action-label[aria-label="Poll Now"]');
    await stats.locator('.pane-header').hover();
    await waitUntil('Poll Now in the Stats view while running', async () => (await pollAction.count()) === 1, 15_000);

    await runCommand(page, 'Engine Monitor: Stop Engine');
    await waitUntil('the status bar to say stopped', async () => /Engine stopped/.test((await statusBarItem(page).textContent()) ?? ''), 20_000);
    await clearNotifications(page);
    await stats.locator('.pane-header').hover();
    await waitUntil('no Poll Now while stopped', async () => (await pollAction.count()) === 0, 10_000);
    console.log(`      screenshot: ${await screenshot(page, 'newuser-stopped-no-poll')}`);

    await runCommand(page, 'Engine Monitor: Poll Now');
    const toast = page.locator('.notification-toast', { hasText: /The engine is stopped/ }).first();
    await toast.waitFor({ timeout: 10_000 });
    assert.match((await toast.textContent()) ?? '', /start it to poll/);
    await sleep(500); // the toast fades in
    console.log(`      screenshot: ${await screenshot(page, 'newuser-poll-while-stopped')}`);
    await toast.locator('.monaco-button', { hasText: 'Start Engine' }).click();
    await waitUntil('the engine running again', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 20_000);
    await stats.locator('.pane-header').hover();
    await waitUntil('Poll Now back', async () => (await pollAction.count()) === 1, 15_000);
  });

  it('the sidebar and the dashboard show the same time for the same log entry', async () => {
    const page = wb.page;
    const [entry] = await getJson<LogEntry[]>(`${baseUrl}/logs?action=item_discovered&item=pair-first`);
    assert.ok(entry, 'the discovery of pair-first is logged');
    const logs = viewPane(page, 'Logs');
    const row = logs.locator('.monaco-list-row', { hasText: entry.message }).first();
    await row.waitFor({ timeout: 20_000 });
    const sidebarTime = ((await row.locator('.label-description').textContent()) ?? '').split(' · ')[0].trim();

    await runCommand(page, 'Engine Monitor: Show Engine Status');
    const frame = await dashboardFrame(page);
    const cell = frame.locator(`tr[data-id="${entry.id}"] td.col-time time`);
    await cell.waitFor({ timeout: 30_000 });
    const dashboardTime = ((await cell.textContent()) ?? '').trim();
    console.log(`      screenshot: ${await screenshot(page, 'newuser-times')}`);
    assert.equal(dashboardTime, sidebarTime, 'one format for the same moment in both places');
    await runCommand(page, 'View: Close All Editors').catch(() => undefined);
  });

  it('Retry Item names the item it retries, not its id', async () => {
    const page = wb.page;
    writeQueueFile(queue, 'deploy-prod.json', JSON.stringify({ id: 'deploy-prod', name: 'Deploy to production', command: node, args: ['-e', 'process.exit(2)'], maxAttempts: 1 }));
    await waitUntil('deploy-prod to fail', async () => (await getJson<ItemDetail>(`${baseUrl}/items/deploy-prod`).catch(() => undefined))?.outcome === 'failed', 30_000);
    // The notification's Retry runs Retry Item with the item's id, as the Items view's button does.
    const toast = page.locator('.notification-toast', { hasText: /"Deploy to production" failed for good/ }).first();
    await toast.waitFor({ timeout: 20_000 });
    await toast.locator('.monaco-button', { hasText: /^Retry$/ }).click();
    const message = page.locator('.part.statusbar .statusbar-item', { hasText: /Retrying/ }).first();
    await message.waitFor({ timeout: 5_000 });
    const text = (await message.textContent()) ?? '';
    console.log(`      screenshot: ${await screenshot(page, 'newuser-retrying')}`);
    await clearNotifications(page);
    assert.match(text, /Retrying Deploy to production/);
  });

  it('after a reload the Logs view still says which filter it applies', async () => {
    const page = wb.page;
    await filterLogsByAction(page, 'item_discovered');
    const logs = viewPane(page, 'Logs');
    const header = logs.locator('.pane-header');
    await waitUntil('a filter in the Logs view description', async () => /Filter:/.test((await header.textContent()) ?? ''), 15_000);
    const before = (await header.textContent()) ?? '';

    await runCommand(page, 'Developer: Reload Window');
    await sleep(2000);
    await waitForWorkbench(page);
    await waitForExtension(page, REPO_ROOT);
    // (A click on the activity-bar icon would hide a side bar that is already open.)
    if (!(await logs.isVisible())) await runCommand(page, 'Engine Monitor: Focus on Logs View');
    await logs.locator('.monaco-list-row').first().waitFor({ timeout: 30_000 }).finally(async () => {
      console.log(`      screenshot: ${await screenshot(page, 'newuser-filter-after-reload')}`);
    });
    const after = (await logs.locator('.pane-header').textContent()) ?? '';
    assert.match(after, /Filter:/, `the description before the reload was ${JSON.stringify(before)}`);
  });
});
