/**
 * Harness for running the extension inside a real VS Code: code-server (VS Code 1.100.3 with a real
 * Node extension host, served over HTTP) driven by Debian's Chromium through playwright-core.
 *
 * `@vscode/test-electron` downloads VS Code from Microsoft at test time, which these machines cannot
 * reach; code-server comes from the npm registry instead (see test/vscode/setup-code-server.sh and
 * /work/shared/guides/real-vscode.md). Two ways to use it:
 *
 *  - `runExtensionTests()`: the same extension-host suite `@vscode/test-electron` runs (a test index
 *    exporting `async run()`), executed in the remote extension host; resolves with its exit code.
 *  - `openWorkbench()`: a live workbench window with the extension loaded, for UI tests that click,
 *    run commands from the palette and take screenshots.
 *
 * Missing prerequisites (code-server, Chromium) throw: a UI test must fail, never silently skip.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { format } from 'node:util';
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';
import { endEngineHosts } from './engineProbe';

/** Root of the repository (this file lives in <repo>/test/vscode). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const CODE_SERVER_VERSION = '4.100.3';
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-results', 'screenshots');

const SETUP_HINT = 'run `bash test/vscode/setup-code-server.sh` (installs chromium, ripgrep, libkrb5-dev and code-server)';

// ------------------------------------------------------------------------------------------------
// code-server
// ------------------------------------------------------------------------------------------------

/** Path of the installed code-server entry point (a Node script). Throws when it is not installed. */
export function codeServerBinary(): string {
  const entry = path.join(REPO_ROOT, '.vscode-test', 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  if (!existsSync(entry)) {
    throw new Error(`code-server ${CODE_SERVER_VERSION} is not installed (expected ${entry}); ${SETUP_HINT}`);
  }
  return entry;
}

/**
 * Settings written to the temporary user-data-dir's User/settings.json: keep the workbench quiet
 * and deterministic (no welcome page, walkthroughs, tips, telemetry, update or recommendation
 * notifications, no close confirmation that would block tearing the page down).
 */
export const DEFAULT_USER_SETTINGS: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'window.confirmBeforeClose': 'never',
  // Test folders inside the repo would otherwise raise "a git repository was found in a parent folder".
  'git.openRepositoryInParentFolders': 'never',
  'chat.commandCenter.enabled': false,
  // Only matters with trustWorkspaces: open untrusted folders in restricted mode without the modal
  // "Do you trust the authors?" dialog, so trust tests start from a known, unblocked state.
  'security.workspace.trust.startupPrompt': 'never',
};

export interface StartCodeServerOptions {
  /** Keep Workspace Trust active (default false: code-server runs with --disable-workspace-trust). */
  trustWorkspaces?: boolean;
  /** Merged over DEFAULT_USER_SETTINGS. */
  userSettings?: Record<string, unknown>;
  /** Extra environment for code-server; the remote extension host inherits it. */
  env?: NodeJS.ProcessEnv;
  /** Extensions directory (default: a fresh empty temporary one, removed by stop()). */
  extensionsDir?: string;
  /** Milliseconds to wait for the server to answer (default 60 000). */
  startTimeoutMs?: number;
  /** Print code-server's own stdout/stderr as it comes (default: only on failure, or CODE_SERVER_VERBOSE=1). */
  verbose?: boolean;
}

export interface CodeServer {
  /** http://127.0.0.1:<port> (no trailing slash). */
  readonly url: string;
  readonly port: number;
  readonly userDataDir: string;
  readonly extensionsDir: string;
  /** Everything code-server (and processes it spawned) wrote to stdout/stderr so far. */
  output(): string;
  /** Kills the whole process tree and removes the temporary directories. Safe to call twice. */
  stop(): Promise<void>;
}

/** Process groups still running; killed synchronously if this Node process exits without stop(). */
const liveGroups = new Set<number>();
let exitHookInstalled = false;
function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
    });
  }
}
function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(0));
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Starts code-server on a free 127.0.0.1 port with a temporary user-data-dir; resolves once it answers. */
export async function startCodeServer(opts: StartCodeServerOptions = {}): Promise<CodeServer> {
  const entry = codeServerBinary();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'code-server-test-'));
  const userDataDir = path.join(tmpRoot, 'user-data');
  const extensionsDir = opts.extensionsDir ?? path.join(tmpRoot, 'extensions');
  const xdgDir = path.join(tmpRoot, 'xdg');
  for (const d of [path.join(userDataDir, 'User'), extensionsDir, xdgDir]) mkdirSync(d, { recursive: true });
  writeFileSync(
    path.join(userDataDir, 'User', 'settings.json'),
    JSON.stringify({ ...DEFAULT_USER_SETTINGS, ...opts.userSettings }, null, 2),
  );
  // An explicit (empty) config file: otherwise code-server reads, or on first run writes,
  // ~/.config/code-server/config.yaml, which may set a password or a certificate.
  const configFile = path.join(tmpRoot, 'config.yaml');
  writeFileSync(configFile, 'auth: none\ncert: false\n');

  const verbose = opts.verbose ?? process.env.CODE_SERVER_VERBOSE === '1';
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  let lastError: Error | undefined;

  // The port is picked before code-server binds it, so another process may take it in between:
  // retry a couple of times on EADDRINUSE.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const args = [
      entry,
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--config', configFile,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      '--user-data-dir', userDataDir,
      '--extensions-dir', extensionsDir,
      ...(opts.trustWorkspaces ? [] : ['--disable-workspace-trust']),
    ];
    let output = '';
    const child: ChildProcess = spawn(process.execPath, args, {
      // Own process group, so stop() can kill code-server together with its extension host,
      // pty host and file watcher in one go.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        // code-server keeps its logs and state under XDG dirs; keep them out of the user's home.
        XDG_CONFIG_HOME: xdgDir,
        XDG_DATA_HOME: xdgDir,
        XDG_CACHE_HOME: xdgDir,
        ...opts.env,
      },
    });
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      if (verbose) process.stderr.write(text.replace(/\n$/, '').replace(/^/gm, '[code-server] ') + '\n');
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const exitPromise = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exited = { code, signal };
        liveGroups.delete(child.pid!);
        resolve();
      });
    });
    if (child.pid === undefined) {
      await exitPromise.catch(() => undefined);
      rmSync(tmpRoot, { recursive: true, force: true });
      throw new Error(`could not spawn code-server (${process.execPath} ${entry})`);
    }
    trackGroup(child.pid);
    const pid = child.pid;

    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      killGroup(pid, 'SIGTERM');
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([exitPromise, new Promise<void>((r) => (graceTimer = setTimeout(r, 5000)))]);
      clearTimeout(graceTimer); // a pending timer would keep the test process alive for 5 s
      // The extension host and other helpers may outlive the server itself; SIGKILL whatever is
      // left in the group (harmless when the group is already empty).
      await sleep(200);
      killGroup(pid, 'SIGKILL');
      liveGroups.delete(pid);
      // The engine host is detached from VS Code and outlives it by design: the test ends it.
      await endEngineHosts(userDataDir);
      rmSync(tmpRoot, { recursive: true, force: true, maxRetries: 3 });
    };

    // Wait until it answers (code-server serves /healthz once its HTTP server is up).
    const deadline = Date.now() + startTimeoutMs;
    while (!exited && Date.now() < deadline) {
      if ((await httpStatus(`${url}/healthz`)) === 200) {
        return { url, port, userDataDir, extensionsDir, output: () => output, stop };
      }
      await sleep(250);
    }
    if (exited && /EADDRINUSE/.test(output) && attempt < 3) {
      lastError = new Error(`port ${port} was taken`);
      continue;
    }
    const why = exited
      ? `exited early (code ${exited.code}, signal ${exited.signal})`
      : `did not answer on ${url}/healthz within ${startTimeoutMs} ms`;
    await stop();
    throw new Error(`code-server ${why}. Its output:\n${output}`);
  }
  rmSync(tmpRoot, { recursive: true, force: true });
  throw lastError ?? new Error('code-server did not start');
}

// ------------------------------------------------------------------------------------------------
// Chromium
// ------------------------------------------------------------------------------------------------

/** Launches Debian's Chromium, headless, with a fresh temporary profile (playwright removes it on close). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed (expected ${CHROMIUM_PATH}); ${SETUP_HINT}`);
  }
  // Playwright gives the browser a fresh temporary profile; Chromium still writes its crash-report
  // settings under $XDG_CONFIG_HOME (~/.config/chromium), so point that at a temp dir as well.
  const xdgDir = mkdtempSync(path.join(os.tmpdir(), 'chromium-test-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    env: { ...process.env, XDG_CONFIG_HOME: xdgDir, XDG_CACHE_HOME: xdgDir },
    args: [
      '--no-sandbox', // we run as root (and in containers), where the sandbox cannot start
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  }).catch((err: unknown) => {
    rmSync(xdgDir, { recursive: true, force: true });
    throw err;
  });
  browser.on('disconnected', () => rmSync(xdgDir, { recursive: true, force: true }));
  return browser;
}

// ------------------------------------------------------------------------------------------------
// Workbench URL
// ------------------------------------------------------------------------------------------------

export interface WorkbenchTarget {
  /** Absolute path of the folder to open (on the code-server machine, i.e. this one). */
  folder: string;
  /** Absolute path of the extension to load in development mode (its package.json directory). */
  extensionDevelopmentPath?: string;
  /** Absolute path of the compiled test index (exports `async run()`); makes the window a test run. */
  extensionTestsPath?: string;
}

/**
 * A vscode-remote:// URI for a path on the code-server machine. The browser workbench resolves
 * `file://` development/test paths against its own (web) extension host, which cannot run a Node
 * test runner ("No extension host found that can launch the test runner"); a vscode-remote URI
 * whose authority is the server itself sends them to the remote Node extension host.
 */
export function remoteUri(server: Pick<CodeServer, 'port'>, absPath: string): string {
  const resolved = path.resolve(absPath);
  const encoded = resolved.split(path.sep).map(encodeURIComponent).join('/');
  return `vscode-remote://127.0.0.1:${server.port}${encoded}`;
}

/** `http://127.0.0.1:<port>/?folder=…&payload=…` opening `folder`, optionally in extension development / test mode. */
export function workbenchUrl(server: Pick<CodeServer, 'url' | 'port'>, target: WorkbenchTarget): string {
  const payload: [string, string][] = [];
  if (target.extensionDevelopmentPath) {
    payload.push(['extensionDevelopmentPath', remoteUri(server, target.extensionDevelopmentPath)]);
  }
  if (target.extensionTestsPath) {
    payload.push(['extensionTestsPath', remoteUri(server, target.extensionTestsPath)]);
  }
  const params = new URLSearchParams({ folder: path.resolve(target.folder) });
  if (payload.length) params.set('payload', JSON.stringify(payload));
  return `${server.url}/?${params.toString()}`;
}

// ------------------------------------------------------------------------------------------------
// Extension-host test suites
// ------------------------------------------------------------------------------------------------

export interface RunExtensionTestsOptions {
  extensionDevelopmentPath: string;
  extensionTestsPath: string;
  folder: string;
  userSettings?: Record<string, unknown>;
  trustWorkspaces?: boolean;
  /** Environment for code-server and so for the extension host running the suite. */
  env?: NodeJS.ProcessEnv;
  /** Whole-run limit (default 10 minutes, or VSCODE_TEST_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Where the suite's output goes (default: process.stdout). */
  log?: (line: string) => void;
}

/**
 * Messages the workbench itself logs on every start, whatever the suite does: connection set-up,
 * service-worker and chat bookkeeping, iframe warnings, and the extension gallery (open-vsx.org)
 * it cannot reach without internet. Dropped unless `verbose`.
 */
const WORKBENCH_NOISE: RegExp[] = [
  /^Resolving connection token/,
  /^Resolved connection token/,
  /^Creating a socket \(/,
  /^Updating additional builtin extensions cache/,
  /^\[Service Worker\]/,
  /^ChatSessionStore:/,
  /^The web worker extension host is started in a same-origin iframe/,
  /allow-scripts and allow-same-origin/,
  /^Overwriting extension <</,
  /open-vsx\.org/,
  /^Failed to load resource/,
];

export interface FormattedConsoleMessage {
  /** 'info' | 'warn' | 'error' | … for VS Code log-service lines, else the browser console type. */
  level: string;
  text: string;
  /** True for lines of the workbench's log service, which is where the extension host's output lands. */
  fromLogService: boolean;
  /** Known workbench start-up noise. */
  noise: boolean;
}

const LOG_SERVICE_PREFIX = /^%c\s*(TRACE|DEBUG|INFO|WARN|ERR)\s*$/;

/**
 * Decodes one console message of the workbench page.
 *
 * When a window runs extension tests, the workbench forwards everything the remote extension host
 * writes (console.* calls, and process.stdout/stderr writes such as mocha's reporter output) to its
 * log service, which prints it in the browser console as
 * `console.log('%c INFO', 'color: #33f', <original format string>, ...<original args>)`
 * (`%c  ERR` / `%c WARN` for console.error / console.warn / stderr). `msg.text()` would show the
 * CSS and the unformatted `%s` placeholders, so rebuild the text with util.format from the
 * original arguments instead.
 */
export async function decodeConsoleMessage(msg: ConsoleMessage): Promise<FormattedConsoleMessage> {
  let values: unknown[] | undefined;
  try {
    values = await Promise.all(msg.args().map((a) => a.jsonValue().catch(() => a.toString())));
  } catch {
    values = undefined; // page already closed: fall back to the preview text
  }
  let level: string = msg.type();
  let text = msg.text();
  let fromLogService = false;
  if (values && values.length >= 3 && typeof values[0] === 'string' && LOG_SERVICE_PREFIX.test(values[0])) {
    const tag = LOG_SERVICE_PREFIX.exec(values[0])![1];
    level = tag === 'ERR' ? 'error' : tag.toLowerCase();
    fromLogService = true;
    const [, , fmt, ...rest] = values;
    text = format(fmt, ...rest);
  }
  text = text.replace(/\n+$/, '');
  const firstLine = text.split('\n', 1)[0];
  return { level, text, fromLogService, noise: WORKBENCH_NOISE.some((re) => re.test(firstLine)) };
}

/**
 * Forwards the page console to `log` in order (decoding is asynchronous, so messages are chained),
 * printing the extension host's output as it was written and other workbench messages prefixed.
 */
export class ConsoleForwarder {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: (line: string) => void,
    private readonly verbose = process.env.CODE_SERVER_VERBOSE === '1',
  ) {}

  attach(page: Page): void {
    page.on('console', (msg) => {
      this.chain = this.chain.then(async () => {
        const m = await decodeConsoleMessage(msg);
        if (m.noise && !this.verbose) return;
        this.log(m.fromLogService && !m.noise ? m.text : `[workbench ${m.level}] ${m.text}`);
      });
    });
    page.on('pageerror', (err) => {
      this.chain = this.chain.then(() => this.log(`[workbench pageerror] ${err.stack ?? err.message}`));
    });
  }

  /** Resolves once every message received so far has been printed. */
  flush(): Promise<void> {
    return this.chain;
  }
}

/**
 * Runs an extension-host test suite (a compiled index exporting `async run()`, as for
 * `@vscode/test-electron`) inside code-server, and resolves with its exit code (0 = passed).
 * Rejects on timeout or when the workbench cannot start; always stops the browser and server.
 */
export async function runExtensionTests(opts: RunExtensionTestsOptions): Promise<number> {
  const log = opts.log ?? ((line: string) => process.stdout.write(line.endsWith('\n') ? line : `${line}\n`));
  const timeoutMs = opts.timeoutMs ?? (Number(process.env.VSCODE_TEST_TIMEOUT_MS) || 10 * 60_000);
  for (const [name, p] of [
    ['extensionDevelopmentPath', path.join(opts.extensionDevelopmentPath, 'package.json')],
    ['extensionTestsPath', opts.extensionTestsPath],
    ['folder', opts.folder],
  ] as const) {
    if (!existsSync(p)) throw new Error(`runExtensionTests: ${name} does not exist: ${p}`);
  }

  const server = await startCodeServer({
    trustWorkspaces: opts.trustWorkspaces,
    userSettings: opts.userSettings,
    env: opts.env,
  });
  let browser: Browser | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    browser = await launchChromium();
    const page = await browser.newPage();
    let settle!: { resolve: (code: number) => void; reject: (err: Error) => void };
    const exitCode = new Promise<number>((resolve, reject) => (settle = { resolve, reject }));
    exitCode.catch(() => undefined); // may settle while goto() is still pending; awaited below
    timer = setTimeout(
      () => settle.reject(new Error(`extension tests did not finish within ${timeoutMs} ms (${opts.extensionTestsPath})`)),
      timeoutMs,
    );
    page.once('crash', () => settle.reject(new Error('the workbench page crashed')));
    page.once('close', () => settle.reject(new Error('the workbench page closed before the tests finished')));
    // The workbench calls window.codeAutomationExit(code) when the test runner's run() settles
    // (0 when it resolved, 1 when it rejected or failed to load); without it, it would just try
    // to close the window. It must exist before the workbench loads, hence before goto().
    await page.exposeFunction('codeAutomationExit', (code: unknown) => settle.resolve(Number(code)));
    const forwarder = new ConsoleForwarder(log);
    forwarder.attach(page);
    await page.goto(workbenchUrl(server, opts), { waitUntil: 'domcontentloaded' });
    const code = await exitCode;
    // The suite's last lines reach the page before codeAutomationExit; print them all.
    await forwarder.flush();
    return code;
  } catch (err) {
    const tail = server.output().split('\n').slice(-40).join('\n');
    if (tail.trim()) log(`--- last lines of code-server output ---\n${tail}`);
    throw err;
  } finally {
    if (timer) clearTimeout(timer);
    await browser?.close().catch(() => undefined);
    await server.stop();
  }
}

// ------------------------------------------------------------------------------------------------
// UI tests
// ------------------------------------------------------------------------------------------------

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
      await widget.locator('.quick-input-list .monaco-list-row').nth(index).click();
      await widget.waitFor({ state: 'hidden', timeout: Math.max(1000, deadline - Date.now()) });
      return;
    }
    await page.keyboard.press('Escape');
    await sleep(400);
  }
  throw new Error(`runCommand: no command palette entry "${title}" within ${timeoutMs} ms; entries shown: ${JSON.stringify(seen.slice(0, 20))}`);
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
