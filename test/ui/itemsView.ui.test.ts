// The Items view over time, in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts):
// it follows the engine's events as they come (an attempt that ended is not shown running a second
// later), and it stays readable as items pile up. Screenshots land in test-results/screenshots/
// (items-view-*.png; the README's items-by-state.png comes from here).
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { ItemDetail, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

/** Items that each run this long, one after the other: shorter than the view's old refresh interval. */
const QUICK_MS = 300;
const QUICK_COUNT = 8;
/**
 * How long after its attempt ended an item may still be shown running: an event, a read of /items
 * and a redraw, on a loaded machine. A view refreshed at most once a second shows it up to a second.
 */
const MAX_LAG_MS = 600;

function pane(page: Page, title: string): Locator {
  return page.locator('.part.sidebar .pane').filter({ has: page.locator('.pane-header', { hasText: new RegExp(`^\\s*${title}`, 'i') }) });
}

interface Row {
  label: string;
  description: string;
  expanded: string | null;
  level: string | null;
}

async function treeRows(view: Locator): Promise<Row[]> {
  return view.locator('.monaco-list-row').evaluateAll((els) =>
    els.map((el) => ({
      label: el.querySelector('.label-name')?.textContent?.trim() ?? '',
      description: el.querySelector('.label-description')?.textContent?.trim() ?? '',
      expanded: el.getAttribute('aria-expanded'),
      level: el.getAttribute('aria-level'),
    })),
  );
}

/** Writes a queue file the way the README says: under a temporary name, then renamed. */
function queue(workspace: string, name: string, items: object[]): void {
  const dir = path.join(workspace, '.engine', 'queue');
  writeFileSync(path.join(dir, `${name}.tmp`), items.map((i) => JSON.stringify(i)).join('\n') + '\n');
  renameSync(path.join(dir, `${name}.tmp`), path.join(dir, `${name}.jsonl`));
}

describe('Items view over time (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let workspace: string;
  let baseUrl: string;
  let items: Locator;

  before(async function () {
    assertUiBuild();
    workspace = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-items-view-ui-'));
    mkdirSync(path.join(workspace, '.engine', 'queue'), { recursive: true });
    // One item from the start, so the view has a group to show before the timed items arrive.
    queue(workspace, 'first', [{ id: 'first', name: 'First', command: process.execPath, args: ['-e', '0'] }]);
    wb = await openWorkbench({
      folder: workspace,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.concurrency': 1 },
    });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    const page = wb.page;
    await page.locator('.part.activitybar .action-item a[aria-label^="Engine Monitor"], .part.activitybar .action-item[aria-label^="Engine Monitor"]').first().click();
    items = pane(page, 'Items');
    for (const other of ['Logs', 'Status']) {
      const header = pane(page, other).locator('.pane-header');
      if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }
    await waitUntil('the first item launched in the Items view', async () => (await treeRows(items)).some((r) => r.label === 'Launched'), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('shows an attempt as ended as soon as the engine says so, as the dashboard does', async function () {
    const page = wb.page;
    // Every change of the Items view's rows, timed in the page: which items it shows running.
    // A script as text: tsx names the functions of a callback, and its __name helper is not in the page.
    const observe = `(el) => {
      const log = [];
      window.__runningRows = log;
      const read = () => Array.from(el.querySelectorAll('.monaco-list-row'))
        .filter((r) => /^running /.test(r.querySelector('.label-description')?.textContent?.trim() ?? ''))
        .map((r) => r.querySelector('.label-name')?.textContent?.trim() ?? '');
      log.push({ t: Date.now(), running: read() });
      new MutationObserver(() => {
        const running = read();
        if (running.join('\\n') !== log[log.length - 1].running.join('\\n')) log.push({ t: Date.now(), running });
      }).observe(el, { subtree: true, childList: true, characterData: true, attributes: true });
    }`;
    await items.evaluate((el, script) => (0, eval)(script)(el), observe);
    const quick = Array.from({ length: QUICK_COUNT }, (_, i) => ({
      id: `quick-${i + 1}`,
      name: `Quick ${i + 1}`,
      command: process.execPath,
      args: ['-e', `setTimeout(() => {}, ${QUICK_MS})`],
      maxAttempts: 1,
    }));
    queue(workspace, 'quick', quick);
    await waitUntil(
      'the quick items to launch',
      async () => (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview.launched === QUICK_COUNT + 1,
      60_000,
    );
    // The last one's end has reached the view too (or the view never showed it running).
    await waitUntil('no running row', async () => (await treeRows(items)).every((r) => !/^running /.test(r.description)), 10_000);
    const log = await page.evaluate(() => (window as unknown as { __runningRows: { t: number; running: string[] }[] }).__runningRows);
    const lags: Record<string, number> = {};
    for (const q of quick) {
      const detail = await getJson<ItemDetail>(`${baseUrl}/items/${q.id}`);
      const finishedAt = Date.parse(detail.attempts[0].finishedAt!);
      // The first time the view no longer showed it running after it had shown it.
      const shown = log.findIndex((e) => e.running.includes(q.name));
      if (shown < 0) continue;
      const gone = log.findIndex((e, i) => i > shown && !e.running.includes(q.name));
      assert.ok(gone > shown, `${q.name} is no longer shown running`);
      lags[q.name] = log[gone].t - finishedAt;
    }
    console.log(`      shown running after its end (ms): ${JSON.stringify(lags)}`);
    assert.ok(Object.keys(lags).length >= QUICK_COUNT / 2, `most quick items were seen running: ${JSON.stringify(log)}`);
    for (const [name, lag] of Object.entries(lags)) assert.ok(lag <= MAX_LAG_MS, `${name} was shown running ${lag} ms after its attempt ended: ${JSON.stringify(lags)}`);
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    console.log(`      screenshot: ${await screenshot(page, 'items-view-followed')}`);
  });
});
