// Start-up without a wrong state, in a real VS Code (code-server + Chromium, see
// test/vscode/codeServer.ts): a window whose engine holds items, a schedule and log entries, with
// the dashboard open, is reloaded. From the reload until the counts settle (and two seconds past),
// the workbench is sampled continuously: every view's text, the status bar, and the restored
// dashboard's badge, health panel and Start button. None of them may ever say something false
// about that engine: no "There is no data provider registered", no "Engine off" or "unreachable",
// no empty state ("No items yet", "No log entries yet", "No schedules"), no "live" badge beside
// numbers it has not read, no Start button before the dashboard knows the engine's state. Whether
// the reloaded window starts a new engine or attaches to the one still running, the user must see
// the same honest "connecting" and then the data. The sequence is saved as screenshots in
// test-results/screenshots/startup-*.png; their paths are printed.
//
// Needs a build (`npm run build`) and code-server (`bash test/vscode/setup-code-server.sh`).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import type { HealthResponse, StatsResponse } from '../../src/shared/api';
import { REPO_ROOT, assertUiBuild, openWorkbench, runCommand, screenshot, type Workbench } from '../vscode/codeServer';
import { dashboardFrame } from '../vscode/workbenchUi';
import { findEndpoint, getJson, sleep, waitUntil } from '../vscode/engineProbe';

const NO_PROVIDER = /There is no data provider registered/i;
/** What the views say when the engine has answered and holds nothing, or is off: all wrong here. */
const EMPTY_STATES = [/No items yet/i, /No log entries yet/i, /No schedules/i, /The engine is not running/i, /No queue folder/i];
/** The status bar about an engine that is about to answer: never "off", never "unreachable". */
const WRONG_STATUS = /Engine (off|unreachable|failed)/i;

/** The restored dashboard as the user sees it; undefined while its webview is not there. */
interface DashboardSample {
  badge: string;
  /** The Start button is on screen (not hidden). */
  start: boolean;
  health: string;
  total: string;
}

interface Sample {
  /** ms since the reload was asked for */
  at: number;
  /** pane title → the text of its body */
  panes: Record<string, string>;
  status: string;
  dashboard?: DashboardSample;
}

/** The side bar's panes (title → body text) and the status bar; undefined while the page reloads. */
async function readWorkbench(page: Page): Promise<{ panes: Record<string, string>; status: string } | undefined> {
  return page
    .evaluate(() => {
      // The old page until the reload replaces it: not a sample of the start-up.
      if ((window as unknown as { beforeReload?: boolean }).beforeReload) return undefined;
      const panes: Record<string, string> = {};
      for (const pane of Array.from(document.querySelectorAll('.part.sidebar .pane'))) {
        const title = (pane.querySelector('.pane-header .title')?.textContent ?? '').trim();
        const body = pane.querySelector<HTMLElement>('.pane-body');
        if (title) panes[title] = (body?.innerText ?? '').replace(/\s+/g, ' ').trim();
      }
      const bar = document.querySelector<HTMLElement>('.part.statusbar');
      return { panes, status: (bar?.innerText ?? '').replace(/\s+/g, ' ').trim() };
    })
    .catch(() => undefined);
}

/** The dashboard's webview frame, skipping the workbench's own frame (it repeats the words). */
async function readDashboard(page: Page): Promise<DashboardSample | undefined> {
  for (const f of page.frames()) {
    if (f === page.mainFrame() || !f.url().includes('webview')) continue;
    const s = await f
      .evaluate(() => {
        const pill = document.querySelector<HTMLElement>('.connection');
        if (!pill) return undefined;
        const start = document.querySelector<HTMLButtonElement>('button[data-command="start"]');
        return {
          badge: (pill.textContent ?? '').trim(),
          start: !!start && !start.hidden && start.offsetParent !== null,
          health: (document.querySelector<HTMLElement>('[aria-labelledby="health-title"]')?.innerText ?? '').replace(/\s+/g, ' ').trim(),
          total: (document.querySelector('[data-stat="total"] .card-value')?.textContent ?? '').trim(),
        };
      })
      .catch(() => undefined);
    if (s) return s;
  }
  return undefined;
}

const pane = (panes: Record<string, string>, title: RegExp) => Object.entries(panes).find(([t]) => title.test(t))?.[1] ?? '';

/** Settled: the Stats view shows the engine's real total and the Items view lists its items. */
function settled(s: Sample, total: number): boolean {
  return new RegExp(`Total\\s*${total}\\b`).test(pane(s.panes, /^stats$/i)) && /Waiting/.test(pane(s.panes, /^items$/i)) && /Engine healthy/.test(s.status);
}

/** One line per sample that differs from the one before: the start-up's timeline. */
function signature(s: Sample): string {
  const d = s.dashboard;
  return JSON.stringify([s.panes, s.status.replace(/\d+ pending/, 'n pending'), d && [d.badge, d.start, d.health.slice(0, 40), d.total]]);
}

describe('Start-up: from a window reload to the settled counts, never a wrong state (code-server)', function () {
  this.timeout(300_000);
  let wb: Workbench;
  let folder: string;
  let total: number;

  before(async function () {
    assertUiBuild();
    folder = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-startup-ui-'));
    const queue = path.join(folder, '.engine', 'queue');
    mkdirSync(queue, { recursive: true });
    // Items due in 2099: they stay Waiting, so what the views show does not depend on timing.
    // And a schedule template, so that "No schedules" is never right either.
    writeFileSync(path.join(queue, 'nightly.json'), JSON.stringify({ id: 'nightly', name: 'Nightly', command: process.execPath, args: ['-e', '0'], schedule: { cron: '0 2 * * *', timezone: 'UTC' } }));
    for (let i = 1; i <= 3; i++) {
      writeFileSync(path.join(queue, `later-${i}.json`), JSON.stringify({ id: `later-${i}`, name: `Later ${i}`, command: process.execPath, args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' }));
    }
    wb = await openWorkbench({
      folder,
      extensionDevelopmentPath: REPO_ROOT,
      userSettings: { 'engineMonitor.server.port': 0 },
    });
    const baseUrl = await waitUntil('the engine endpoint', async () => findEndpoint(wb.server.userDataDir), 60_000);
    await waitUntil('a running engine', async () => (await getJson<HealthResponse>(`${baseUrl}/health`)).checks.engine === 'running', 30_000);
    total = await waitUntil('three items discovered', async () => {
      const t = (await getJson<StatsResponse>(`${baseUrl}/stats`)).overview.total;
      return t >= 3 && t;
    }, 30_000);
    // The dashboard open beside the views: a reload restores it, and it must not guess either.
    await runCommand(wb.page, 'Engine Monitor: Show Engine Status');
    const frame = await dashboardFrame(wb.page);
    await frame.locator('.connection[data-connected="true"]').waitFor({ timeout: 30_000 });
    await runCommand(wb.page, 'Engine Monitor: Focus on Items View');
    await waitUntil('data in the views', async () => {
      const w = await readWorkbench(wb.page);
      return w && settled({ at: 0, ...w }, total);
    }, 30_000);
  });

  after(async function () {
    await wb?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('after a reload: "connecting", then the counts; never no-provider, "Engine off", an empty state, or a guessing dashboard', async () => {
    const page = wb.page;
    await page.evaluate(() => ((window as unknown as { beforeReload?: boolean }).beforeReload = true));
    await runCommand(page, 'Developer: Reload Window');
    const started = Date.now();
    const samples: Sample[] = [];
    const shots: string[] = [];
    let settledAt: number | undefined;
    let workbenchAt: number | undefined;
    let last = '';
    // Sample until the counts have been on screen for two seconds (a late flash of an empty state
    // right after the data would count too) and the restored dashboard, which VS Code brings back
    // after the views, is live.
    const dashboardLive = () => /live/i.test(samples.at(-1)?.dashboard?.badge ?? '');
    while (Date.now() - started < 90_000 && (settledAt === undefined || Date.now() - started < settledAt + 2000 || !dashboardLive())) {
      const w = await readWorkbench(page);
      if (w && Object.keys(w.panes).length) {
        const s: Sample = { at: Date.now() - started, ...w, dashboard: await readDashboard(page) };
        samples.push(s);
        workbenchAt ??= s.at;
        if (settledAt === undefined && settled(s, total)) settledAt = s.at;
        // A screenshot of each new state the user sees (at most 16: a timeline, not a film).
        const sig = signature(s);
        if (sig !== last && shots.length < 16) {
          shots.push(await screenshot(page, `startup-${String(shots.length + 1).padStart(2, '0')}-${s.at}ms`).catch((e: Error) => `(failed: ${e.message})`));
        }
        last = sig;
      } else {
        await sleep(50);
      }
    }
    shots.push(await screenshot(page, 'startup-settled'));
    console.log(`      screenshots of the sequence:\n        ${shots.join('\n        ')}`);
    const timeline: string[] = [];
    const before: Record<string, string> = {};
    for (const s of samples) {
      const parts: Record<string, string> = { ...s.panes, '(status bar)': s.status, '(dashboard)': s.dashboard ? `${s.dashboard.badge} | start ${s.dashboard.start ? 'shown' : 'hidden'} | ${s.dashboard.health.slice(0, 50)} | total ${s.dashboard.total}` : '(not there)' };
      for (const [t, b] of Object.entries(parts)) {
        if (before[t] !== b) timeline.push(`${String(s.at).padStart(6)} ms  ${t}: ${b.slice(0, 90)}`);
        before[t] = b;
      }
    }
    console.log(`      ${samples.length} samples; workbench at ${workbenchAt} ms, settled counts at ${settledAt} ms after the reload (${settledAt !== undefined && workbenchAt !== undefined ? settledAt - workbenchAt : '?'} ms after the workbench); timeline:\n        ${timeline.join('\n        ')}`);
    // The extension's own output after the reload (its start-up trace, and whether rowsShown()'s cap
    // fired): what tells a wrong state seen here from a window that was slow to draw.
    const outputLog = extensionOutputAfterReload(wb.server.userDataDir);
    if (outputLog) console.log(`      the extension's output after the reload:\n        ${outputLog.split('\n').slice(-40).join('\n        ')}`);

    assert.ok(settledAt !== undefined, `the views show the engine's ${total} items within 90 s of the reload; last sample: ${JSON.stringify(samples.at(-1))}`);
    // code-server restores the views' frames from its cache before it has read any extension's
    // contributions, and marks a restored tree view "no data provider" if it is painted before the
    // extension host has even registered the extensions. Once our contributions are in (a welcome
    // text or our status-bar entry), the extension's own order decides: from then on, never.
    const contributed = samples.findIndex((s) => /Engine /.test(s.status) || Object.values(s.panes).some((t) => /Connecting to the engine|Total/.test(t)));
    assert.ok(contributed >= 0, 'a connecting state or the data appears');
    const early = samples.slice(0, contributed).filter((s) => Object.values(s.panes).some((t) => NO_PROVIDER.test(t)));
    if (early.length) console.log(`      (VS Code's own no-provider text before any extension was registered: ${early[0].at}–${early.at(-1)!.at} ms)`);
    for (const s of samples.slice(contributed)) {
      for (const [title, text] of Object.entries(s.panes)) {
        assert.doesNotMatch(text, NO_PROVIDER, `${title} at ${s.at} ms after the reload shows VS Code's no-data-provider message (our contributions were in at ${samples[contributed].at} ms)`);
      }
    }
    for (const s of samples) {
      // This workspace has items, log entries, a schedule, a queue folder and an engine: an empty
      // state is wrong at any moment, before the data or after.
      for (const [title, text] of Object.entries(s.panes)) {
        for (const empty of EMPTY_STATES) assert.doesNotMatch(text, empty, `${title} at ${s.at} ms (settled at ${settledAt} ms) shows an empty state`);
      }
      assert.doesNotMatch(s.status, WRONG_STATUS, `the status bar at ${s.at} ms says "${s.status}"`);
      const d = s.dashboard;
      if (d) {
        if (/live/i.test(d.badge)) {
          assert.doesNotMatch(d.health, /Unknown|Connecting/i, `the dashboard at ${s.at} ms says live beside "${d.health}"`);
          assert.notEqual(d.total, '—', `the dashboard at ${s.at} ms says live without its counters`);
        }
        assert.doesNotMatch(d.badge, /not connected|engine off/i, `the dashboard's badge at ${s.at} ms: "${d.badge}"`);
        // The engine runs (healthy): a Start button before the dashboard has read that is a guess.
        assert.ok(!d.start || /live/i.test(d.badge), `the dashboard shows Start at ${s.at} ms while it says "${d.badge}"`);
      }
    }
    // The dashboard did come back, and ended live with the engine's counters.
    const end = samples.at(-1)!.dashboard;
    assert.ok(end, 'the dashboard is restored after the reload');
    assert.match(end.badge, /live/i);
    assert.equal(end.total, String(total));
    // The start-up trace a slow first paint is read from names the window's steps as well as the
    // extension's: the Items view shown, and its rows asked for once the extension had the items.
    const trace = await waitUntil("the start-up trace to say the window asked for the Items view's rows", async () => {
      const log = extensionOutputAfterReload(wb.server.userDataDir) ?? '';
      return /startup \+\d+ ms: first rows asked by the Items view$/m.test(log) && log;
    }, 30_000);
    const at = (step: string) => Number(new RegExp(`startup \\+(\\d+) ms: ${step}$`, 'm').exec(trace)?.[1]);
    assert.ok(at('first items view visible') >= 0, 'the trace says when the window showed the Items view');
    assert.ok(at('first items') <= at('first rows asked by the Items view'), `the rows were asked for after the extension had the items:\n${trace}`);
  });
});

/**
 * The newest "Engine Monitor" output log that code-server keeps under its user data folder (one per
 * extension host, so after a reload the newest is the reloaded window's), or undefined.
 */
function extensionOutputAfterReload(userDataDir: string): string | undefined {
  const found: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/Engine Monitor\.log$/.test(name)) found.push(p);
    }
  };
  walk(path.join(userDataDir, 'logs'));
  const newest = found.sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs).at(-1);
  return newest ? readFileSync(newest, 'utf8').trimEnd() : undefined;
}
