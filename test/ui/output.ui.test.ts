// Show Output, failure notifications and rejected definitions in a real VS Code (code-server +
// Chromium, see test/vscode/codeServer.ts): what the user sees, read from the page. The terminal
// is drawn by xterm's DOM renderer (GPU acceleration off), so its rows are text and its colours
// are classes (`xterm-fg-1`: ANSI red, drawn with the theme's terminal.ansiRed).
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import type { ItemDetail, LogEntry } from '../../src/shared/api';
import { REPO_ROOT, openWorkbench, runCommand, runPickCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;
const LINES = {
  id: 'two-hundred',
  name: 'Two hundred lines',
  command: node,
  args: ['-e', "for (let i = 1; i <= 200; i++) console.log('line ' + i + ' of 200'); console.error('a warning on stderr')"],
  maxAttempts: 1,
};

function makeWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-output-ui-'));
  const queue = path.join(dir, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  writeFileSync(path.join(queue, 'two-hundred.json'), JSON.stringify(LINES, null, 2));
  return dir;
}

/** The visible rows of the active terminal, as text. */
async function terminalRows(page: Page): Promise<string[]> {
  return page.locator('.terminal-wrapper.active .xterm-rows > div').evaluateAll((rows) => rows.map((r) => r.textContent ?? ''));
}

function notification(page: Page, text: RegExp): Locator {
  return page.locator('.notification-toast', { hasText: text }).first();
}

describe('Show Output, failure and rejection notifications (code-server)', function () {
  this.timeout(240_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;

  before(async function () {
    for (const f of ['dist/extension.js', 'dist/cli.js']) {
      if (!existsSync(path.join(REPO_ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
    }
    folder = makeWorkspace();
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300, 'terminal.integrated.gpuAcceleration': 'off' },
    });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('two-hundred to launch', async () => (await getJson<ItemDetail>(`${baseUrl}/items/two-hundred`)).outcome === 'launched', 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('Show Output from the palette: the terminal shows the first and the last line, stderr in red', async () => {
    const page = wb.page;
    await runPickCommand(page, 'Engine Monitor: Show Output', 'Two hundred lines', { filter: 'two hund' });

    // The terminal is named after the item and the attempt.
    await page.locator('.terminal-tabs-entry, .single-terminal-tab, .terminal-wrapper.active', { hasText: /Two hundred lines · attempt 1\/1/ })
      .first().waitFor({ timeout: 20_000 }).catch(async () => {
        const label = await page.locator('.terminal-wrapper.active .xterm').getAttribute('aria-label').catch(() => null);
        assert.match(label ?? '', /Two hundred lines · attempt 1\/1/);
      });

    const bottom = await waitUntil('the end of the output in the terminal', async () => {
      const rows = await terminalRows(page);
      return rows.some((r) => r.includes('attempt 1 succeeded')) && rows;
    }, 20_000);
    assert.ok(bottom.some((r) => r.trim() === 'line 200 of 200'), `last line shown: ${JSON.stringify(bottom)}`);
    const red = await page.locator('.terminal-wrapper.active .xterm-rows span.xterm-fg-1', { hasText: 'a warning on stderr' }).count();
    assert.ok(red > 0, 'the stderr line is drawn in ANSI red');
    const redStdout = await page.locator('.terminal-wrapper.active .xterm-rows span.xterm-fg-1', { hasText: /line \d+ of 200/ }).count();
    assert.equal(redStdout, 0, 'stdout is not red');
    console.log(`      screenshot: ${await screenshot(page, 'show-output-terminal')}`);

    await runCommand(page, 'Terminal: Scroll to Top');
    const top = await waitUntil('the top of the output', async () => {
      const rows = await terminalRows(page);
      return rows.some((r) => r.trim() === 'line 1 of 200') && rows;
    }, 10_000);
    assert.match(top[0], /Two hundred lines \(two-hundred\) · attempt 1 of 1/);
  });

  it('a rejected new definition of a launched item warns with Open File, which opens the queue file', async () => {
    const page = wb.page;
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    writeFileSync(path.join(folder, '.engine', 'queue', 'two-hundred.json'), JSON.stringify({ ...LINES, args: ['-e', '0'] }, null, 2));
    const toast = notification(page, /new definition of "two-hundred" was not applied/);
    await toast.waitFor({ timeout: 30_000 });
    assert.match((await toast.textContent()) ?? '', /already launched/);
    await toast.locator('.monaco-button', { hasText: 'Open File' }).click();
    await page.locator('.part.editor .tab', { hasText: 'two-hundred.json' }).first().waitFor({ timeout: 15_000 });
  });

  it('an item that fails for good notifies with Retry and Show Output; Retry retries it', async () => {
    const page = wb.page;
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    writeFileSync(
      path.join(folder, '.engine', 'queue', 'fails.json'),
      JSON.stringify({ id: 'fails', name: 'Exits 3', command: node, args: ['-e', "console.error('broken'); process.exit(3)"], maxAttempts: 1 }),
    );
    const toast = notification(page, /"Exits 3" failed for good/);
    await toast.waitFor({ timeout: 30_000 });
    assert.equal(await toast.locator('.monaco-button', { hasText: 'Show Output' }).count(), 1);
    await toast.locator('.monaco-button', { hasText: /^Retry$/ }).click();
    await waitUntil('an item_retried entry for fails', async () => (await getJson<LogEntry[]>(`${baseUrl}/logs?action=item_retried&item=fails`)).length > 0, 15_000);
    // It fails again, and this time Show Output opens its output.
    const again = notification(page, /"Exits 3" failed for good/);
    await again.waitFor({ timeout: 30_000 });
    await again.locator('.monaco-button', { hasText: 'Show Output' }).click();
    await waitUntil('the failed attempt\'s output in a terminal', async () => {
      const rows = await terminalRows(page);
      return rows.some((r) => r.includes('broken')) && rows.some((r) => /attempt 1 failed/.test(r));
    }, 20_000);
  });

  it('an item its dependency fails (no attempt) counts in the failure notification', async () => {
    const page = wb.page;
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    writeFileSync(
      path.join(folder, '.engine', 'queue', 'chain.json'),
      JSON.stringify([
        { id: 'parent', name: 'Parent', command: node, args: ['-e', 'process.exit(5)'], maxAttempts: 1 },
        { id: 'child', name: 'Child', command: node, args: ['-e', '0'], dependsOn: ['parent'] },
      ]),
    );
    // Both fail for good in the same moment: one notification for the two.
    const toast = notification(page, /2 items failed for good/);
    await toast.waitFor({ timeout: 30_000 });
    const child = await getJson<ItemDetail>(`${baseUrl}/items/child`);
    assert.equal(child.error, 'dependency failed: parent');
    console.log(`      screenshot: ${await screenshot(page, 'dependency-failed-notification')}`);
  });
});
