// Chromium for the harness (codeServer.ts): launching it, the workbench URL it opens, and the
// workbench's console messages, decoded and forwarded.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { format } from 'node:util';
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';
import { CHROMIUM_PATH, SETUP_HINT, type CodeServer } from './codeServerProcess';

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
