// Problem matchers in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts): an item
// runs the project's own tsc on a broken file and fails; the Problems panel lists its `$tsc` match
// under the file, with the item's name as source and tsc's line and column; once the file is fixed
// and the item retried (Retry All Failed from the palette), the successful attempt clears it. The
// dashboard's item detail counts the failed attempt's problems.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { ItemDetail } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const BROKEN = 'export function total(prices: number[]): number {\n  let sum: number = 0;\n  for (const p of prices) sum += p;\n  const label: string = sum;\n  return label.length;\n}\n';
const ITEM = {
  id: 'typecheck',
  name: 'Typecheck web',
  command: process.execPath,
  args: [TSC, '--noEmit', '--strict', '--target', 'ES2022', 'src/total.ts'],
  cwd: 'web',
  maxAttempts: 1,
  problemMatcher: '$tsc',
};

function makeWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-problems-ui-'));
  mkdirSync(path.join(dir, '.engine', 'queue'), { recursive: true });
  mkdirSync(path.join(dir, 'web', 'src'), { recursive: true });
  writeFileSync(path.join(dir, 'web', 'src', 'total.ts'), BROKEN);
  writeFileSync(path.join(dir, '.engine', 'queue', 'typecheck.json'), JSON.stringify(ITEM, null, 2));
  return dir;
}

/** The Problems panel's rows as text (file rows and problem rows), as drawn now. */
async function problemRows(page: Page): Promise<string[]> {
  return page.locator('.markers-panel .monaco-list-row').evaluateAll((rows) => rows.map((r) => (r.textContent ?? '').replace(/\s+/g, ' ').trim()));
}

describe('Problem matchers in the Problems panel (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let baseUrl: string;

  before(async function () {
    assertUiBuild();
    folder = makeWorkspace();
    wb = await openWorkbench({ folder, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300 } });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('lists the failed item\'s $tsc match at its file and line, and drops it after the fix and a retry', async () => {
    const page = wb.page;
    await waitUntil('typecheck to fail', async () => (await getJson<ItemDetail>(`${baseUrl}/items/typecheck`)).outcome === 'failed', 120_000);
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await runCommand(page, 'View: Focus Problems (Errors, Warnings, Infos)').catch(() => runCommand(page, 'Focus on Problems View'));
    const rows = await waitUntil('the $tsc problem in the Problems panel', async () => {
      const r = await problemRows(page);
      return r.some((x) => x.includes('Typecheck web')) && r;
    }, 60_000);
    // Opened from its row, as a user would: the editor shows the squiggle at tsc's position.
    await page.locator('.markers-panel .monaco-list-row', { hasText: 'Typecheck web' }).first().dblclick();
    await page.locator('.part.editor .tab', { hasText: 'total.ts' }).first().waitFor({ timeout: 15_000 });
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await page.locator('.notification-toast').first().waitFor({ state: 'detached', timeout: 5000 }).catch(() => undefined);
    const shot = await screenshot(page, 'problems-panel-tsc');
    console.log(`      screenshot: ${shot}`);
    const fileRow = rows.find((r) => r.startsWith('total.ts'));
    assert.ok(fileRow, `a row for total.ts: ${JSON.stringify(rows)}`);
    assert.match(fileRow, /web\/src/, 'the file row names its folder');
    const problem = rows.find((r) => r.includes('Typecheck web'))!;
    assert.match(problem, /Type 'number' is not assignable to type 'string'\./);
    // The panel draws the code's parentheses with CSS: the text is `Typecheck web2322`.
    assert.match(problem, /Typecheck web\(?2322\)?/, `source: the item's name, code: tsc's: ${problem}`);
    assert.match(problem, /\[Ln 4, Col 9\]/);

    // The dashboard's item detail counts the attempt's problems, where they are in its tooltip.
    await runCommand(page, 'Show Engine Status');
    const frame = await waitUntil('the dashboard frame', async () => {
      for (const f of page.frames()) if (f.url().includes('webview') && (await f.locator('main#app .cards').count().catch(() => 0)) > 0) return f;
      return undefined;
    });
    const link = frame.locator('table.logs button.item-link[data-item-id="typecheck"]').first();
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    const counted = frame.locator('section.item-detail[data-item-id="typecheck"] table.attempts-table tbody tr .attempt-problems');
    await counted.waitFor({ timeout: 15_000 });
    assert.equal(await counted.textContent(), ' · 1 problem');
    assert.match((await counted.getAttribute('title')) ?? '', /web\/src\/total\.ts:4:9 Type 'number' is not assignable/);

    writeFileSync(path.join(folder, 'web', 'src', 'total.ts'), BROKEN.replace('const label: string = sum;', 'const label: string = String(sum);'));
    await runCommand(page, 'Engine Monitor: Retry All Failed');
    await waitUntil('typecheck to launch', async () => (await getJson<ItemDetail>(`${baseUrl}/items/typecheck`)).outcome === 'launched', 120_000);
    await waitUntil('the problem to leave the Problems panel', async () => (await problemRows(page)).every((r) => !r.includes('Typecheck web')), 30_000);
    console.log(`      screenshot: ${await screenshot(page, 'problems-panel-cleared')}`);
  });
});
