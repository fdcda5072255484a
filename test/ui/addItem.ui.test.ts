// Add Item… in a real VS Code (code-server + Chromium, see test/vscode/codeServer.ts): after the
// name and the command line it offers the common fields as optional steps, judges each answer as
// it is typed by the engine's own rules (a wrong one shows why and cannot be accepted), and writes
// a queue file the engine takes with those fields (read back from GET /items/{id} and /schedules).
// Screenshots land in test-results/screenshots/add-item-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { ItemDetail, ScheduleSummary } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, waitUntil } from '../vscode/engineProbe';

const node = process.execPath;
/** The validation messages Add Item shows for a refused answer (its prompts read otherwise). */
const REFUSAL = /would reject|^Enter |has \d+ fields|must stay inside/;

describe('Add Item… with optional fields (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let queue: string;
  let baseUrl: string;

  const widget = () => wb.page.locator('.quick-input-widget');
  const input = () => widget().locator('.quick-input-box input');

  async function step(title: RegExp): Promise<void> {
    await widget().locator('.quick-input-title', { hasText: title }).waitFor({ timeout: 20_000 });
  }
  /** Types `text` into the open step and waits until its validation message matches `message`. */
  async function rejected(text: string, message: RegExp): Promise<string> {
    await input().fill(text);
    return waitUntil(`"${text}" to be refused with ${message}`, async () => {
      const shown = ((await widget().locator('.quick-input-message').textContent().catch(() => '')) ?? '').trim();
      return message.test(shown) && shown;
    }, 15_000);
  }
  async function answer(text: string): Promise<void> {
    await input().fill(text);
    // The engine's verdict arrives as typed; Enter is taken only once it is in and says nothing.
    await waitUntil(`"${text}" to be accepted`, async () => !REFUSAL.test((await widget().locator('.quick-input-message').textContent().catch(() => '')) ?? '') || undefined, 15_000);
    await wb.page.keyboard.press('Enter');
  }
  async function startAddItem(page: Page, name: string, command: string): Promise<void> {
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
    await page.keyboard.press('F1');
    await input().fill('>Engine Monitor: Add Item');
    await widget().locator('.quick-input-list .monaco-list-row', { hasText: 'Add Item' }).first().waitFor({ timeout: 15_000 });
    await page.keyboard.press('Enter');
    await step(/Add Item \(1\/3\)/);
    await answer(name);
    await step(/Add Item \(2\/3\)/);
    await answer(command);
    await step(/Add Item \(3\/3\)/);
  }
  /** Clicks rows of the open multi-select pick; each toggles its tick (`to`: what it must become). */
  async function tick(...labels: string[]): Promise<void> {
    for (const label of labels) await toggle(label, true);
  }
  async function toggle(label: string, to: boolean): Promise<void> {
    const row = widget().locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
    await row.click();
    await waitUntil(`${label} ${to ? 'ticked' : 'unticked'}`, async () => (await row.getAttribute('aria-checked')) === String(to) || undefined, 5_000);
  }
  /** The queue file Add Item wrote for `slug`, parsed, once its notification is shown. */
  async function written(slug: string): Promise<Record<string, unknown> & { id: string }> {
    await wb.page.locator('.notification-toast', { hasText: /Queued "/ }).first().waitFor({ timeout: 20_000 });
    const file = readdirSync(queue).find((f) => f.startsWith(`${slug}-`) && f.endsWith('.json'));
    assert.ok(file, `a queue file for ${slug} in ${JSON.stringify(readdirSync(queue))}`);
    return JSON.parse(readFileSync(path.join(queue, file), 'utf8')) as Record<string, unknown> & { id: string };
  }

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-additem-ui-'));
    queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    mkdirSync(path.join(folder, 'src'));
    writeFileSync(path.join(queue, 'prep.json'), JSON.stringify({ id: 'prep', name: 'Prepare', command: node, args: ['-e', '0'] }));
    wb = await openWorkbench({ folder, extensionDevelopmentPath: REPO_ROOT, userSettings: { 'engineMonitor.server.port': 0, 'engineMonitor.engine.pollIntervalMs': 300 } });
    baseUrl = await waitUntil('the engine endpoint.json', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('prep to launch', async () => (await getJson<ItemDetail>(`${baseUrl}/items/prep`)).outcome === 'launched', 60_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('depends on, priority and problem matcher: each judged as typed, then launched with them', async () => {
    const page = wb.page;
    await startAddItem(page, 'Type check web', 'echo typecheck done');
    await tick('Depends on', 'Priority', 'Problem matcher');
    await page.keyboard.press('Enter');

    await step(/Depends on \(1 of 3\)/);
    await rejected('prep bad/id', /engine would reject this: .*dependsOn/);
    await answer('prep');
    await step(/Priority \(2 of 3\)/);
    await rejected('high', /^Enter a whole number from -100 to 100/);
    await rejected('500', /engine would reject this: .*priority.*100/);
    console.log(`      screenshot: ${await screenshot(page, 'add-item-priority-refused')}`);
    await answer('7');
    await step(/Problem matcher \(3 of 3\)/);
    await input().fill('$tsc');
    await widget().locator('.quick-input-list .monaco-list-row', { hasText: '$tsc' }).first().waitFor();
    await page.keyboard.press('Enter');

    const entry = await written('type-check-web');
    assert.deepEqual(
      { ...entry, id: undefined },
      { id: undefined, name: 'Type check web', command: 'echo typecheck done', shell: true, dependsOn: ['prep'], priority: 7, problemMatcher: '$tsc' },
    );
    const d = await waitUntil('the new item to launch', async () => {
      const got = await getJson<ItemDetail>(`${baseUrl}/items/${encodeURIComponent(entry.id)}`).catch(() => undefined);
      return got?.outcome === 'launched' && got;
    }, 60_000);
    assert.deepEqual(d.item.dependsOn, ['prep']);
    assert.equal(d.item.priority, 7);
    assert.equal(d.item.problemMatcher, '$tsc');
    console.log(`      screenshot: ${await screenshot(page, 'add-item-queued')}`);
  });

  it('a schedule with its time zone (Schedule and Watch exclude each other)', async () => {
    const page = wb.page;
    await startAddItem(page, 'Nightly report', 'echo report');
    await tick('Schedule', 'Watch');
    await page.keyboard.press('Enter');
    await step(/cannot go together/);
    await toggle('Watch', false);
    await page.keyboard.press('Enter');
    await step(/Schedule \(1 of 1\)/);
    await rejected('0 2 * *', /has 5 fields/);
    await rejected('0 2 * * * Mars/Olympus', /engine would reject this: .*Mars\/Olympus/);
    await answer('0 2 * * * UTC');
    const entry = await written('nightly-report');
    assert.deepEqual(entry.schedule, { cron: '0 2 * * *', timezone: 'UTC' });
    const template = await waitUntil('the template in /schedules', async () => (await getJson<ScheduleSummary[]>(`${baseUrl}/schedules`)).find((s) => s.id === entry.id), 30_000);
    assert.equal(template.schedule, '0 2 * * *');
    assert.equal(template.timezone, 'UTC');
    assert.match(template.nextRunAt ?? '', /T02:00:00\.000Z$/);
  });

  it('service readiness by a line of output: a bad pattern is refused, the good one makes it ready', async () => {
    const page = wb.page;
    await startAddItem(page, 'Dev server', 'echo "listening on 4321"; sleep 600');
    await tick('Service readiness');
    await page.keyboard.press('Enter');
    await step(/Service readiness \(1 of 1\)/);
    await input().fill('line of its output');
    await widget().locator('.quick-input-list .monaco-list-row', { hasText: 'A line of its output matches' }).first().waitFor();
    await page.keyboard.press('Enter');
    await rejected('listening on (', /engine would reject this: .*logPattern/);
    await answer('listening on \\d+');
    const entry = await written('dev-server');
    assert.equal(entry.service, true);
    assert.deepEqual(entry.ready, { logPattern: 'listening on \\d+' });
    const d = await waitUntil('the service to be ready', async () => {
      const got = await getJson<ItemDetail>(`${baseUrl}/items/${encodeURIComponent(entry.id)}`).catch(() => undefined);
      return got?.state === 'ready' && got;
    }, 60_000);
    assert.deepEqual(d.item.ready, { logPattern: 'listening on \\d+' });
  });

  it('watch: globs that leave the folder are refused; the template lists its paths', async () => {
    const page = wb.page;
    await startAddItem(page, 'Lint on save', 'echo linted');
    await tick('Watch');
    await page.keyboard.press('Enter');
    await step(/Watch \(1 of 1\)/);
    await rejected('../elsewhere/**', /must stay inside the workspace folder/);
    await answer('src/**/*.ts');
    const entry = await written('lint-on-save');
    assert.deepEqual(entry.watch, { paths: ['src/**/*.ts'] });
    const template = await waitUntil('the watched template in /schedules', async () => (await getJson<ScheduleSummary[]>(`${baseUrl}/schedules`)).find((s) => s.id === entry.id), 30_000);
    assert.deepEqual(template.watch?.paths, ['src/**/*.ts']);
  });
});
