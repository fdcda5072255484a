// The item states' UI in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts): the
// status bar counts failed items while the engine is healthy, the Items view shows a running item
// first with its elapsed time and the Failed group open, and the dashboard's item detail panel
// shows an item's attempts and output, also in a narrow editor. Screenshots land in
// test-results/screenshots/ (the README's come from here: items-*.png, dashboard-item-*.png).
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { ItemDetail, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, SCREENSHOT_DIR, openWorkbench, runCommand, screenshot, type Workbench, viewPane, treeRows } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';
import { dashboardFrame } from '../vscode/workbenchUi';

const STDOUT_LINE = 'step 1 of 2: copied 12 files';
const STDERR_LINE = 'error: disk full (simulated)';
/** Output that would be an element (and run script) if it ever reached the page as HTML. */
const HOSTILE_LINE = '<img src=x onerror=alert(1)> not markup';

function makeWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-items-ui-'));
  const queue = path.join(dir, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const node = process.execPath;
  const items = [
    { id: 'nightly-backup', name: 'Nightly backup (fails)', command: node, args: ['-e', `console.log(${JSON.stringify(STDOUT_LINE)}); console.log(${JSON.stringify(HOSTILE_LINE)}); console.error(${JSON.stringify(STDERR_LINE)}); process.exit(3)`], maxAttempts: 2 },
    { id: 'build-docs', name: 'Build docs', command: node, args: ['-e', "console.log('docs built')"] },
    // A long sleep: running for the whole test; the engine ends it when the window closes.
    { id: 'long-sleep', name: 'Long sleep', command: 'sleep', args: ['600'], timeoutMs: 900_000, maxAttempts: 1 },
    { id: 'release-notes', name: 'Release notes (later)', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
  ];
  writeFileSync(path.join(queue, 'items.jsonl'), items.map((i) => JSON.stringify(i)).join('\n') + '\n');
  return dir;
}

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped)/ }).first();
}

async function clearNotifications(page: Page): Promise<void> {
  await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  await page.mouse.move(700, 500);
  await sleep(300);
}

describe('Items by state, failed count and item detail (code-server)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let workspace: string;
  let baseUrl: string;
  const dialogs: string[] = [];

  before(async function () {
    assertUiBuild();
    workspace = makeWorkspace();
    wb = await openWorkbench({
      folder: workspace,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: {
        'window.autoDetectColorScheme': true,
        'workbench.preferredLightColorTheme': 'Default Light Modern',
        'engineMonitor.server.port': 0,
        'engineMonitor.engine.pollIntervalMs': 500,
      },
    });
    wb.page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await wb.page.emulateMedia({ colorScheme: 'light' });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil(
      'the failing item to fail for good and the sleep to run',
      async () => {
        const s = (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview;
        return s.failed === 1 && s.launched === 1 && s.running === 1;
      },
      90_000,
    );
  });

  after(async function () {
    await wb?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the failed count in the status bar while the engine is healthy', async function () {
    const item = statusBarItem(wb.page);
    const text = await waitUntil('the failed count in the status bar', async () => {
      const t = (await item.textContent())?.trim() ?? '';
      return /1 failed/.test(t) && t;
    });
    assert.match(text, /Engine healthy · 2 pending · .*1 failed$/);
    // The failed count does not recolour the item: the warning and error backgrounds stay for an
    // engine that needs attention (degraded, unhealthy), see statusBar.ts.
    const cls = (await item.getAttribute('class')) ?? '';
    assert.doesNotMatch(cls, /warning-kind|error-kind/, `status bar item classes: ${cls}`);
    // The error icon is drawn (a codicon), not the literal "$(error)".
    assert.equal(await item.locator('.codicon-error').count(), 1);
    await clearNotifications(wb.page);
    const box = await item.boundingBox();
    assert.ok(box);
    // A cut of the status bar's left end, where the item is.
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const file = path.join(SCREENSHOT_DIR, 'status-bar-failed.png');
    await wb.page.screenshot({ path: file, clip: { x: 0, y: box.y - 8, width: Math.min(900, box.x + box.width + 300), height: box.height + 16 } });
    console.log(`      screenshot: ${file}`);
  });

  it('groups the Items view by state: Running first with elapsed time, Failed expanded', async function () {
    const page = wb.page;
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const items = viewPane(page, 'Items');
    await items.locator('.monaco-list-row').first().waitFor({ timeout: 30_000 });
    // A wider side bar, so the screenshot shows whole descriptions: drag the sash at its edge.
    const bar = await page.locator('.part.sidebar').boundingBox();
    if (bar) {
      await page.mouse.move(bar.x + bar.width + 1, bar.y + bar.height / 2);
      await page.mouse.down();
      await page.mouse.move(bar.x + bar.width + 200, bar.y + bar.height / 2, { steps: 8 });
      await page.mouse.up();
    }
    // Give the Items view the room: collapse the Logs and Status views above it.
    for (const other of ['Logs', 'Status']) {
      const header = viewPane(page, other).locator('.pane-header');
      if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }

    const rows = await waitUntil('the groups in the Items view', async () => {
      const r = await treeRows(items);
      const groups = r.filter((x) => x.level === '1').map((x) => x.label);
      return groups.join(',') === 'Running,Waiting,Failed,Launched' && r;
    });
    assert.equal(rows[0].label, 'Running', 'Running is the first row');
    const running = rows[1];
    assert.equal(running.label, 'Long sleep');
    assert.match(running.description, /^running (\d+ s|\d+ min \d+ s) · attempt 1\/1$/);
    // It ticks: a later read shows more seconds (at most one update a second).
    const later = await waitUntil('the elapsed time to grow', async () => {
      const d = (await treeRows(items))[1]?.description;
      return d !== running.description && d;
    }, 10_000);
    assert.match(later, /^running /);

    const failedGroup = rows.find((r) => r.label === 'Failed');
    assert.equal(failedGroup?.expanded, 'true', 'the Failed group is open: a failure is what the user came for');
    assert.equal(failedGroup?.description, '1');
    const failedIndex = rows.indexOf(failedGroup);
    assert.equal(rows[failedIndex + 1].label, 'Nightly backup (fails)', 'its failed item is visible');
    assert.match(rows[failedIndex + 1].description, /^2\/2 attempts/);
    assert.equal(rows.find((r) => r.label === 'Launched')?.expanded, 'false', 'Launched starts collapsed');
    assert.equal(rows.find((r) => r.label === 'Waiting')?.description, '1');

    await clearNotifications(page);
    await page.mouse.move(1500, 900);
    console.log(`      screenshot: ${await screenshot(page, 'items-by-state')}`);
  });

  it('opens an item from the dashboard log table: definition, attempts and output', async function () {
    const page = wb.page;
    await runCommand(page, 'Show Engine Status');
    const frame = await dashboardFrame(page);
    await frame.locator('.connection[data-connected="true"]').waitFor({ timeout: 30_000 });
    // The items to look at: the running sleep, the failed backup with its reason.
    const running = frame.locator('[data-list="running"] li');
    await waitUntil('the running item in the dashboard', async () => (await running.count()) === 1);
    assert.equal(await running.first().getAttribute('data-item-id'), 'long-sleep');
    const failed = frame.locator('[data-list="failed"] li');
    assert.equal(await failed.count(), 1);
    assert.match((await failed.first().textContent()) ?? '', /Nightly backup \(fails\)2\/2 attempts.*exited with code 3/);
    await clearNotifications(page);
    console.log(`      screenshot: ${await screenshot(page, 'dashboard-attention')}`);

    const link = frame.locator('table.logs button.item-link[data-item-id="nightly-backup"]').first();
    await link.waitFor({ timeout: 30_000 });
    await link.click();

    const detail = frame.locator('section.item-detail[data-item-id="nightly-backup"]');
    await detail.waitFor();
    const api = await getJson<ItemDetail>(`${baseUrl}/items/nightly-backup`);
    assert.equal(api.attempts.length, 2);
    const attemptRows = detail.locator('table.attempts-table tbody tr');
    await waitUntil('two attempt rows', async () => (await attemptRows.count()) === 2);
    for (let i = 0; i < 2; i++) {
      const a = api.attempts[i];
      const cells = await attemptRows.nth(i).locator('td').allTextContents();
      assert.equal(cells[0], String(a.attempt));
      assert.equal(cells[3], a.outcome);
      assert.match(cells[4], new RegExp(`^exit ${a.exitCode}`));
    }
    assert.equal(await detail.locator('.state-badge').textContent(), 'failed');
    assert.match((await detail.locator('.definition').textContent()) ?? '', /Max attempts2/);

    // The latest attempt is selected; its output has both streams, in order.
    const out = detail.locator('pre.output-text');
    await waitUntil('the output of attempt 2', async () => ((await out.first().textContent()) ?? '').includes(STDERR_LINE));
    const all = (await out.first().textContent()) ?? '';
    assert.ok(all.indexOf(STDOUT_LINE) >= 0 && all.indexOf(STDOUT_LINE) < all.indexOf(STDERR_LINE), all);
    assert.match((await detail.locator('#output-title').textContent()) ?? '', /attempt 2/);
    // Engine strings are text: the hostile line is shown, no element was made from it.
    assert.ok(all.includes(HOSTILE_LINE), all);
    assert.equal(await frame.locator('img').count(), 0);
    assert.deepEqual(dialogs, [], 'no alert() ran');

    // stderr alone, in the theme's error colour.
    await detail.locator('button[data-stream="stderr"]').click();
    await waitUntil('stderr only', async () => {
      const t = (await detail.locator('pre.output-text.stream-stderr').textContent().catch(() => null)) ?? '';
      return t.includes(STDERR_LINE) && !t.includes(STDOUT_LINE);
    });
    const colors = await frame.evaluate(() => ({
      stderr: getComputedStyle(document.querySelector('pre.output-text.stream-stderr')!).color,
      body: getComputedStyle(document.body).color,
    }));
    assert.notEqual(colors.stderr, colors.body, 'stderr stands out');
    await detail.locator('button[data-stream="all"]').click();
    await waitUntil('all output again', async () => ((await detail.locator('pre.output-text.stream-all').textContent().catch(() => null)) ?? '').includes(STDOUT_LINE));

    // Attempt 1 by a click on its row.
    await attemptRows.nth(0).locator('button.attempt-pick').click();
    await waitUntil('attempt 1 selected', async () => /attempt 1/.test((await detail.locator('#output-title').textContent()) ?? ''));
    await attemptRows.nth(1).locator('button.attempt-pick').click();
    await waitUntil('attempt 2 selected', async () => /attempt 2/.test((await detail.locator('#output-title').textContent()) ?? ''));

    await detail.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await clearNotifications(page);
    await sleep(300);
    console.log(`      screenshot: ${await screenshot(page, 'dashboard-item-detail')}`);

    // The running sleep, from the list of items to look at: running, no output yet.
    await frame.locator('[data-list="running"] button.item-link[data-item-id="long-sleep"]').click();
    const sleeping = frame.locator('section.item-detail[data-item-id="long-sleep"]');
    await waitUntil('the running item in the panel', async () => (await sleeping.locator('.state-badge').textContent()) === 'running');
    assert.match((await sleeping.locator('#output-title').textContent()) ?? '', /attempt 1 \(running\)/);
    await waitUntil('no output yet', async () => (await sleeping.locator('.output-empty').textContent().catch(() => null)) === 'No output yet.');
    assert.equal(await sleeping.locator('table.attempts-table tbody tr td.outcome-running').count(), 1);
    // Back to the failed item for the narrow screenshots.
    await link.click();
    await detail.waitFor();
    await waitUntil('its output again', async () => ((await detail.locator('pre.output-text').first().textContent().catch(() => null)) ?? '').includes(STDERR_LINE));
  });

  it('stays readable in a narrow editor (about 350 px): no one-character columns', async function () {
    const page = wb.page;
    const frame = await dashboardFrame(page);
    const width = () => frame.evaluate(() => window.innerWidth);
    const viewport = page.viewportSize()!;
    // Shrink the window by as much as the dashboard is wider than 350 px (the side bar stays).
    await page.setViewportSize({ width: viewport.width - ((await width()) - 350), height: viewport.height });
    await waitUntil('a narrow dashboard', async () => Math.abs((await width()) - 350) <= 30, 20_000);
    await sleep(500);
    // No named functions inside evaluate(): tsx's __name helper does not exist in the page.
    const selectors = { message: 'table.logs tbody tr[data-id] .col-message', attemptCells: 'table.attempts-table td', output: 'pre.output-text' };
    const m = await frame.evaluate((sel) => {
      const widths: Record<string, number> = { inner: window.innerWidth, scrollWidth: document.documentElement.scrollWidth };
      for (const [k, s] of Object.entries(sel)) widths[k] = Math.min(...Array.from(document.querySelectorAll(s), (e) => e.getBoundingClientRect().width));
      return widths;
    }, selectors);
    assert.ok(m.scrollWidth <= m.inner + 1, `no sideways scrolling: ${JSON.stringify(m)}`);
    // Stacked: each message gets (nearly) the whole width, never a sliver.
    assert.ok(m.message > 0.6 * m.inner, `log messages are wide: ${JSON.stringify(m)}`);
    assert.ok(m.attemptCells > 0.6 * m.inner, `attempt cells are wide: ${JSON.stringify(m)}`);
    assert.ok(m.output > 0.6 * m.inner, `output is wide: ${JSON.stringify(m)}`);
    // The editor part alone: that is the narrow editor.
    const editor = (await page.locator('.part.editor').boundingBox())!;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (const [name, section] of [['dashboard-item-detail-narrow', 'section.item-detail'], ['dashboard-logs-narrow', 'section.logs-panel']]) {
      await frame.evaluate((sel) => document.querySelector(sel)?.scrollIntoView({ block: 'start' }), section);
      await sleep(300);
      const file = path.join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path: file, clip: editor });
      console.log(`      screenshot: ${file}`);
    }
    await page.setViewportSize(viewport);
  });
});
