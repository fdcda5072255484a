// Workspace Trust in a real window: code-server runs WITHOUT
// --disable-workspace-trust, so the folder opens in Restricted Mode. Its queue holds one item
// that would create a marker file outside the workspace. While the workspace is untrusted the
// engine serves (status bar "Engine restricted") but the marker never appears; after trust is
// granted through the workbench's own Workspace Trust editor, the item launches, the marker
// appears and /health says the engine is running. Screenshots before and after land in
// test-results/screenshots/trust-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { HealthResponse, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';

const POLL_MS = 500;

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped|restricted|stalled|starting|connecting|off|failed|unreachable)/ }).first();
}

describe('Workspace Trust (code-server with Workspace Trust on)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let tmp: string;
  let folder: string;
  let marker: string;
  let baseUrl: string;

  before(async function () {
    for (const f of ['dist/extension.js', 'dist/cli.js']) {
      if (!existsSync(path.join(REPO_ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
    }
    tmp = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-trust-'));
    folder = path.join(tmp, 'workspace');
    // The marker lives outside the workspace: the item proves it ran by writing there.
    const markerDir = path.join(tmp, 'outside');
    mkdirSync(markerDir, { recursive: true });
    marker = path.join(markerDir, 'launched.marker');
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    writeFileSync(
      path.join(queue, 'marker.json'),
      JSON.stringify({
        id: 'write-marker',
        name: 'Write the marker file',
        command: process.execPath,
        args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`],
        maxAttempts: 1,
      }),
    );
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      trustWorkspaces: true,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': POLL_MS },
    });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('launches nothing while the workspace is untrusted', async function () {
    const page = wb.page;
    await waitUntil('the status bar to say restricted', async () => /Engine restricted/.test((await statusBarItem(page).textContent()) ?? ''), 60_000);
    const health = await getJson<HealthResponse>(`${baseUrl}/health`);
    assert.equal(health.checks.engine, 'restricted');
    assert.equal(health.status, 'degraded');
    // The item is discovered (the scanner still polls) but not launched, over several polls.
    await waitUntil('the item to be discovered', async () => (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview.total === 1);
    const polled = (await getJson<{ engine: { polls: number } }>(`${baseUrl}/status`)).engine.polls;
    await sleep(POLL_MS * 8);
    const status = await getJson<{ engine: { polls: number }; stats: StatsResponse['overview'] }>(`${baseUrl}/status`);
    assert.ok(status.engine.polls >= polled + 4, `the engine kept polling (${polled} → ${status.engine.polls})`);
    assert.equal(status.stats.totalLaunches, 0, 'nothing launched in Restricted Mode');
    assert.equal(status.stats.pending, 1);
    assert.equal(existsSync(marker), false, 'the marker file does not exist');

    // The Restricted Mode indicator of the workbench itself (left of the status bar).
    await page.locator('.part.statusbar', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 10_000 });
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    await page.locator('.part.sidebar .monaco-list-row', { hasText: 'Workspace not trusted' }).first().waitFor({ timeout: 30_000 });
    console.log(`      screenshot: ${await screenshot(page, 'trust-restricted')}`);
  });

  it('launches the item once trust is granted in the Workspace Trust editor', async function () {
    const page = wb.page;
    await runCommand(page, 'Workspaces: Manage Workspace Trust');
    const editor = page.locator('.workspace-trust-editor');
    await editor.waitFor({ timeout: 20_000 });
    // "Trust" (not "Trust Parent"): the primary button of the editor's button row.
    const trust = editor.locator('.workspace-trust-buttons-row .monaco-button', { hasText: /^Trust$/ }).first();
    await trust.waitFor({ timeout: 10_000 });
    await trust.click();
    await page.locator('.part.statusbar', { hasText: 'Restricted Mode' }).first().waitFor({ state: 'detached', timeout: 20_000 });

    await waitUntil('the marker file', async () => existsSync(marker), 30_000);
    assert.equal(readFileSync(marker, 'utf8'), 'x');
    const health = await waitUntil('/health to say running', async () => {
      const h = await getJson<HealthResponse>(`${baseUrl}/health`);
      return h.checks.engine === 'running' && h;
    });
    assert.equal(health.status, 'healthy');
    // The same engine (no restart was needed) launched the item exactly once.
    assert.equal(findEndpoint(wb.server.userDataDir), baseUrl);
    const { overview } = await waitUntil('the item to be launched', async () => {
      const s = await getJson<StatsResponse>(`${baseUrl}/stats`);
      return s.overview.launched === 1 && s;
    });
    assert.equal(overview.totalLaunches, 1);
    await waitUntil('a healthy status bar', async () => /Engine healthy · 0 pending/.test((await statusBarItem(page).textContent()) ?? ''));
    // The Items view follows: the item moved from Pending to Launched.
    const items = page.locator('.part.sidebar .pane').filter({ has: page.locator('.pane-header', { hasText: /^\s*Items/i }) });
    await waitUntil('the Items view to show the launch', async () => {
      const launched = items.locator('.monaco-list-row', { hasText: /^\s*Launched/ }).first();
      return ((await launched.locator('.label-description').textContent()) ?? '').trim() === '1';
    });
    await page.mouse.move(700, 500);
    console.log(`      screenshot: ${await screenshot(page, 'trust-granted')}`);
  });
});
