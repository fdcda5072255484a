// Smaller things a new user hit, in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): the walkthrough ticks "See it launched" only once something launched
// (not when the Items view opens); Show Output reuses the item's terminal instead of opening one per
// attempt, its header in local time; the status bar's tooltip keeps its sentences apart; CodeLens tells a schedule template's
// next run and a file the engine rejected as not JSON, instead of "not yet scanned"; the dashboard's
// green Launched number is readable on the (default) light theme. Screenshots land in
// test-results/screenshots/small-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { HealthResponse, ItemDetail, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, runPickCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { dashboardFrame } from '../vscode/workbenchUi';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';
import { formatDateTime } from '../../src/shared/format';

const node = process.execPath;

function writeQueueFile(queue: string, name: string, value: unknown): void {
  const tmp = path.join(queue, `${name}.tmp`);
  writeFileSync(tmp, JSON.stringify(value));
  renameSync(tmp, path.join(queue, name));
}

function statusBarItem(page: Page): Locator {
  return page.locator('.part.statusbar .statusbar-item', { hasText: /Engine (healthy|degraded|unhealthy|stopped)/ }).first();
}

describe('Walkthrough tick, one output terminal per item, status-bar tooltip (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let queue: string;
  let baseUrl: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-small-ui-'));
    queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: {
        'engineMonitor.server.port': 0,
        'engineMonitor.engine.pollIntervalMs': 300,
        'terminal.integrated.gpuAcceleration': 'off',
        // The terminal tabs list shows every terminal, even one: they are counted there.
        'terminal.integrated.tabs.hideCondition': 'never',
      },
    });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('a running engine', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 30_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('the walkthrough ticks "See it launched" once something launched, not when the Items view opens', async () => {
    const page = wb.page;
    await runPickCommand(page, 'Welcome: Open Walkthrough...', 'Get Started with Engine Monitor');
    const step = page.locator('.getting-started-step', { hasText: 'See it launched' }).first();
    await step.waitFor({ timeout: 20_000 });
    const ticked = async () => (await step.getAttribute('aria-checked')) === 'true';
    // What the step's own link does: open the Items view. Nothing has launched yet.
    await runCommand(page, 'Engine Monitor: Focus on Items View');
    await sleep(1500); // a tick would follow the view's opening at once; give it the time to show
    await runPickCommand(page, 'Welcome: Open Walkthrough...', 'Get Started with Engine Monitor');
    await step.waitFor({ timeout: 20_000 });
    console.log(`      screenshot: ${await screenshot(page, 'small-walkthrough-not-yet')}`);
    assert.equal(await ticked(), false, 'not ticked before anything launched');

    writeQueueFile(queue, 'hello.json', { id: 'hello', name: 'Say hello', command: node, args: ['-e', "console.log('hello')"] });
    await waitUntil('hello launched', async () => (await getJson<ItemDetail>(`${baseUrl}/items/hello`)).outcome === 'launched', 30_000);
    await waitUntil('the step to be ticked', ticked, 15_000).finally(async () => {
      console.log(`      screenshot: ${await screenshot(page, 'small-walkthrough-launched')}`);
    });
    await runCommand(page, 'View: Close All Editors').catch(() => undefined);
  });

  it('Show Output of a newer attempt reuses the item\'s terminal', async () => {
    const page = wb.page;
    const tabs = page.locator('.terminal-tabs-entry');
    writeQueueFile(queue, 'echo.json', { id: 'echo', name: 'Echo twice', command: node, args: ['-e', "console.log('echo')"] });
    await waitUntil('echo launched', async () => (await getJson<ItemDetail>(`${baseUrl}/items/echo`)).outcome === 'launched', 30_000);
    await runPickCommand(page, 'Engine Monitor: Show Output', 'Echo twice');
    await waitUntil('one output terminal', async () => (await tabs.count()) === 1, 20_000);
    await runPickCommand(page, 'Engine Monitor: Run Again', 'Echo twice');
    await waitUntil('echo launched a second time', async () => {
      const d = await getJson<ItemDetail>(`${baseUrl}/items/echo`);
      return d.outcome === 'launched' && d.attempts.length === 2;
    }, 30_000);
    await runPickCommand(page, 'Engine Monitor: Show Output', 'Echo twice');
    // The terminal shows the new run: its header names the second attempt's start, in local time
    // as the rest of the UI shows times (this process and the extension host share the machine's
    // locale and time zone).
    const second = (await getJson<ItemDetail>(`${baseUrl}/items/echo`)).attempts.reduce((a, b) => (a.startedAt >= b.startedAt ? a : b));
    await waitUntil('the new attempt in the terminal', async () => {
      const rows = await page.locator('.terminal-wrapper.active .xterm-rows > div').evaluateAll((els) => els.map((r) => (r.textContent ?? '').replace(/\u00a0/g, ' ')));
      return rows.join('\n').includes(`started ${formatDateTime(second.startedAt)}`);
    }, 20_000);
    console.log(`      screenshot: ${await screenshot(page, 'small-output-reused')}`);
    assert.equal(await tabs.count(), 1, 'still one terminal for the item');
    await runCommand(page, 'View: Hide Panel').catch(() => undefined);
  });

  it('the status bar tooltip keeps the failed items\' sentence and the endpoint apart', async () => {
    const page = wb.page;
    writeQueueFile(queue, 'broken.json', { id: 'broken', name: 'Broken', command: node, args: ['-e', 'process.exit(4)'], maxAttempts: 1 });
    await waitUntil('broken failed', async () => (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview.failed === 1, 30_000);
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    const item = statusBarItem(page);
    await waitUntil('1 failed in the status bar', async () => /1 failed/.test((await item.textContent()) ?? ''), 20_000);
    await item.hover();
    const hover = page.locator('.workbench-hover, .monaco-hover').filter({ hasText: 'Endpoint' }).first();
    await hover.waitFor({ timeout: 15_000 });
    const text = await hover.evaluate((el) => (el as HTMLElement).innerText);
    console.log(`      screenshot: ${await screenshot(page, 'small-status-tooltip')}`);
    assert.match(text, /1 failed item/);
    assert.doesNotMatch(text, /\.Endpoint/, `two sentences run together: ${JSON.stringify(text)}`);
    assert.match(text, /\n\s*Endpoint:/, `the endpoint on a line of its own: ${JSON.stringify(text)}`);
  });

  it('CodeLens on a schedule template says its next run; on a file that is not JSON, why it was rejected', async () => {
    const page = wb.page;
    // Once a year: it does not fire while the test runs, and its next run is known at once.
    writeQueueFile(queue, 'yearly.json', { id: 'yearly', name: 'Yearly report', command: node, args: ['-e', '0'], schedule: { cron: '0 0 1 1 *', timezone: 'UTC' } });
    const tmp = path.join(queue, 'broken.json.tmp');
    writeFileSync(tmp, '{ "id": "broken-json", "command": "node",, "args": [] }\n');
    renameSync(tmp, path.join(queue, 'broken.json'));
    await waitUntil('the template known', async () => (await getJson<{ id: string }[]>(`${baseUrl}/schedules`)).some((t) => t.id === 'yearly'), 30_000);
    await waitUntil('broken.json rejected', async () => (await getJson<{ action: string }[]>(`${baseUrl}/logs?action=item_rejected,source_error`)).length > 0, 30_000);
    const lensLines = () =>
      page.locator('.editor-group-container.active .codelens-decoration').evaluateAll((els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));

    await openFile(page, 'yearly.json');
    const yearly = await waitUntil('the template lens', async () => (await lensLines()).find((l) => /schedule/.test(l)), 20_000);
    console.log(`      screenshot: ${await screenshot(page, 'small-lens-schedule')}`);
    assert.match(yearly, /schedule · next .*· not run yet/);

    await openFile(page, 'broken.json');
    const broken = await waitUntil('the rejection lens', async () => (await lensLines()).find((l) => /rejected/.test(l)), 20_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}; lenses: ${JSON.stringify(await lensLines())}`);
    });
    console.log(`      screenshot: ${await screenshot(page, 'small-lens-rejected')}`);
    assert.match(broken, /rejected: /);
  });

  it('the dashboard\'s green Launched number is readable on a light theme (contrast at least 4.5:1)', async () => {
    const page = wb.page;
    await runCommand(page, 'Engine Monitor: Show Engine Status');
    const frame = await dashboardFrame(page);
    const value = frame.locator(".card[data-stat='launched'] .card-value");
    await waitUntil('a launched count', async () => Number((await value.textContent()) ?? '0') > 0, 20_000);
    // The text's colour and the nearest background behind it, as the browser computed them.
    const [fg, bg] = await value.evaluate((el) => {
      let b = el as HTMLElement | null;
      let background = 'rgba(0, 0, 0, 0)';
      while (b && /rgba\(.*, 0\)|transparent/.test((background = getComputedStyle(b).backgroundColor))) b = b.parentElement;
      return [getComputedStyle(el).color, background];
    });
    console.log(`      screenshot: ${await screenshot(page, 'small-dashboard-launched-light')}`);
    const ratio = contrast(fg, bg);
    assert.ok(ratio >= 4.5, `Launched ${fg} on ${bg}: ${ratio.toFixed(2)}:1`);
  });

  it('the dashboard\'s log table stays readable in a narrow editor: each message at least 120 px wide', async () => {
    const page = wb.page;
    const frame = await dashboardFrame(page);
    await frame.locator('table.logs tbody tr[data-id]').first().waitFor({ timeout: 20_000 });
    const viewport = page.viewportSize()!;
    const width = () => frame.evaluate(() => window.innerWidth);
    try {
      for (const target of [412, 620]) {
        await page.setViewportSize({ width: page.viewportSize()!.width - ((await width()) - target), height: viewport.height });
        await waitUntil(`a ${target} px dashboard`, async () => Math.abs((await width()) - target) <= 20, 20_000);
        await sleep(500);
        const m = await frame.evaluate(() => {
          const cells = Array.from(document.querySelectorAll('table.logs tbody tr[data-id] .col-message'), (e) => e.getBoundingClientRect());
          return { inner: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, message: Math.min(...cells.map((r) => r.width)) };
        });
        console.log(`      screenshot: ${await screenshot(page, `small-dashboard-logs-${target}`)}`);
        assert.ok(m.message >= 120, `at ${target} px the message column is ${m.message} px wide: ${JSON.stringify(m)}`);
        assert.ok(m.scrollWidth <= m.inner + 1, `no sideways scrolling at ${target} px: ${JSON.stringify(m)}`);
      }
    } finally {
      await page.setViewportSize(viewport);
    }
  });
});

/** WCAG contrast ratio of two CSS rgb()/rgba() colours (the alpha of the text is ignored). */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    // rgb(r, g, b) in 0…255, or color(srgb r g b) in 0…1 (how a color-mix() is computed).
    const scale = c.startsWith('color(') ? 1 : 255;
    const [r, g, bl] = (c.match(/[\d.]+/g) ?? ['0', '0', '0']).slice(0, 3).map((v) => {
      const x = Number(v) / scale;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Opens a workspace file with Quick Open. */
async function openFile(page: Page, name: string): Promise<void> {
  await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
  await page.keyboard.press('Control+P');
  const widget = page.locator('.quick-input-widget');
  await widget.locator('.quick-input-box input').fill(name);
  await widget.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 15_000 });
}
