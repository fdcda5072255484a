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
import type { Locator } from 'playwright-core';
import type { ItemSummary, LogEntry, StatsResponse } from '../../src/shared/api';
import { formatClock } from '../../src/shared/format';
import { REPO_ROOT, SCREENSHOT_DIR, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench, viewPane, treeRows, type TreeRow } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

/** Items that each run this long, one after the other: shorter than the view's old refresh interval. */
const QUICK_MS = 300;
const QUICK_COUNT = 8;
/**
 * How long after the engine logged an attempt's end the item may still be shown running: the event
 * reaching the extension and a redraw, on a loaded machine. A view refreshed at most once a second
 * showed it up to a second.
 */
const MAX_LAG_MS = 600;

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
    items = viewPane(page, 'Items');
    // A wider side bar, so the screenshots show whole descriptions: drag the sash at its edge.
    const bar = await page.locator('.part.sidebar').boundingBox();
    if (bar) {
      await page.mouse.move(bar.x + bar.width + 1, bar.y + bar.height / 2);
      await page.mouse.down();
      await page.mouse.move(bar.x + bar.width + 160, bar.y + bar.height / 2, { steps: 8 });
      await page.mouse.up();
    }
    // The Items view gets the side bar's height: the others are collapsed (its rows are virtual,
    // only those on screen exist to read).
    await waitUntil('the Schedules view', async () => (await viewPane(page, 'Schedules').count()) === 1);
    for (const other of ['Stats', 'Health', 'Status', 'Logs', 'Schedules']) {
      const header = viewPane(page, other).locator('.pane-header');
      if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
    }
    await waitUntil('the first item launched in the Items view', async () => (await treeRows(items)).some((r) => r.label === 'Launched'), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('shows an attempt as ended as soon as the engine logs its end, as the dashboard does', async function () {
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
      // When the engine said so: its log entry of the attempt's end, which /events carries.
      const [end] = await getJson<LogEntry[]>(`${baseUrl}/logs?item=${q.id}&action=launch_succeeded`);
      const finishedAt = Date.parse(end.timestamp);
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

  it('reads well over time: Launched newest first, occurrences under their template, Waiting in launch order with priorities', async function () {
    const page = wb.page;
    // A watched template: each write to src/notes.txt fires an occurrence `on-save@<time>`.
    mkdirSync(path.join(workspace, 'src'), { recursive: true });
    queue(workspace, 'watch', [{ id: 'on-save', name: 'On save', command: process.execPath, args: ['-e', '0'], watch: { paths: ['src/*.txt'], debounceMs: 100 } }]);
    await waitUntil('the watched template', async () => (await getJson<{ id: string }[]>(`${baseUrl}/schedules`)).some((t) => t.id === 'on-save'), 30_000);
    for (let i = 1; i <= 3; i++) {
      // Written again while nothing fired: the template's watcher may not be set up yet.
      let written = 0;
      await waitUntil(
        `occurrence ${i} to fire and launch`,
        async () => {
          const fired = (await getJson<{ items: ItemSummary[] }>(`${baseUrl}/items?q=on-save&limit=10`)).items;
          if (fired.length >= i) return fired.every((o) => o.state === 'launched');
          if (Date.now() - written > 5000) {
            writeFileSync(path.join(workspace, 'src', 'notes.txt'), `edit ${i} at ${Date.now()}\n`);
            written = Date.now();
          }
          return false;
        },
        60_000,
      );
    }
    // One item holds the only slot; the others wait, in the order they will launch.
    const hour = new Date(Date.now() + 3_600_000).toISOString();
    queue(workspace, 'waiting', [
      { id: 'blocker', name: 'Blocker', command: 'sleep', args: ['600'], timeoutMs: 900_000, maxAttempts: 1, priority: 100 },
      { id: 'w-low', name: 'Low', command: process.execPath, args: ['-e', '0'], priority: -3 },
      { id: 'w-plain', name: 'Plain', command: process.execPath, args: ['-e', '0'] },
      { id: 'w-later', name: 'In an hour', command: process.execPath, args: ['-e', '0'], runAt: hour, priority: 50 },
      { id: 'w-high', name: 'High', command: process.execPath, args: ['-e', '0'], priority: 5 },
    ]);
    await waitUntil('the blocker to run', async () => (await getJson<{ state: string }>(`${baseUrl}/items/blocker`)).state === 'running', 30_000);

    // Launched newest first: the occurrences (folded), then the quick items from the last one back.
    const launchedGroup = items.locator('.monaco-list-row[aria-level="1"]', { hasText: 'Launched' });
    if ((await launchedGroup.getAttribute('aria-expanded')) === 'false') await launchedGroup.click();
    const groupOf = (rows: TreeRow[], label: string) => {
      const at = rows.findIndex((r) => r.level === '1' && r.label === label);
      const end = rows.findIndex((r, i) => i > at && r.level === '1');
      return at < 0 ? [] : rows.slice(at + 1, end < 0 ? undefined : end).filter((r) => r.level === '2');
    };
    const launched = await waitUntil('Launched newest first, the occurrences folded', async () => {
      const rows = await treeRows(items);
      const g = groupOf(rows, 'Launched');
      if (g.length > 0 && g[0].label === 'On save') return g;
      throw new Error(`the rows: ${JSON.stringify(rows)}`);
    });
    assert.match(launched[0].description, /^3 runs · latest /, 'the three occurrences are one row');
    assert.deepEqual(
      launched.slice(1).map((r) => r.label),
      [...Array.from({ length: QUICK_COUNT }, (_, i) => `Quick ${QUICK_COUNT - i}`), 'First'],
      'the quick items from the last to finish back to the first',
    );
    // Opened, the template lists its occurrences newest first, each named by when it fired.
    await items.locator('.monaco-list-row[aria-level="2"]', { hasText: 'On save' }).click();
    const occurrences = await waitUntil('the occurrences under their template', async () => {
      const r = (await treeRows(items)).filter((x) => x.level === '3');
      return r.length === 3 && r;
    });
    const fired = (await getJson<{ items: { id: string }[] }>(`${baseUrl}/items?q=on-save&limit=10`)).items.map((i) => i.id).sort().reverse();
    assert.equal(fired.length, 3);
    // The view's own clock format (the extension host runs in this machine's locale and zone too).
    const clock = (id: string) => formatClock(new Date(id.slice(id.indexOf('@') + 1)).toISOString());
    assert.deepEqual(
      occurrences.map((r) => r.label),
      fired.map(clock),
      'newest first, by their firing time',
    );

    // Waiting in the engine's launch order, the priorities shown.
    const waiting = await waitUntil('the waiting items', async () => {
      const g = groupOf(await treeRows(items), 'Waiting');
      return g.length === 4 && g;
    });
    assert.deepEqual(
      waiting.map((r) => [r.label, r.description]),
      [
        ['High', 'waiting · priority +5'],
        ['Plain', 'waiting'],
        ['Low', 'waiting · priority -3'],
        ['In an hour', `scheduled ${waiting[3].description.replace(/^scheduled (.*) · priority \+50$/, '$1')} · priority +50`],
      ],
    );
    assert.match(waiting[3].description, /^scheduled .+ · priority \+50$/);
    assert.match(groupOf(await treeRows(items), 'Running')[0]?.description ?? '', /^running .+ · attempt 1\/1 · priority \+100$/, 'the priority on a running item too');
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await page.mouse.move(1500, 900);
    console.log(`      screenshot: ${await screenshot(page, 'items-view-over-time-window')}`);
    // The side bar's rows alone (the README's items-view-over-time.png).
    const side = (await page.locator('.part.sidebar').boundingBox())!;
    const file = path.join(SCREENSHOT_DIR, 'items-view-over-time.png');
    await page.screenshot({ path: file, clip: { x: side.x, y: side.y, width: side.width, height: Math.min(side.height, 620) } });
    console.log(`      screenshot: ${file}`);
  });
});
