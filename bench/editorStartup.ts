// Scenario 4, the editor's start-up timings (from a reload to the views showing data, with no
// empty state in between), in
// code-server + Chromium, each a median of BENCH_STARTUP_RUNS windows:
//   start      — the extension starts the engine: from activation (our status-bar item appears) to
//                the Stats view listing the engine's counters;
//   attach     — an engine already runs (`engine-monitor serve` on the workspace): the same span;
//   restart    — "Engine Monitor: Restart Engine" from the palette until the status bar says
//                "Engine healthy" again (after it left that state);
//   dashboard  — "Engine Monitor: Show Engine Status" from the palette until the dashboard's log
//                table shows a row.
// BENCH_STARTUP_BASELINE=<dir> measures a second extension folder (e.g. a build of main) in the same
// run, window for window alternating, so the "before" figures share the machine's load.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import type { EditorBenchContext } from './lib';
import { launchChromium, runCommand, startCodeServer, workbenchUrl, waitForWorkbench } from '../test/vscode/codeServer';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 90_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`editor startup bench: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

const statusText = (page: Page) => page.locator('.part.statusbar').innerText().catch(() => '');
const ourItem = async (page: Page) => /Engine (off|starting|connecting|healthy|degraded|unhealthy|stopped|restricted|stalled|unreachable|attached)/i.test(await statusText(page));
async function statsHasData(page: Page): Promise<boolean> {
  const text = await page
    .locator('.part.sidebar .pane')
    .filter({ has: page.locator('.pane-header', { hasText: /^\s*Stats/i }) })
    .locator('.pane-body')
    .innerText()
    .catch(() => '');
  return /Total\s*\d/.test(text);
}

function writeQueue(ws: string): void {
  const queue = path.join(ws, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  for (let i = 1; i <= 20; i++) {
    writeFileSync(path.join(queue, `later-${i}.json`), JSON.stringify({ id: `later-${i}`, name: `Later ${i}`, command: process.execPath, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' }));
  }
}

/** An engine started outside the editor, as a user's terminal would: the window attaches to it. */
async function serveEngine(extensionDir: string, ws: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(extensionDir, 'dist', 'cli.js'), 'serve', '--workspace', ws, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  await until('the headless engine to listen', async () => /listening on/.test(out), 60_000, 100);
  return child;
}

interface Timings {
  startMs: number;
  attachMs: number;
  restartMs: number;
  dashboardMs: number;
}

async function window(extensionDir: string, ws: string, measure: (page: Page) => Promise<void>): Promise<void> {
  const server = await startCodeServer({ userSettings: { 'engineMonitor.server.port': 0 } });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(workbenchUrl(server, { folder: ws, extensionDevelopmentPath: extensionDir }), { waitUntil: 'domcontentloaded' });
    await measure(page);
  } finally {
    await browser.close().catch(() => undefined);
    await server.stop();
  }
}

/** From activation (our status-bar item) to the Stats view's counters. */
async function activationToData(page: Page): Promise<number> {
  await until('the extension to activate', () => ourItem(page), 120_000);
  const activated = Date.now();
  await until('data in the Stats view', () => statsHasData(page), 60_000);
  return Date.now() - activated;
}

async function dashboardLogs(page: Page): Promise<Frame | undefined> {
  for (const f of page.frames()) {
    if (f.url().includes('webview') && (await f.locator('tr[data-id]').count().catch(() => 0)) > 0) return f;
  }
  return undefined;
}

async function oneRun(extensionDir: string, tmp: string): Promise<Timings> {
  const t = {} as Timings;
  // The extension starts the engine; then Restart Engine and the dashboard in the same window.
  const wsStart = path.join(tmp, 'start');
  writeQueue(wsStart);
  await window(extensionDir, wsStart, async (page) => {
    await waitForWorkbench(page).catch(() => undefined);
    await runCommand(page, 'Engine Monitor: Focus on Stats View').catch(() => undefined);
    t.startMs = await activationToData(page);
    await until('a healthy engine', async () => /Engine healthy/.test(await statusText(page)), 60_000);
    await sleep(1000);
    await runCommand(page, 'Engine Monitor: Restart Engine');
    const asked = Date.now();
    await until('the engine to leave healthy', async () => !/Engine healthy/.test(await statusText(page)), 30_000, 20);
    await until('the engine healthy again', async () => /Engine healthy/.test(await statusText(page)), 60_000, 20);
    t.restartMs = Date.now() - asked;
    await sleep(1000);
    await runCommand(page, 'Engine Monitor: Show Engine Status');
    const opened = Date.now();
    await until('log rows in the dashboard', () => dashboardLogs(page), 60_000, 20);
    t.dashboardMs = Date.now() - opened;
  });
  // An engine already running: the window attaches.
  const wsAttach = path.join(tmp, 'attach');
  writeQueue(wsAttach);
  const engine = await serveEngine(extensionDir, wsAttach);
  try {
    await window(extensionDir, wsAttach, async (page) => {
      await waitForWorkbench(page).catch(() => undefined);
      await runCommand(page, 'Engine Monitor: Focus on Stats View').catch(() => undefined);
      t.attachMs = await activationToData(page);
    });
  } finally {
    engine.kill('SIGTERM');
    await new Promise((r) => engine.once('exit', r));
  }
  return t;
}

export async function scenarioEditorStartup(ctx: EditorBenchContext, extensionDir: string): Promise<void> {
  const runs = Number(process.env.BENCH_STARTUP_RUNS || (ctx.quick ? 1 : 3));
  const baselineDir = process.env.BENCH_STARTUP_BASELINE || undefined;
  const subjects: { name: string; dir: string }[] = [{ name: 'this build', dir: extensionDir }];
  if (baselineDir) subjects.unshift({ name: 'baseline', dir: path.resolve(baselineDir) });
  const results = new Map<string, Timings[]>(subjects.map((s) => [s.name, []]));
  for (let r = 0; r < runs; r++) {
    for (const s of subjects) {
      const res = await oneRun(s.dir, path.join(ctx.tmp, `startup-${s.name.replace(/\W+/g, '-')}-${r}`));
      results.get(s.name)!.push(res);
      ctx.log(`  startup run ${r + 1} (${s.name}): start ${res.startMs} ms, attach ${res.attachMs} ms, restart ${res.restartMs} ms, dashboard ${res.dashboardMs} ms`);
    }
  }
  ctx.raw.editorStartup = Object.fromEntries(results);
  const rows: { key: keyof Timings; measure: string; targetMs: number }[] = [
    { key: 'attachMs', measure: 'views show data after activation, engine already running (attach)', targetMs: 1500 },
    { key: 'startMs', measure: 'views show data after activation, the extension starts the engine', targetMs: 3000 },
    { key: 'restartMs', measure: 'Restart Engine (palette) to "Engine healthy"', targetMs: 2000 },
    { key: 'dashboardMs', measure: 'dashboard from the palette to its first log rows', targetMs: 1000 },
  ];
  const mine = results.get('this build')!;
  const base = results.get('baseline');
  for (const row of rows) {
    const value = ctx.median(mine.map((x) => x[row.key]));
    const baseline = base ? ctx.median(base.map((x) => x[row.key])) : undefined;
    ctx.add({
      scenario: 'editor',
      measure: row.measure,
      value,
      unit: 'ms',
      baseline,
      ratio: baseline ? value / baseline : undefined,
      target: `≤ ${row.targetMs} ms`,
      met: value <= row.targetMs,
      note: `runs ${mine.map((x) => x[row.key]).join(' / ')} ms${base ? `; baseline ${base.map((x) => x[row.key]).join(' / ')} ms` : ''}`,
    });
  }
}
