// Drafts in a real VS Code (code-server + Chromium): with auto-save every 200 ms, a queue entry
// typed character by character is written to disk many times, and VS Code's auto-closed quotes and
// brackets make the half-typed text valid JSON (`"command":"no"}`). The engine must launch none of
// it; Ctrl+S queues the entry, and it launches exactly once.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { ItemDetail, LogEntry, StatusResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, waitForWorkbench, type Workbench } from '../vscode/codeServer';
import { findEndpoint, findEndpointFile, getJson, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;
const DRAFT_LENS = 'draft · save to queue (Ctrl+S)';

/** Opens a workspace file with Quick Open. */
async function openFile(page: Page, name: string): Promise<void> {
  await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
  await page.keyboard.press('Control+P');
  const widget = page.locator('.quick-input-widget');
  await widget.locator('.quick-input-box input').fill(name);
  await widget.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press('Enter');
  await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 15_000 });
}

/** Puts the cursor in the active editor and waits until it has the keyboard. */
async function focusEditor(page: Page): Promise<void> {
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').click();
  await page.locator('.editor-group-container.active .monaco-editor.focused').waitFor({ timeout: 15_000 });
}

/** Waits until the file holds `text` (auto-save wrote it), saying what it holds if it never does. */
async function untilOnDisk(file: string, text: string): Promise<void> {
  let last = '';
  await waitUntil(`auto-save to write ${text}`, async () => (last = readFileSync(file, 'utf8')) === text, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; the file holds ${JSON.stringify(last)}`);
  });
}

async function lensLines(page: Page): Promise<string[]> {
  return page.locator('.editor-group-container.active .codelens-decoration').evaluateAll((els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));
}

/** The engine the window talks to now. */
let baseUrl: string;
const status = () => getJson<StatusResponse>(`${baseUrl}/status`);
const logs = () => getJson<LogEntry[]>(`${baseUrl}/logs?limit=1000&order=asc`);
const logsAbout = async (id: string) => (await logs()).filter((e) => e.itemId === id || e.details?.file === `.engine/queue/${id}.json`);
const deployLogs = () => logsAbout('deploy');
const deployStatus = async (id = 'deploy') => (await fetch(`${baseUrl}/items/${id}`)).status;

/** Two complete scans after now: whatever is on disk now has been looked at. */
async function twoScans(): Promise<void> {
  const from = (await status()).scanner.scans;
  await waitUntil('two scans', async () => (await status()).scanner.scans >= from + 2, 30_000);
}

/** A live engine's URL (after a start or a reload). */
function liveEngine(wb: Workbench): Promise<string> {
  return waitUntil('a live engine', async () => {
    const url = findEndpoint(wb.server.userDataDir);
    return url && (await fetch(`${url}/stats`).then((r) => r.ok).catch(() => false)) && url;
  }, 60_000);
}

/** User settings: auto-save 200 ms after the last keystroke, and no completion while typing. */
function draftSettings(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'engineMonitor.server.port': 0,
    'engineMonitor.engine.pollIntervalMs': 200,
    'files.autoSave': 'afterDelay',
    'files.autoSaveDelay': 200,
    // Completion would accept suggestions while characters are typed; the auto-closing of
    // quotes and brackets, which makes half an entry valid JSON, stays on (the default).
    'editor.quickSuggestions': { other: false, comments: false, strings: false },
    'editor.suggestOnTriggerCharacters': false,
    ...extra,
  };
}

/** Opens a new, empty queue file from the Explorer, as after its "New File". */
async function newQueueFile(page: Page, folder: string, name: string): Promise<string> {
  const file = path.join(folder, '.engine', 'queue', name);
  writeFileSync(file, '');
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).click({ timeout: 30_000 });
  await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 15_000 });
  await focusEditor(page);
  return file;
}

/** Waits until `id` has finished (launched or failed) and returns it. */
function finished(id: string): Promise<ItemDetail> {
  return waitUntil(`${id} to finish`, async () => {
    const d = await fetch(`${baseUrl}/items/${id}`);
    const detail = d.status === 200 && ((await d.json()) as ItemDetail);
    return detail && detail.outcome !== 'pending' && detail;
  }, 60_000);
}

describe('drafts: auto-saved queue files are not launched (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-drafts-ui-'));
    mkdirSync(path.join(folder, '.engine', 'queue'), { recursive: true });
    writeFileSync(path.join(folder, '.engine', 'queue', 'ready.json'), JSON.stringify({ id: 'ready', command: node, args: ['-e', '0'] }));
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: draftSettings(),
      viewport: { width: 1400, height: 800 },
    });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('the first item to launch', async () => (await getJson<ItemDetail>(`${baseUrl}/items/ready`)).state === 'launched', 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('launches nothing while a queue entry is typed with auto-save on, and launches it once at Ctrl+S', async () => {
    const page = wb.page;
    const file = path.join(folder, '.engine', 'queue', 'deploy.json');
    const rejectedBefore = (await status()).scanner.itemsRejected;

    // As the Explorer's "New File" does: an empty file on disk first, then the editor opens it.
    writeFileSync(file, '');
    await twoScans();
    await openFile(page, 'deploy.json');
    await focusEditor(page);

    // Typed as a person types; the pause after "no" lasts until auto-save has written it.
    await page.keyboard.type('{"id":"deploy","name":"Deploy","command":"no', { delay: 40 });
    await untilOnDisk(file, '{"id":"deploy","name":"Deploy","command":"no"}');
    await twoScans();
    assert.equal(await deployStatus(), 404, 'no item from the half-typed, auto-closed entry');
    const draftLenses = await waitUntil('the draft lens', async () => {
      const lines = await lensLines(page);
      return lines.some((l) => l.includes(DRAFT_LENS)) && lines;
    }, 30_000);
    assert.deepEqual(draftLenses, [DRAFT_LENS], 'one lens line, the draft\'s: no "not yet scanned" for an entry the engine is not going to scan');
    console.log(`      screenshot: ${await screenshot(page, 'draft-lens')}`);

    // The rest of the entry: auto-closing completes it, so what auto-save writes now is a whole,
    // valid item. Still a draft: nothing is launched until the user says so.
    await page.keyboard.type('de","args":["-e","0', { delay: 40 });
    const complete = '{"id":"deploy","name":"Deploy","command":"node","args":["-e","0"]}';
    await untilOnDisk(file, complete);
    await twoScans();
    assert.equal(await deployStatus(), 404, 'no item from an auto-saved draft, however complete');
    assert.deepEqual(await deployLogs(), [], 'no discovery, no rejection, no log entry for the draft');
    assert.equal((await status()).scanner.itemsRejected, rejectedBefore, 'nothing rejected, not even the empty file');

    await page.keyboard.press('Control+s');
    const launched = await waitUntil('deploy to launch', async () => {
      const d = await fetch(`${baseUrl}/items/deploy`);
      if (d.status !== 200) return false;
      const detail = (await d.json()) as ItemDetail;
      return detail.outcome !== 'pending' && detail;
    }, 60_000);
    assert.equal(launched.outcome, 'launched');
    assert.equal(launched.attempts.length, 1);
    assert.equal(launched.attempts[0].outcome, 'succeeded');
    await waitUntil('the lens to show the item instead of the draft', async () => {
      const lines = await lensLines(page);
      return lines.some((l) => l.includes('launched')) && !lines.some((l) => l.includes('draft')) && lines;
    }, 30_000);
    console.log(`      screenshot: ${await screenshot(page, 'draft-saved')}`);

    // Later scans read nothing new: one discovery, one attempt.
    await twoScans();
    const after = await getJson<ItemDetail>(`${baseUrl}/items/deploy`);
    assert.equal(after.attempts.length, 1);
    assert.deepEqual((await deployLogs()).filter((e) => e.action.startsWith('item_')).map((e) => e.action), ['item_discovered']);
    assert.equal((await deployLogs()).filter((e) => e.action === 'launch_started').length, 1);
  });

  it('reads a draft when its editor closes', async () => {
    const page = wb.page;
    const file = await newQueueFile(page, folder, 'close.json');
    await page.keyboard.type('{"id":"closed","command":"node","args":["-e","0', { delay: 40 });
    await untilOnDisk(file, '{"id":"closed","command":"node","args":["-e","0"]}');
    await twoScans();
    assert.equal(await deployStatus('closed'), 404, 'a draft while its editor is open');
    await runCommand(page, 'View: Close Editor');
    await page.locator('.tab', { hasText: 'close.json' }).waitFor({ state: 'detached', timeout: 15_000 });
    const done = await finished('closed');
    assert.deepEqual([done.outcome, done.attempts.length], ['launched', 1]);
  });

  it('keeps a draft through a window reload: the reloaded window holds it again before the old hold lapses', async () => {
    const page = wb.page;
    const holdsFile = path.join(path.dirname(findEndpointFile(wb.server.userDataDir)!), 'draft-holds.json');
    const holders = () => Object.keys(JSON.parse(readFileSync(holdsFile, 'utf8')) as Record<string, string[]>);
    const file = await newQueueFile(page, folder, 'reload.json');
    await page.keyboard.type('{"id":"reloaded","command":"node","args":["-e","0', { delay: 40 });
    await untilOnDisk(file, '{"id":"reloaded","command":"node","args":["-e","0"]}');
    const before = await waitUntil('the window\'s hold in the storage folder', async () => {
      const h = holders();
      return h.length === 1 && h[0];
    }, 30_000);

    await runCommand(page, 'Developer: Reload Window').catch(() => undefined); // the palette goes with the page
    await waitForWorkbench(page);
    await page.locator('.tab.active', { hasText: 'reload.json' }).waitFor({ timeout: 60_000 });
    baseUrl = await liveEngine(wb);
    await waitUntil('the draft lens in the reloaded window', async () => (await lensLines(page)).includes(DRAFT_LENS), 60_000);
    // The old window's hold lapses (it renews no more); the new window's holds the file now.
    await waitUntil('the old window\'s hold to lapse and the new one\'s to stand', async () => {
      const h = holders();
      return h.length === 1 && h[0] !== before;
    }, 90_000);
    await twoScans();
    assert.equal(await deployStatus('reloaded'), 404, 'the draft is still not read after the reload');

    await focusEditor(page);
    await page.keyboard.press('Control+s');
    const done = await finished('reloaded');
    assert.deepEqual([done.outcome, done.attempts.length], ['launched', 1]);
  });
});

describe('drafts: an engine started while a draft is open does not read it (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-drafts-off-ui-'));
    mkdirSync(path.join(folder, '.engine', 'queue'), { recursive: true });
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: draftSettings({ 'engineMonitor.engine.autoStart': false }),
      viewport: { width: 1400, height: 800 },
    });
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('holds a draft typed before the engine runs, from the engine\'s first scan on', async () => {
    const page = wb.page;
    // The Explorer shows the queue folder folded in this window: Quick Open, whose file list is new.
    const file = path.join(folder, '.engine', 'queue', 'early.json');
    writeFileSync(file, '');
    await openFile(page, 'early.json');
    await focusEditor(page);
    await page.keyboard.type('{"id":"early","command":"node","args":["-e","0', { delay: 40 });
    await untilOnDisk(file, '{"id":"early","command":"node","args":["-e","0"]}');
    await waitUntil('the draft lens', async () => (await lensLines(page)).includes(DRAFT_LENS), 30_000);

    await runCommand(page, 'Engine Monitor: Start Engine');
    baseUrl = await liveEngine(wb);
    await twoScans();
    assert.equal(await deployStatus('early'), 404, 'the new engine\'s scans passed over the draft');
    assert.deepEqual(await logsAbout('early'), []);

    await focusEditor(page);
    await page.keyboard.press('Control+s');
    const done = await finished('early');
    assert.deepEqual([done.outcome, done.attempts.length], ['launched', 1]);
  });
});
