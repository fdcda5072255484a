// A live workbench for UI tests (the harness's openWorkbench, codeServer.ts): opening it with the
// extension loaded, waiting for it, the command palette, screenshots and the dashboard's log filter.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { REPO_ROOT, SCREENSHOT_DIR, startCodeServer, type CodeServer } from './codeServerProcess';
import { launchChromium, workbenchUrl, ConsoleForwarder } from './browser';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface OpenWorkbenchOptions {
  folder: string;
  extensionDevelopmentPath?: string;
  userSettings?: Record<string, unknown>;
  trustWorkspaces?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Browser viewport (default 1600×1000). */
  viewport?: { width: number; height: number };
  /** Print the page's console to stderr (default: CODE_SERVER_VERBOSE=1). */
  verbose?: boolean;
}

export interface Workbench {
  page: Page;
  browser: Browser;
  server: CodeServer;
  /** Browser messages of type error seen so far (useful in assertions and failure messages). */
  consoleErrors: string[];
  close(): Promise<void>;
}

/**
 * Opens a live workbench on `folder` with the extension loaded in development mode; waits until it
 * is rendered and the extension's contributions are registered (see waitForExtension).
 */
export async function openWorkbench(opts: OpenWorkbenchOptions): Promise<Workbench> {
  const server = await startCodeServer({
    trustWorkspaces: opts.trustWorkspaces,
    userSettings: opts.userSettings,
    env: opts.env,
  });
  let browser: Browser | undefined;
  try {
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: opts.viewport ?? { width: 1600, height: 1000 } });
    const consoleErrors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(msg.text());
    });
    if (opts.verbose ?? process.env.CODE_SERVER_VERBOSE === '1') {
      new ConsoleForwarder((line) => process.stderr.write(`${line}\n`), true).attach(page);
    }
    await page.goto(workbenchUrl(server, opts), { waitUntil: 'domcontentloaded' });
    await waitForWorkbench(page);
    if (opts.extensionDevelopmentPath) {
      await waitForExtension(page, opts.extensionDevelopmentPath);
      // Registered now; let the startup activation (e.g. onStartupFinished, onView) finish too.
      await page.locator('.part.statusbar', { hasText: ACTIVATING }).waitFor({ state: 'detached', timeout: 60_000 });
    }
    const b = browser;
    let closed = false;
    return {
      page,
      browser: b,
      server,
      consoleErrors,
      async close() {
        if (closed) return;
        closed = true;
        await b.close().catch(() => undefined);
        await server.stop();
      },
    };
  } catch (err) {
    await browser?.close().catch(() => undefined);
    await server.stop();
    throw err;
  }
}

/** The status-bar entry VS Code shows while the extension host activates extensions. */
const ACTIVATING = 'Activating Extensions';

/**
 * Waits until the workbench is rendered (activity bar, editor area, status bar) and the status bar
 * no longer shows "Activating Extensions...". The remote extension host registers extensions a few
 * seconds later than this; openWorkbench() also waits for that (waitForExtension).
 */
export async function waitForWorkbench(page: Page, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  for (const selector of ['.monaco-workbench', '.part.activitybar', '.part.editor', '.part.statusbar']) {
    await page.locator(selector).first().waitFor({ state: 'visible', timeout: left() });
  }
  await page.locator('.part.statusbar', { hasText: ACTIVATING }).waitFor({ state: 'detached', timeout: left() });
}

/**
 * Opens the command palette, types `title` and returns the index of the entry whose label is
 * `title` or `<category>: title` (case-insensitive), or -1 after `settleMs` without one; `seen`
 * receives the labels shown. The palette is left open.
 */
async function findPaletteEntry(page: Page, title: string, seen: string[], settleMs: number): Promise<number> {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('.quick-input-box input');
  // The palette can close between the visibility check and the fill (focus moving to a view or a
  // notification while the workbench settles): then open it again rather than wait on a hidden input.
  // A key press can also be lost on a loaded machine (the workbench still moving focus after a
  // view or notification opened): the input then stays hidden, and F1 is pressed again.
  for (let attempt = 1; ; attempt++) {
    try {
      if (!(await input.isVisible())) {
        // Take focus out of a webview first: a key pressed inside its iframe (the dashboard, just
        // opened) only reaches the workbench once the webview forwards it, if it does.
        await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur()).catch(() => undefined);
        await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
        await page.keyboard.press('F1');
        await input.waitFor({ state: 'visible', timeout: 5000 });
      }
      await input.fill(`>${title}`, { timeout: 3000 });
      break;
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }
  const wanted = title.trim().toLowerCase();
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  const until = Date.now() + settleMs;
  do {
    const labels = await rows.evaluateAll((els) =>
      els.map((el) => (el.querySelector('.label-name')?.textContent ?? el.textContent ?? '').trim()),
    );
    seen.splice(0, seen.length, ...labels);
    const index = labels.findIndex((label) => {
      const l = label.toLowerCase();
      return l === wanted || l.endsWith(`: ${wanted}`);
    });
    if (index >= 0) return index;
    await sleep(100);
  } while (Date.now() < until);
  return -1;
}

/**
 * Runs a command through the command palette: F1, type the title, pick the entry whose label is
 * `title` (or `<category>: title`), and wait for the palette to close. Commands contributed by
 * extensions appear only once the remote extension host has registered them, a few seconds after
 * the workbench renders, and an open palette does not pick up new ones; so when no entry matches,
 * it closes the palette and tries again until `timeoutMs`. Throws listing the entries it saw.
 */
export async function runCommand(page: Page, title: string, timeoutMs = 30_000): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  const deadline = Date.now() + timeoutMs;
  const seen: string[] = [];
  while (Date.now() < deadline) {
    const index = await findPaletteEntry(page, title, seen, 1000);
    if (index >= 0) {
      try {
        await widget.locator('.quick-input-list .monaco-list-row').nth(index).click({ timeout: 5000 });
      } catch (err) {
        // The palette closed under the pointer: focus moved to something that just opened (a
        // webview loading its page takes it), and the row stays in the page, hidden. A click is
        // only made once the row is visible, so nothing ran: open the palette again.
        if (Date.now() >= deadline || (await widget.isVisible())) throw err;
        continue;
      }
      await widget.waitFor({ state: 'hidden', timeout: Math.max(1000, deadline - Date.now()) });
      return;
    }
    await page.keyboard.press('Escape');
    await sleep(400);
  }
  throw new Error(`runCommand: no command palette entry "${title}" within ${timeoutMs} ms; entries shown: ${JSON.stringify(seen.slice(0, 20))}`);
}

/**
 * Runs a palette command that opens a quick pick of its own and picks the row showing `pick` (after
 * typing `filter` into the pick, if given; `beforePick` sees the pick open). The palette is opened
 * as runCommand opens it. The command's pick can close under the pointer as the palette can (a
 * terminal or a webview that just opened taking focus): nothing was picked then, so the command is
 * run again, until `timeoutMs`. Once the row is clicked it is never run again.
 */
export async function runPickCommand(
  page: Page,
  title: string,
  pick: string | RegExp,
  options: { filter?: string; beforePick?: () => Promise<void>; timeoutMs?: number } = {},
): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const seen: string[] = [];
  for (;;) {
    try {
      const index = await findPaletteEntry(page, title, seen, 1000);
      if (index < 0) throw new Error(`runPickCommand: no command palette entry "${title}"; entries shown: ${JSON.stringify(seen.slice(0, 20))}`);
      await rows.nth(index).click({ timeout: 5000 });
      if (options.filter !== undefined) await widget.locator('.quick-input-box input').fill(options.filter, { timeout: 5000 });
      const row = rows.filter({ hasText: pick }).first();
      await row.waitFor({ timeout: 15_000 });
      await options.beforePick?.();
      await row.click({ timeout: 5000 });
      break;
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await page.keyboard.press('Escape');
      await sleep(400);
    }
  }
  await widget.waitFor({ state: 'hidden', timeout: 15_000 });
}

/**
 * Waits until the extension at `extensionDevelopmentPath` has been registered by the extension
 * host, i.e. its first contributed command with a title is listed in the command palette (its
 * views, menus and settings are registered at the same moment). No-op for an extension without
 * contributed commands.
 */
export async function waitForExtension(page: Page, extensionDevelopmentPath: string, timeoutMs = 60_000): Promise<void> {
  const manifest = JSON.parse(readFileSync(path.join(extensionDevelopmentPath, 'package.json'), 'utf8')) as {
    contributes?: { commands?: { title?: unknown; category?: unknown }[] };
  };
  const command = manifest.contributes?.commands?.find((c) => typeof c.title === 'string');
  if (!command) return;
  const label = typeof command.category === 'string' ? `${command.category}: ${command.title}` : String(command.title);
  const deadline = Date.now() + timeoutMs;
  const seen: string[] = [];
  try {
    while (Date.now() < deadline) {
      if ((await findPaletteEntry(page, label, seen, 500)) >= 0) return;
      await page.keyboard.press('Escape');
      await sleep(500);
    }
  } finally {
    await page.keyboard.press('Escape');
  }
  throw new Error(`waitForExtension: "${label}" of ${extensionDevelopmentPath} did not appear in the command palette within ${timeoutMs} ms`);
}

/** Saves a full-page PNG under <repo>/test-results/screenshots/ and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name.replace(/[^A-Za-z0-9._-]+/g, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Fails at once, saying what to run, when the bundles a UI test loads have not been built. */
export function assertUiBuild(): void {
  for (const f of ['dist/extension.js', 'dist/cli.js', 'dist/webview.js']) {
    if (!existsSync(path.join(REPO_ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
  }
}

/**
 * Sets the Logs view's filter to one action, any level, no text, through Engine Monitor: Filter
 * Logs as a user does (its three-step quick pick), and waits for the pick to close.
 */
export async function filterLogsByAction(page: Page, action: string): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('.quick-input-box input');
  await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
  await page.keyboard.press('F1');
  await input.fill('>Engine Monitor: Filter Logs');
  await widget.locator('.monaco-list-row', { hasText: 'Filter Logs' }).first().click();
  // Step 1: actions (multi-select): tick this one.
  await widget.locator('.monaco-list-row', { hasText: 'item_discovered' }).first().waitFor();
  await input.fill(action);
  await widget.locator('.monaco-list-row', { hasText: action }).first().click();
  await page.keyboard.press('Enter');
  // Step 2: minimum level: any.
  await widget.locator('.monaco-list-row', { hasText: 'Any level' }).first().click();
  // Step 3: text: none.
  await widget.locator('.quick-input-title', { hasText: '3/3' }).waitFor();
  await page.keyboard.press('Enter');
  await widget.waitFor({ state: 'hidden' });
}

/** A view pane of the side bar (the Engine Monitor container's views), by its title. */
export function viewPane(page: Page, title: string): Locator {
  return page.locator('.part.sidebar .pane').filter({ has: page.locator('.pane-header', { hasText: new RegExp(`^\\s*${title}`, 'i') }) });
}

/** A tree view's row as a user reads it: label, description, and where it sits in the tree. */
export interface TreeRow {
  label: string;
  description: string;
  /** "true"/"false" for a group row, null for a leaf. */
  expanded: string | null;
  /** The depth, "1" for a top-level row. */
  level: string | null;
}

/** The rows a tree view shows now (only those rendered: the list is virtual). */
export async function treeRows(view: Locator): Promise<TreeRow[]> {
  return view.locator('.monaco-list-row').evaluateAll((els) =>
    els.map((el) => ({
      label: el.querySelector('.label-name')?.textContent?.trim() ?? '',
      description: el.querySelector('.label-description')?.textContent?.trim() ?? '',
      expanded: el.getAttribute('aria-expanded'),
      level: el.getAttribute('aria-level'),
    })),
  );
}
