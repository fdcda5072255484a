// The dashboard's item detail charts the item's last attempts in a real VS Code (code-server +
// Chromium, see test/vscode/codeServer.ts): an item whose fifth attempt takes far longer than the
// four before it shows one duration bar and one memory bar per attempt, the slow one marked in
// both rows, and a summary that counts it. Every figure comes from a real engine.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ItemDetail } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

/**
 * Attempts 1-4 fail after 2 s, 5 fails after 10 s, 6 succeeds. "Slow" is more than twice the median
 * of the attempts before, so the durations must not hang on how fast Node.js starts: attempts that
 * failed at once (a Node.js start each, 50-500 ms on a loaded machine) let attempt 4 be twice
 * attempts 1-3 in a run of the suite under load. A 2 s sleep makes the start a small part.
 */
const ITEM = {
  id: 'nightly-report',
  name: 'Nightly report',
  command: process.execPath,
  args: ['-e', 'const n = Number(process.env.ENGINE_ATTEMPT); console.log("attempt " + n); if (n >= 6) process.exit(0); setTimeout(() => process.exit(1), n === 5 ? 10000 : 2000)'],
  maxAttempts: 6,
};

describe('Attempt history chart in the dashboard (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-insight-ui-'));
    mkdirSync(path.join(folder, '.engine', 'queue'), { recursive: true });
    writeFileSync(path.join(folder, '.engine', 'queue', 'nightly.json'), JSON.stringify(ITEM, null, 2));
    wb = await openWorkbench({ folder, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300 } });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('draws a duration and a memory bar per attempt and marks the slow one in both', async () => {
    const page = wb.page;
    const detail = await waitUntil('the item to succeed at its sixth attempt', async () => {
      const d = await getJson<ItemDetail>(`${baseUrl}/items/${ITEM.id}`);
      return d.outcome === 'launched' && d;
    }, 180_000);
    assert.deepEqual(detail.attempts.map((a) => a.slow), [false, false, false, false, true, false]);

    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await runCommand(page, 'Show Engine Status');
    const frame = await waitUntil('the dashboard frame', async () => {
      for (const f of page.frames()) if (f.url().includes('webview') && (await f.locator('main#app .cards').count().catch(() => 0)) > 0) return f;
      return undefined;
    });
    const link = frame.locator(`table.logs button.item-link[data-item-id="${ITEM.id}"]`).first();
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    const chart = frame.locator(`section.item-detail[data-item-id="${ITEM.id}"] .attempt-chart`);
    await chart.locator('svg').waitFor({ timeout: 15_000 });

    assert.equal(await chart.locator('g.bar.duration').count(), 6, 'a duration bar per finished attempt');
    assert.equal(await chart.locator('g.bar.memory').count(), 6, 'a memory bar per finished attempt');
    assert.deepEqual(await chart.locator('g.bar.slow').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-attempt'))), ['5', '5'], 'attempt 5 marked in both rows');
    assert.equal(await chart.locator('g.bar.slow .slow-mark').count(), 2);
    // The slow attempt's duration bar is the tallest: the bars are drawn to scale.
    const heights = await chart.locator('g.bar.duration rect.value').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    assert.equal(heights.indexOf(Math.max(...heights)), 4, `heights ${JSON.stringify(heights)}`);
    assert.match((await chart.locator('g.bar.duration.slow title').textContent()) ?? '', /^Attempt 5 \(failed, slow\): duration \d/);
    const summary = chart.locator('.chart-summary');
    assert.equal(await summary.getAttribute('data-slow'), '1');
    assert.match((await summary.textContent()) ?? '', /^Median .* over the last 6 attempts; 1 slow/);
    // The same figures as text: every attempt's resources were measured by the launch helper.
    const cells = await chart.locator('table.attempt-history tbody tr td:nth-child(3)').allTextContents();
    assert.equal(cells.length, 6);
    for (const c of cells) assert.match(c, /CPU \d/, `resources of each attempt: ${JSON.stringify(cells)}`);
    await chart.scrollIntoViewIfNeeded();
    console.log(`      screenshot: ${await screenshot(page, 'dashboard-attempt-history')}`);
  });
});
