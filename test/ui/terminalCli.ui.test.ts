// The command line a new user types into VS Code's integrated terminal, in a real VS Code
// (code-server + Chromium, see test/vscode/codeServer.ts): `engine-monitor` is on PATH there;
// it may control the window's own engine (`hold`) while a request from anywhere else is still
// refused; and "Install the engine-monitor Command for Your Shell…" asks, then writes a launcher
// into ~/.local/bin that a shell outside VS Code runs. Screenshots land in
// test-results/screenshots/terminal-cli-*.png.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { HealthResponse, ItemDetail } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';

/** The visible rows of the active terminal, as text (GPU acceleration off: xterm's DOM renderer). */
async function terminalText(page: Page): Promise<string> {
  const rows = await page.locator('.terminal-wrapper.active .xterm-rows > div').evaluateAll((els) => els.map((r) => (r.textContent ?? '').replace(/\u00a0/g, ' ')));
  return rows.join('\n');
}

/** Types a line into the active terminal and waits for the marker it echoes with the exit code. */
async function typeInTerminal(page: Page, line: string, marker: string): Promise<{ code: number; text: string }> {
  await page.locator('.terminal-wrapper.active .xterm').click();
  await page.keyboard.type(`${line}; echo "${marker}=$?"`);
  await page.keyboard.press('Enter');
  const pattern = new RegExp(`^${marker}=(\\d+)`, 'm');
  const text = await waitUntil(`"${line}" to finish in the terminal`, async () => {
    const t = await terminalText(page);
    return pattern.test(t) && t;
  }, 30_000);
  return { code: Number(pattern.exec(text)![1]), text };
}

function sh(line: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const { ENGINE_MONITOR_TOKEN: _t, ENGINE_MONITOR_URL: _u, ...base } = process.env;
  const child = spawn('/bin/sh', ['-c', line], { env: { ...base, ...env }, cwd: os.tmpdir() });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

describe('The engine-monitor command in the integrated terminal (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let home: string;
  let baseUrl: string;

  before(async function () {
    if (process.platform === 'win32') this.skip();
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-terminal-cli-ui-'));
    // A home of its own: the install command writes into ~/.local/bin, and the terminal's shell
    // reads no profile that could change PATH.
    home = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-terminal-cli-home-'));
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    writeFileSync(
      path.join(queue, 'later.json'),
      JSON.stringify({ id: 'later', name: 'Later', command: process.execPath, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' }),
    );
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      env: { HOME: home, SHELL: '/bin/sh', ENGINE_MONITOR_TOKEN: '', ENGINE_MONITOR_URL: '' },
      userSettings: {
        'engineMonitor.server.port': 0,
        'engineMonitor.engine.pollIntervalMs': 300,
        'terminal.integrated.gpuAcceleration': 'off',
        'terminal.integrated.defaultProfile.linux': 'sh',
        'terminal.integrated.profiles.linux': { sh: { path: '/bin/sh' } },
      },
    });
    baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('a running engine', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 30_000);
    await waitUntil('the item "later"', async () => (await getJson<ItemDetail>(`${baseUrl}/items/later`)).state === 'scheduled', 30_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('engine-monitor is on PATH in a new integrated terminal and controls the window\'s own engine', async () => {
    const page = wb.page;
    await runCommand(page, 'Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper.active .xterm').waitFor({ timeout: 30_000 });

    const health = await typeInTerminal(page, 'engine-monitor health', 'health-exit');
    console.log(`      screenshot: ${await screenshot(page, 'terminal-cli-health')}`);
    assert.equal(health.code, 0, health.text);
    assert.match(health.text, /healthy/);

    const hold = await typeInTerminal(page, 'engine-monitor hold later', 'hold-exit');
    console.log(`      screenshot: ${await screenshot(page, 'terminal-cli-hold')}`);
    assert.equal(hold.code, 0, hold.text);
    assert.equal((await getJson<ItemDetail>(`${baseUrl}/items/later`)).state, 'held');

    // Anyone else (this test, a web page, another user's script) still gets a read-only API.
    const res = await fetch(`${baseUrl}/items/later/release`, { method: 'POST' });
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'control_disabled');
    assert.equal((await getJson<ItemDetail>(`${baseUrl}/items/later`)).state, 'held');
  });

  it('"Install the engine-monitor Command for Your Shell…" asks, installs into ~/.local/bin and says where', async () => {
    const page = wb.page;
    const installed = path.join(home, '.local', 'bin', 'engine-monitor');
    await runCommand(page, 'Engine Monitor: Install the engine-monitor Command for Your Shell…');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    assert.match((await dialog.textContent()) ?? '', /~\/\.local\/bin\/engine-monitor/);
    assert.equal(existsSync(installed), false, 'nothing is written before the user agrees');
    console.log(`      screenshot: ${await screenshot(page, 'terminal-cli-install-ask')}`);
    await dialog.locator('.monaco-button', { hasText: /^Install$/ }).click();

    const toast = page.locator('.notification-toast', { hasText: /Installed engine-monitor as/ }).first();
    await toast.waitFor({ timeout: 15_000 });
    await sleep(300); // the toast fades in
    console.log(`      screenshot: ${await screenshot(page, 'terminal-cli-installed')}`);
    const said = (await toast.textContent()) ?? '';
    assert.ok(said.includes(installed), said);
    assert.match(said, /not on your PATH/);

    // A shell outside VS Code (no PATH entry, no token: reads only) runs it.
    const status = await sh(`'${installed}' health --url ${baseUrl}`, { HOME: home });
    assert.equal(status.code, 0, status.out);
    assert.match(status.out, /healthy/);
  });
});
