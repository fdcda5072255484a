// The dashboard's item detail acts on the item, in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts) against a real engine: each button is offered only in the states it
// applies to (the Items view's rule), and clicking it does the real thing. Hold then Release moves a
// scheduled item to held and back; Cancel fails a running one; Retry launches a failed one again
// (it then succeeds); Show Output opens the item's terminal; the source path opens the queue file
// with the cursor on the item's entry. Screenshots land in test-results/screenshots/detail-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import type { ItemDetail, LogEntry } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;
/** Fails at its first launch and succeeds at every later one (a file in the workspace remembers). */
const FLIP = {
  id: 'flip',
  name: 'Fails once',
  command: node,
  args: ['-e', "const fs = require('fs'); if (fs.existsSync('flip.ok')) { console.log('second time lucky'); process.exit(0) } fs.writeFileSync('flip.ok', ''); console.error('first launch fails'); process.exit(4)"],
  maxAttempts: 1,
};
/** Two entries in one file: the source link must land on the second. */
const SEVERAL = [
  { id: 'later', name: 'Far future', command: node, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' },
  { id: 'sleeper', name: 'Sleeps long', command: node, args: ['-e', "console.log('sleeping'); setTimeout(() => {}, 600000)"], maxAttempts: 1 },
];
const SEVERAL_TEXT = JSON.stringify(SEVERAL, null, 2);

async function dashboardFrame(page: Page): Promise<Frame> {
  return waitUntil('the dashboard frame', async () => {
    for (const f of page.frames()) {
      if (f === page.mainFrame()) continue;
      if (f.url().includes('webview') && (await f.locator('main#app .cards').count().catch(() => 0)) > 0) return f;
    }
    return undefined;
  });
}

describe('Actions in the dashboard\'s item detail (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;
  let frame: Frame;

  const item = (id: string) => getJson<ItemDetail>(`${baseUrl}/items/${encodeURIComponent(id)}`);
  const detail = () => frame.locator('section.item-detail');
  const button = (action: string) => detail().locator(`.detail-head button[data-action="${action}"]`);
  /** The actions shown now, in order. */
  const shownActions = () => detail().locator('.detail-head button.item-action:not([hidden])').evaluateAll((bs) => bs.map((b) => b.getAttribute('data-action')));

  async function open(id: string): Promise<void> {
    const link = frame.locator(`table.logs button.item-link[data-item-id="${id}"]`).first();
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    await frame.locator(`section.item-detail[data-item-id="${id}"] .state-badge`).waitFor({ timeout: 15_000 });
  }
  async function stateShown(state: string): Promise<void> {
    await frame.locator(`section.item-detail[data-state="${state}"]`).waitFor({ timeout: 30_000 });
  }

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-detail-ui-'));
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    writeFileSync(path.join(queue, 'flip.json'), JSON.stringify(FLIP, null, 2));
    writeFileSync(path.join(queue, 'several.json'), SEVERAL_TEXT);
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300, 'terminal.integrated.gpuAcceleration': 'off' },
    });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('flip to fail and sleeper to run', async () => (await item('flip')).state === 'failed' && (await item('sleeper')).state === 'running', 60_000);
    await runCommand(wb.page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await runCommand(wb.page, 'Show Engine Status');
    frame = await dashboardFrame(wb.page);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('Hold then Release on a scheduled item: held, then scheduled again', async () => {
    await open('later');
    await stateShown('scheduled');
    assert.deepEqual(await shownActions(), ['cancel', 'hold'], 'a scheduled item that never ran: Cancel and Hold, no Retry, no Show Output');
    await button('hold').click();
    await stateShown('held');
    assert.equal((await item('later')).state, 'held', 'the engine holds it');
    assert.deepEqual(await shownActions(), ['cancel', 'release']);
    console.log(`      screenshot: ${await screenshot(wb.page, 'detail-held')}`);
    await button('release').click();
    await stateShown('scheduled');
    assert.equal((await item('later')).state, 'scheduled', 'the engine released it');
    const released = await getJson<LogEntry[]>(`${baseUrl}/logs?action=item_held,item_released&item=later&order=asc`);
    assert.deepEqual(released.map((e) => e.action), ['item_held', 'item_released']);
  });

  it('the source path opens the queue file with the cursor on the item\'s entry', async () => {
    await open('sleeper');
    const link = detail().locator('button.source-link');
    assert.equal(await link.textContent(), '.engine/queue/several.json');
    await link.click();
    const page = wb.page;
    await page.locator('.part.editor .tab.active', { hasText: 'several.json' }).first().waitFor({ timeout: 15_000 });
    // The second entry's opening brace: its line in the file as written (1-based).
    const line = SEVERAL_TEXT.split('\n').findIndex((l, i, all) => l.trim() === '{' && all[i + 1]?.includes('"sleeper"')) + 1;
    assert.ok(line > 1);
    const selection = page.locator('.statusbar-item[id="status.editor.selection"]');
    await waitUntil(`the cursor at Ln ${line}`, async () => ((await selection.textContent()) ?? '').includes(`Ln ${line},`), 15_000);
    console.log(`      screenshot: ${await screenshot(page, 'detail-source-opened')}`);
  });

  it('Cancel on a running item fails it; Retry is offered then', async () => {
    await open('sleeper');
    await stateShown('running');
    assert.deepEqual(await shownActions(), ['cancel', 'hold', 'showOutput']);
    await button('cancel').click();
    await stateShown('failed');
    const d = await item('sleeper');
    assert.equal(d.state, 'failed');
    assert.equal(d.error, 'cancelled');
    assert.deepEqual(await shownActions(), ['retry', 'showOutput']);
  });

  it('Show Output opens the item\'s terminal, Retry launches the failed item again', async () => {
    const page = wb.page;
    await open('flip');
    await stateShown('failed');
    assert.deepEqual(await shownActions(), ['retry', 'showOutput']);
    console.log(`      screenshot: ${await screenshot(page, 'detail-failed-actions')}`);
    await button('showOutput').click();
    await waitUntil('the item\'s terminal with its output', async () => {
      const label = (await page.locator('.terminal-wrapper.active .xterm').getAttribute('aria-label').catch(() => null)) ?? '';
      const rows = await page.locator('.terminal-wrapper.active .xterm-rows > div').evaluateAll((rs) => rs.map((r) => r.textContent ?? ''));
      return /Fails once/.test(label + rows.join('\n')) && rows.some((r) => r.includes('first launch fails'));
    }, 30_000);
    console.log(`      screenshot: ${await screenshot(page, 'detail-show-output')}`);

    await button('retry').click();
    await stateShown('launched');
    const d = await item('flip');
    assert.equal(d.outcome, 'launched');
    const started = await getJson<LogEntry[]>(`${baseUrl}/logs?action=launch_started&item=flip`);
    assert.equal(started.length, 2, 'launched a second time');
    assert.deepEqual(await shownActions(), ['showOutput'], 'a launched item: nothing to retry, cancel or hold');
  });
});
