// The Engine Monitor container and status bar in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): the Stats view shows the numbers of GET /stats, "Stop Engine" from
// the command palette turns the status bar to a warning, and screenshots of the container in the
// light and dark themes land in test-results/screenshots/.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { HealthResponse, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, filterLogsByAction, openWorkbench, runCommand, screenshot, type Workbench, viewPane } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';


/** label → description of the rows a tree view shows. */
async function rows(view: Locator): Promise<Record<string, string>> {
  const pairs = await view.locator('.monaco-list-row').evaluateAll((els) =>
    els.map((el) => [
      el.querySelector('.label-name')?.textContent?.trim() ?? '',
      el.querySelector('.label-description')?.textContent?.trim() ?? '',
    ]),
  );
  return Object.fromEntries(pairs);
}

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped|restricted|stalled|starting|connecting|off|failed|unreachable)/ }).first();
}

/** Notifications (item failures) would cover the views in screenshots. */
async function clearNotifications(page: Page): Promise<void> {
  await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await page.mouse.move(700, 500);
  await sleep(300);
}

/**
 * Themes follow the (emulated) OS colour scheme: code-server's web workbench ignores
 * workbench.colorTheme from the user settings file here, and its theme picker fails offline on a
 * marketplace lookup, but window.autoDetectColorScheme switches live with prefers-color-scheme.
 */
const THEME_SETTINGS = {
  'window.autoDetectColorScheme': true,
  'workbench.preferredLightColorTheme': 'Default Light Modern',
  'workbench.preferredDarkColorTheme': 'Default Dark Modern',
};

async function setColorScheme(page: Page, scheme: 'light' | 'dark'): Promise<void> {
  await page.emulateMedia({ colorScheme: scheme });
  const themeClass = scheme === 'dark' ? 'vs-dark' : 'vs';
  await waitUntil(`the ${scheme} theme`, () =>
    page.evaluate((c) => document.querySelector('.monaco-workbench')?.classList.contains(c) ?? false, themeClass), 20_000);
  await sleep(500);
}

describe('Engine Monitor container and status bar (code-server)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let tmp: string;
  let baseUrl: string;

  before(async function () {
    for (const f of ['dist/extension.js', 'dist/cli.js']) {
      if (!existsSync(path.join(REPO_ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
    }
    // A copy of the demo: the repository's own examples/demo must stay clean.
    tmp = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-ui-'));
    const folder = path.join(tmp, 'demo');
    cpSync(path.join(REPO_ROOT, 'examples', 'demo'), folder, {
      recursive: true,
      filter: (src) => !src.split(path.sep).join('/').includes('/.engine/state'),
    });
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { ...THEME_SETTINGS, 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 500 },
    });
    await setColorScheme(wb.page, 'light');
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('shows the /stats counters in the Stats view of the Engine Monitor container', async function () {
    const page = wb.page;
    // Let the demo settle: everything but the item scheduled for 2099 has launched or failed.
    await waitUntil('the demo queue to settle', async () => {
      const { overview } = await getJson<StatsResponse>(`${baseUrl}/stats`);
      return overview.pending === 1 && overview.total > 1;
    }, 90_000);

    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const stats = viewPane(page, 'Stats');
    await stats.locator('.monaco-list-row').first().waitFor({ timeout: 30_000 });

    const labels: Record<string, keyof StatsResponse['overview']> = {
      Total: 'total',
      Launched: 'launched',
      Pending: 'pending',
      Failed: 'failed',
      'Total launches': 'totalLaunches',
      'Total failed attempts': 'totalFailed',
    };
    const shown = await waitUntil('the Stats view to show /stats', async () => {
      const { overview } = await getJson<StatsResponse>(`${baseUrl}/stats`);
      const r = await rows(stats);
      return Object.entries(labels).every(([label, key]) => r[label] === String(overview[key])) && { r, overview };
    });
    assert.equal(shown.overview.total, shown.overview.launched + shown.overview.pending + shown.overview.failed);
    assert.notEqual(shown.r['Last poll'], 'never');

    // The status bar agrees: healthy, with the pending count.
    const item = statusBarItem(page);
    await waitUntil('a healthy status bar', async () => /Engine healthy · 1 pending/.test((await item.textContent()) ?? ''));

    // The Items view groups the same numbers by state (the demo's one pending item is scheduled:
    // Waiting; nothing runs once it settled, so there is no Running group).
    const items = viewPane(page, 'Items');
    await waitUntil('the Items view to show the counts by state', async () => {
      const r = await rows(items);
      return r.Failed === String(shown.overview.failed) && r.Waiting === String(shown.overview.pending) && r.Launched === String(shown.overview.launched) && !('Running' in r);
    });

    await clearNotifications(page);
    console.log(`      screenshot: ${await screenshot(page, 'extension-light')}`);

    // A click on the status bar item shows the dashboard.
    await item.click();
    const tab = page.locator('.part.editor .tab', { hasText: 'Engine Status' }).first();
    await tab.waitFor({ timeout: 20_000 });
    await runCommand(page, 'View: Close All Editors');
    await tab.waitFor({ state: 'detached', timeout: 10_000 });
  });

  it('turns the status bar to a warning when "Engine Monitor: Stop Engine" runs', async function () {
    const page = wb.page;
    const item = statusBarItem(page);
    const before = (await item.textContent())?.trim();
    await runCommand(page, 'Engine Monitor: Stop Engine');
    await waitUntil('/health to say stopped', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'stopped');
    const after = await waitUntil('the status bar to say stopped', async () => {
      const t = (await item.textContent())?.trim() ?? '';
      return /Engine stopped/.test(t) && t;
    });
    assert.notEqual(after, before);
    // The warning background comes from the theme (statusBarItem.warningBackground).
    const cls = (await item.getAttribute('class')) ?? '';
    assert.match(cls, /warning-kind/, `status bar item classes: ${cls}`);
    // The Stats view offers to start it again.
    await viewPane(page, 'Stats').locator('.monaco-list-row', { hasText: 'Engine stopped' }).waitFor({ timeout: 15_000 });
    await clearNotifications(page);
    console.log(`      screenshot: ${await screenshot(page, 'extension-stopped-light')}`);

    await runCommand(page, 'Engine Monitor: Start Engine');
    await waitUntil('the status bar to say healthy again', async () => /Engine healthy/.test((await item.textContent()) ?? ''));
  });

  it('filters the Logs view through "Filter Logs…" and shows the filter in its description', async function () {
    const page = wb.page;
    await filterLogsByAction(page, 'launch_failed');

    const logs = viewPane(page, 'Logs');
    await waitUntil('the filter in the Logs view description', async () =>
      /Filter: launch_failed/.test((await logs.locator('.pane-header').textContent()) ?? ''));
    const expected = await getJson<{ id: number }[]>(`${baseUrl}/logs?action=launch_failed`);
    assert.ok(expected.length > 0 && expected.length < 15, `a handful of launch_failed entries (${expected.length})`);
    await waitUntil('one row per launch_failed entry', async () => (await logs.locator('.monaco-list-row').count()) === expected.length);
    await clearNotifications(page);
    console.log(`      screenshot: ${await screenshot(page, 'extension-logs-filtered-light')}`);

    await runCommand(page, 'Engine Monitor: Clear Log Filter');
    await waitUntil('no filter in the description', async () => !/Filter:/.test((await logs.locator('.pane-header').textContent()) ?? ''));
  });

  it('renders in the dark theme', async function () {
    const page = wb.page;
    await setColorScheme(page, 'dark');
    // Expand the Status view too, so the screenshot shows every view.
    await viewPane(page, 'Status').locator('.pane-header').click();
    await viewPane(page, 'Status').locator('.monaco-list-row').first().waitFor();
    await sleep(1000);
    await clearNotifications(wb.page);
    console.log(`      screenshot: ${await screenshot(wb.page, 'extension-dark')}`);
  });
});

describe('Engine Monitor in a workspace without a queue folder (code-server)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let tmp: string;
  /** Markdown, HTML and a command link: a tooltip must show all of it as plain text. */
  const HOSTILE = '**bold** <img src=x onerror=alert(1)> [stop](command:engineMonitor.stop)';

  before(async function () {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-ui-empty-'));
    wb = await openWorkbench({
      folder: tmp,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { ...THEME_SETTINGS, 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 500 },
    });
    await setColorScheme(wb.page, 'light');
  });

  after(async function () {
    await wb?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('offers to create the queue folder, then starts the engine', async function () {
    const page = wb.page;
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const stats = viewPane(page, 'Stats');
    const button = stats.locator('.welcome-view-content a, .welcome-view-content .monaco-button', { hasText: 'Create Queue Folder' }).first();
    await button.waitFor({ timeout: 30_000 });
    assert.equal(await statusBarItem(page).count(), 0, 'no status bar item before there is a queue');
    console.log(`      screenshot: ${await screenshot(page, 'extension-welcome-light')}`);

    await button.click();
    await waitUntil('the queue folder', async () => existsSync(path.join(tmp, '.engine', 'queue')));
    await stats.locator('.monaco-list-row', { hasText: 'Total' }).first().waitFor({ timeout: 60_000 });
    await waitUntil('a healthy status bar', async () => /Engine healthy · 0 pending/.test((await statusBarItem(page).textContent()) ?? ''), 30_000);
    // An engine without items or schedules: the views say so, with what to do.
    await viewPane(page, 'Items').locator('.welcome-view-content', { hasText: 'No items yet' }).first().waitFor({ timeout: 30_000 });
    await viewPane(page, 'Schedules').locator('.welcome-view-content', { hasText: 'No schedules' }).first().waitFor({ timeout: 30_000 });
  });

  it('shows engine strings as text, never as Markdown or HTML', async function () {
    const page = wb.page;
    const queue = path.join(tmp, '.engine', 'queue');
    writeFileSync(
      path.join(queue, 'hostile.json.tmp'),
      JSON.stringify({ id: 'hostile', name: HOSTILE, command: process.execPath, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' }),
    );
    renameSync(path.join(queue, 'hostile.json.tmp'), path.join(queue, 'hostile.json'));
    // Scheduled for 2099: it stays in the (expanded) Waiting group.
    const row = viewPane(page, 'Items').locator('.monaco-list-row', { hasText: '<img src=x' }).first();
    await row.waitFor({ timeout: 30_000 });
    assert.equal((await row.locator('.label-name').textContent())?.trim(), HOSTILE);
    assert.equal(await page.locator('.part.sidebar img[src="x"]').count(), 0, 'no element made from engine text');
    // (Tooltips: headless Chromium shows no workbench hovers, so the extension-host suite checks
    // that their Markdown is untrusted, HTML-free and escaped.)
    console.log(`      screenshot: ${await screenshot(page, 'extension-hostile-light')}`);
  });
});
