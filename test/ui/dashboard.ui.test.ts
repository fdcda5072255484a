// "Show Engine Status" in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts):
// the dashboard webview shows the engine's own numbers, filters its log table through /logs,
// renders hostile engine strings as text, survives a window reload with its filter, and looks
// right in light, dark and high-contrast themes (screenshots in test-results/screenshots/).
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Frame, FrameLocator, Page } from 'playwright-core';
import type { LogEntry, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, waitForWorkbench, type Workbench } from '../vscode/codeServer';
import { findEndpoint, findEndpointFile, getJson, sleep, waitUntil } from '../vscode/engineProbe';
import { dashboardFrame, pickColorTheme } from '../vscode/workbenchUi';

/** An engine string that would run script if it ever reached the page as HTML. */
const HOSTILE_NAME = '<img src=x onerror=alert(document.domain)> pwned';
const COUNTERS = ['total', 'launched', 'pending', 'failed', 'totalLaunches', 'totalFailed'] as const;


/** A workspace with a queue: items that succeed, one that fails for good, one with a hostile name. */
function makeWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-dashboard-'));
  const queue = path.join(dir, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const node = process.execPath;
  const items = [
    { id: 'ok-1', name: 'Quick success', command: node, args: ['-e', 'process.exit(0)'] },
    { id: 'ok-2', name: 'Another success', command: node, args: ['-e', 'process.exit(0)'] },
    { id: 'ok-3', name: 'Third success', command: node, args: ['-e', 'setTimeout(() => {}, 200)'] },
    { id: 'fails', name: 'Always exits 3', command: node, args: ['-e', 'process.exit(3)'], maxAttempts: 2 },
    { id: 'hostile', name: HOSTILE_NAME, command: node, args: ['-e', 'process.exit(0)'] },
    // A schedule template for the Upcoming list; 29 February, so no occurrence fires during a run
    // and changes the totals (a template itself is not counted).
    { id: 'leap-day', command: node, args: ['-e', '0'], schedule: { cron: '0 2 29 2 *', timezone: 'Europe/Berlin' } },
  ];
  writeFileSync(path.join(queue, 'items.jsonl'), items.map((i) => JSON.stringify(i)).join('\n') + '\n');
  return dir;
}

/** The URL of the engine that answers now (a reload or a crash restarts it, with port 0 elsewhere). */
function liveEndpoint(wb: Workbench): Promise<string> {
  return waitUntil('a live engine endpoint', async () => {
    const url = findEndpoint(wb.server.userDataDir);
    return url && (await fetch(`${url}/stats`).then((r) => r.ok).catch(() => false)) ? url : undefined;
  }, 60_000);
}

/** The dashboard's content frame (webviews live in two nested iframes). */
function dashboard(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

/** The same frame as a Frame, to evaluate in it. */
async function cardValues(frame: Frame): Promise<Record<string, number | undefined>> {
  return frame.evaluate((keys) => {
    const out: Record<string, number | undefined> = {};
    for (const k of keys) {
      const v = document.querySelector<HTMLElement>(`[data-stat="${k}"] .card-value`)?.dataset.value;
      out[k] = v === undefined ? undefined : Number(v);
    }
    return out;
  }, [...COUNTERS]);
}

/** A colour theme picked from the palette, then the dashboard seen in it. */
async function setTheme(wb: Workbench, theme: string, bodyClass: string): Promise<void> {
  const page = wb.page;
  await pickColorTheme(page, theme);
  const frame = await dashboardFrame(page);
  await frame.evaluate(() => window.scrollTo(0, 0));
  await waitUntil(`theme ${theme}`, () => frame.evaluate((c) => document.body.classList.contains(c), bodyClass), 20_000);
  await sleep(500);
}

/** Waits until the log table has finished reading /logs for its current filter. */
async function logsSettled(frame: Frame): Promise<void> {
  await waitUntil('the log table to load', async () => (await frame.locator('.log-scroll').getAttribute('aria-busy')) === 'false');
}

describe('Show Engine Status dashboard (code-server)', function () {
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
        'workbench.colorTheme': 'Default Light Modern',
        'engineMonitor.server.port': 0,
        'engineMonitor.engine.pollIntervalMs': 500,
      },
    });
    wb.page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    baseUrl = await liveEndpoint(wb);
  });

  after(async function () {
    await wb?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('opens from the command palette and shows the totals of GET /stats', async function () {
    // Let the queue settle (every item launched or failed), so the numbers stand still.
    await waitUntil(
      'all items to settle',
      async () => {
        const s = await getJson<StatsResponse>(`${baseUrl}/stats`);
        return s.overview.total === 5 && s.overview.pending === 0 && s.overview.failed === 1;
      },
      60_000,
    );
    await runCommand(wb.page, 'Show Engine Status');
    const frame = await dashboardFrame(wb.page);
    await frame.locator('.connection[data-connected="true"]').waitFor({ timeout: 30_000 });

    const stats = (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview;
    const shown = await waitUntil('the cards to show /stats', async () => {
      const v = await cardValues(frame);
      return COUNTERS.every((k) => v[k] === stats[k]) && v;
    });
    assert.deepEqual(shown, Object.fromEntries(COUNTERS.map((k) => [k, stats[k]])));
    assert.equal(stats.launched + stats.pending + stats.failed, stats.total);

    // Health and status sections are filled from /health and /status.
    const health = await getJson<{ status: string }>(`${baseUrl}/health`);
    assert.equal(await frame.locator('[data-health]').getAttribute('data-health'), health.status);
    assert.match((await frame.locator('section[aria-labelledby="last-launch-title"]').textContent()) ?? '', /Outcome/);
    // Upcoming lists the template's next occurrence from GET /schedules.
    const upcoming = await waitUntil('the Upcoming list', async () => {
      const text = (await frame.locator('section.upcoming li[data-schedule-id="leap-day"]').textContent().catch(() => null)) ?? '';
      return text.includes('0 2 29 2 * (Europe/Berlin)') && text;
    });
    assert.match(upcoming, /^leap-dayin \d+ d \d+ h0 2 29 2 \* \(Europe\/Berlin\)$/);
    // The chart counted the attempts of the last hour.
    const started = Number(await frame.locator('.chart-summary[data-started]').getAttribute('data-started'));
    assert.equal(started, stats.totalLaunches);

    // The page's policy: nothing but our own styles, fonts and the nonce'd script.
    const csp = await frame.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content') ?? '');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]{16,}'/);
    assert.doesNotMatch(csp, /unsafe-(inline|eval)/);
    // Codicons (a font) and the stylesheet loaded under that policy.
    assert.equal(await frame.evaluate(() => document.fonts.check('16px codicon')), true);
    assert.deepEqual(wb.consoleErrors.filter((e) => /Content Security Policy/i.test(e)), []);

    await wb.page.keyboard.press('Escape');
    const file = await screenshot(wb.page, 'dashboard-light');
    console.log(`      screenshot: ${file}`);
  });

  it('filters the log table by action through /logs', async function () {
    const d = dashboard(wb.page);
    const frame = await dashboardFrame(wb.page);
    await d.locator('.action-picker summary').click();
    await d.locator('label[for="action-launch_failed"]').click();
    await d.locator('.action-picker summary').click();

    const actions = await waitUntil('only launch_failed rows', async () => {
      const a = await frame.locator('table.logs tbody tr[data-action]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.action));
      return a.length > 0 && a.every((x) => x === 'launch_failed') && a;
    });
    const api = await getJson<LogEntry[]>(`${baseUrl}/logs?action=launch_failed`);
    assert.equal(actions.length, api.length, 'the table shows as many launch_failed rows as /logs returns');
    assert.equal(await d.locator('.action-picker summary').textContent(), 'Actions: launch_failed');
    await frame.locator('table.logs').scrollIntoViewIfNeeded();
    console.log(`      screenshot: ${await screenshot(wb.page, 'dashboard-logs-filtered')}`);
  });

  it('keeps its filter after a window reload (serializer + webview state)', async function () {
    await runCommand(wb.page, 'Developer: Reload Window').catch(() => undefined); // the palette goes with the page
    await sleep(2000);
    await waitForWorkbench(wb.page);
    const frame = await dashboardFrame(wb.page);
    await waitUntil('the restored filter', async () => (await frame.locator('.action-picker summary').textContent()) === 'Actions: launch_failed');
    await waitUntil('filtered rows after the reload', async () => {
      const a = await frame.locator('table.logs tbody tr[data-action]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.action));
      return a.length > 0 && a.every((x) => x === 'launch_failed');
    });
    // Back to every action for the next test.
    await frame.locator('button', { hasText: 'Clear filter' }).click();
    await logsSettled(frame);
  });

  it('shows a hostile log message as text and runs no script', async function () {
    const frame = await dashboardFrame(wb.page);
    await frame.locator('#log-search').fill('onerror');
    await frame.locator('#log-search').press('Enter');
    await logsSettled(frame);
    const messages = await waitUntil('rows matching "onerror"', async () => {
      const m = await frame.locator('table.logs tbody tr[data-action] .message').allTextContents();
      return m.length > 0 && m;
    });
    for (const m of messages) assert.ok(m.includes(HOSTILE_NAME), `row shows the name as text: ${m}`);
    assert.equal(await frame.locator('table.logs img').count(), 0, 'no <img> element was created');
    assert.equal(await frame.locator('img').count(), 0, 'no <img> element anywhere in the dashboard');
    assert.deepEqual(dialogs, [], 'no alert() ran');
    assert.deepEqual(wb.consoleErrors.filter((e) => /Content Security Policy/i.test(e)), [], 'nothing was even attempted');
    await frame.locator('table.logs').scrollIntoViewIfNeeded();
    console.log(`      screenshot: ${await screenshot(wb.page, 'dashboard-hostile-text')}`);
    await frame.locator('#log-search').fill('');
    await frame.locator('#log-search').press('Enter');
  });

  it('stops and starts the engine from its buttons', async function () {
    baseUrl = await liveEndpoint(wb); // the reload above started a new engine, on another port
    const frame = await dashboardFrame(wb.page);
    const engineCheck = () => frame.locator('[data-check="engine"] .check-value').textContent();
    await frame.locator('button[data-command="stop"]').click();
    await waitUntil('engine stopped in the dashboard', async () => (await engineCheck()) === 'stopped');
    const stopped = await getJson<{ status: string; checks: { engine: string } }>(`${baseUrl}/health`);
    assert.equal(stopped.checks.engine, 'stopped');
    assert.equal(await frame.locator('[data-health]').getAttribute('data-health'), stopped.status);
    assert.ok(await frame.locator('button[data-command="pollNow"]').isDisabled(), 'Poll now is off while stopped');

    await frame.locator('button[data-command="start"]').click();
    await waitUntil('engine running in the dashboard', async () => (await engineCheck()) === 'running');
    assert.equal((await getJson<{ checks: { engine: string } }>(`${baseUrl}/health`)).checks.engine, 'running');
    assert.ok(await frame.locator('button[data-command="start"]').isDisabled(), 'Start is off while running');
  });

  it('shows "engine not reachable" instead of stale numbers when the engine dies', async function () {
    const frame = await dashboardFrame(wb.page);
    // Record the offline state when it happens: the extension restarts a crashed engine quickly.
    await frame.evaluate(() => {
      const w = window as unknown as { offlineSeen?: { banner: string; total: string | null } };
      new MutationObserver(() => {
        if (document.body.classList.contains('offline') && !w.offlineSeen) {
          w.offlineSeen = {
            banner: document.querySelector('.banner')?.textContent ?? '',
            total: document.querySelector('[data-stat="total"] .card-value')?.textContent ?? null,
          };
        }
      }).observe(document.body, { attributes: true, attributeFilter: ['class'] });
    });
    const endpointFile = await waitUntil('endpoint.json', async () => findEndpointFile(wb.server.userDataDir));
    const { pid } = JSON.parse(readFileSync(endpointFile, 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');

    const seen = await waitUntil('the offline state', () =>
      frame.evaluate(() => (window as unknown as { offlineSeen?: { banner: string; total: string | null } }).offlineSeen),
    );
    assert.match(seen.banner, /not reachable|No engine is running/);
    assert.equal(seen.total, '—', 'no stale numbers while offline');

    // The extension restarts the engine; the dashboard reads everything again.
    await frame.locator('.connection[data-connected="true"]').waitFor({ timeout: 60_000 });
    baseUrl = await liveEndpoint(wb);
    const stats = (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview;
    await waitUntil('cards after the restart', async () => {
      const v = await cardValues(frame);
      return COUNTERS.every((k) => v[k] === stats[k]);
    });
  });

  it('reads everything again when its hidden tab is shown (one panel only)', async function () {
    await runCommand(wb.page, 'File: New Untitled Text File');
    await waitUntil('the dashboard to be hidden', async () => (await wb.page.locator('iframe.webview.ready').count()) === 0 || !(await wb.page.locator('iframe.webview.ready').first().isVisible()));
    await runCommand(wb.page, 'Show Engine Status');
    const frame = await dashboardFrame(wb.page);
    const stats = (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview;
    await waitUntil('cards after showing again', async () => {
      const v = await cardValues(frame);
      return COUNTERS.every((k) => v[k] === stats[k]);
    });
    assert.equal(await wb.page.locator('.tab', { hasText: 'Engine Status' }).count(), 1, 'revealed, not opened twice');
  });

  it('follows the theme: dark and high contrast screenshots', async function () {
    await setTheme(wb, 'Dark Modern', 'vscode-dark');
    console.log(`      screenshot: ${await screenshot(wb.page, 'dashboard-dark')}`);
    await setTheme(wb, 'Dark High Contrast', 'vscode-high-contrast');
    console.log(`      screenshot: ${await screenshot(wb.page, 'dashboard-high-contrast')}`);
    // Text colour comes from the theme, not from the stylesheet's defaults.
    const frame = await dashboardFrame(wb.page);
    const color = await frame.evaluate(() => getComputedStyle(document.body).color);
    assert.equal(color, 'rgb(255, 255, 255)');
  });
});
