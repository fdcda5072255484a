// CodeLens in queue files in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): a .json array and a .jsonl file open in the editor show each
// entry's state as the engine has it, and clicking a lens's Cancel ends a running `sleep`.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { ItemDetail } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;
const FAR = '2099-01-01T00:00:00.000Z';

function makeWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-codelens-ui-'));
  const queue = path.join(dir, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  writeFileSync(
    path.join(queue, 'jobs.json'),
    JSON.stringify(
      [
        { id: 'build', command: node, args: ['-e', 'console.log("built")'] },
        { id: 'lint', command: node, args: ['-e', 'console.error("3 problems"); process.exit(3)'], maxAttempts: 1 },
        { id: 'nightly-report', command: node, args: ['-e', '0'], runAt: FAR },
        { id: 'long-sleep', command: 'sleep', args: ['300'] },
      ],
      null,
      2,
    ) + '\n',
  );
  writeFileSync(
    path.join(queue, 'more.jsonl'),
    [JSON.stringify({ id: 'resize-images', command: node, args: ['-e', '0'] }), '', JSON.stringify({ command: node, args: ['-e', '0'], runAt: FAR })].join('\n') + '\n',
  );
  return dir;
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

/** The text of each lens line in the visible editor (one `.codelens-decoration` per line). */
async function lensLines(page: Page): Promise<string[]> {
  return page.locator('.editor-group-container.active .codelens-decoration').evaluateAll((els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));
}

describe('CodeLens in queue files (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;
  const item = (id: string) => getJson<ItemDetail>(`${baseUrl}/items/${encodeURIComponent(id)}`);

  before(async function () {
    assertUiBuild();
    folder = makeWorkspace();
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300, 'workbench.colorTheme': 'Default Dark Modern' },
      viewport: { width: 1400, height: 800 },
    });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('build to launch, lint to fail, long-sleep to run', async () =>
      (await item('build')).state === 'launched' && (await item('lint')).state === 'failed' && (await item('long-sleep')).state === 'running', 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('shows each entry\'s state above it; Hold and Cancel from a lens act on the item', async () => {
    const page = wb.page;
    await openFile(page, 'jobs.json');
    const lines = await waitUntil('four lens lines with the engine\'s states', async () => {
      const got = await lensLines(page);
      return got.length === 4 && got.some((l) => l.includes('running')) && got;
    }, 30_000);
    const find = (text: string) => lines.find((l) => l.includes(text));
    assert.match(find('launched') ?? '', /launched · 1\/3 · .*\| Show Output \| Open in Terminal/);
    assert.match(find('failed') ?? '', /failed · 1\/1 · .*\| Show Output \| Retry \| Open in Terminal/);
    assert.match(find('scheduled') ?? '', /scheduled · 0\/3 \| Cancel \| Hold$/);
    assert.match(find('running') ?? '', /running · 1\/3 \| Show Output \| Cancel \| Hold \| Open in Terminal/);

    // Hold the scheduled item from its lens: the lens turns to held, with Release.
    await page.locator('.editor-group-container.active .codelens-decoration', { hasText: 'scheduled' }).locator('a', { hasText: /^Hold$/ }).click();
    await waitUntil('nightly-report to be held', async () => (await item('nightly-report')).state === 'held', 30_000);
    await waitUntil('the lens to say held', async () => (await lensLines(page)).some((l) => /held · 0\/3 \| Cancel \| Release/.test(l)), 30_000);
    console.log(`      screenshot: ${await screenshot(page, 'codelens-queue-json')}`);

    // Cancel the running sleep from its lens.
    await page.locator('.editor-group-container.active .codelens-decoration', { hasText: 'running' }).locator('a', { hasText: /^Cancel$/ }).click();
    const cancelled = await waitUntil('long-sleep to be cancelled', async () => {
      const d = await item('long-sleep');
      return d.state === 'failed' && d;
    }, 30_000);
    assert.equal(cancelled.error, 'cancelled');
    assert.equal(cancelled.attempts[0].error, 'cancelled');
    await waitUntil('the lens to say failed for the sleep', async () => (await lensLines(page)).filter((l) => l.startsWith('failed') || l.includes(' failed ·')).length === 2, 30_000);
    console.log(`      screenshot: ${await screenshot(page, 'codelens-cancelled')}`);
  });

  it('shows lenses on a .jsonl file, one per non-blank line, derived ids included', async () => {
    const page = wb.page;
    await openFile(page, 'more.jsonl');
    const lines = await waitUntil('two lens lines', async () => {
      const got = await lensLines(page);
      return got.length === 2 && got.some((l) => l.includes('launched')) && got.some((l) => l.includes('scheduled')) && got;
    }, 30_000);
    assert.equal(lines.length, 2);
    console.log(`      screenshot: ${await screenshot(page, 'codelens-queue-jsonl')}`);
  });
});
