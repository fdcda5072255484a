// A big queue in the Items view, in a real VS Code (code-server + Chromium): the view lists the
// first items of each group and a "Show more…" row, never every item, and paints within a second
// of being opened. BIG_QUEUE_ITEMS sets the queue's size (default 20,000, quick to ingest on a
// loaded machine; the editor bench runs 100,000). Screenshot: test-results/screenshots/items-view-big-queue.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, screenshot, type Workbench, viewPane, treeRows } from '../vscode/codeServer';
import { extensionHostRssMb, findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const ITEMS = Number(process.env.BIG_QUEUE_ITEMS || 20_000);
/** The first paint's budget: from the Stats view's rows (the workbench's own cost) to the first item row. */
const FIRST_PAINT_MS = 1000;

describe('A big queue in the Items view (code-server)', function () {
  this.timeout(600_000);
  let wb: Workbench;
  let workspace: string;

  before(async function () {
    assertUiBuild();
    workspace = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-big-queue-ui-'));
    const queue = path.join(workspace, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    // Scheduled far ahead, so none launches; every seventh has a higher priority and launches first.
    const perFile = 8000;
    for (let f = 0; f * perFile < ITEMS; f++) {
      const lines: string[] = [];
      for (let i = f * perFile; i < Math.min(ITEMS, (f + 1) * perFile); i++) {
        lines.push(JSON.stringify({ id: `big-${String(i).padStart(6, '0')}`, command: 'true', runAt: '2099-01-01T00:00:00.000Z', ...(i % 7 === 0 ? { priority: 5 } : {}) }));
      }
      writeFileSync(path.join(queue, `big-${f}.jsonl`), lines.join('\n') + '\n');
    }
    wb = await openWorkbench({ folder: workspace, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.server.port': 0 } });
    const baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil(`${ITEMS} items ingested`, async () => (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview.total === ITEMS, 480_000);
  });

  after(async function () {
    await wb?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('paints the first items within a second, in launch order, with a "Show more…" row that lists more', async function () {
    const page = wb.page;
    // Before the Items view is open: the extension holds the counters only.
    const rssBefore = extensionHostRssMb(wb.server.userDataDir);
    const started = Date.now();
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    const items = viewPane(page, 'Items');
    // The Stats view, painted from what the engine pushes without a read, is the baseline: what
    // opening the container costs the workbench on this machine now.
    let statsPainted = 0;
    const rows = await waitUntil(
      'the first item rows',
      async () => {
        if (!statsPainted && (await viewPane(page, 'Stats').locator('.monaco-list-row').count()) > 0) statsPainted = Date.now();
        const r = await treeRows(items);
        return r.some((x) => x.level === '2') && r;
      },
      30_000,
    );
    const painted = Date.now();
    const firstPaintMs = painted - (statsPainted || started);
    console.log(
      `      the Items view's first item rows with ${ITEMS} items: ${painted - started} ms after the container opened, ${firstPaintMs} ms after the Stats view's (load ${os.loadavg()[0].toFixed(1)})`,
    );
    const waitingGroup = rows.find((r) => r.level === '1' && r.label === 'Waiting');
    assert.equal(waitingGroup?.description, String(ITEMS), 'the group counts every item');
    const children = rows.filter((r) => r.level === '2');
    // The launch order: the higher priority first, then discovery order.
    assert.deepEqual(children.slice(0, 3).map((r) => r.label), ['big-000000', 'big-000007', 'big-000014']);
    assert.match(children[0].description, / · priority \+5$/);
    assert.ok(firstPaintMs <= FIRST_PAINT_MS, `the first items were painted ${firstPaintMs} ms after the Stats view`);

    // The others collapsed, the Items view has the room; the last row of the group is "Show more…".
    for (const other of ['Stats', 'Health', 'Status', 'Logs', 'Schedules']) {
      const header = viewPane(page, other).locator('.pane-header');
      if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }
    await items.locator('.monaco-list-row[aria-level="2"]').first().click();
    await page.keyboard.press('End');
    const more = items.locator('.monaco-list-row', { hasText: 'Show more…' });
    await more.waitFor({ timeout: 10_000 });
    assert.equal((await more.locator('.label-description').textContent())?.trim(), `200 of ${ITEMS} shown`);
    console.log(`      screenshot: ${await screenshot(page, 'items-view-big-queue')}`);
    await more.click();
    await waitUntil(
      '200 more',
      async () => {
        await page.keyboard.press('End');
        return ((await more.locator('.label-description').textContent({ timeout: 1000 }).catch(() => null)) ?? '').trim() === `400 of ${ITEMS} shown`;
      },
      30_000,
    );
    const rssAfter = extensionHostRssMb(wb.server.userDataDir);
    console.log(`      extension host RSS: ${rssBefore.toFixed(0)} MB before the Items view opened, ${rssAfter.toFixed(0)} MB with 400 of ${ITEMS} listed`);
    assert.ok(rssAfter - rssBefore <= 50, `the extension host grew by ${(rssAfter - rssBefore).toFixed(0)} MB`);
  });
});
