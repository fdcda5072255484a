// Extension-host test suites run inside code-server (the harness's runExtensionTests, codeServer.ts).
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { type Browser } from 'playwright-core';
import { startCodeServer } from './codeServerProcess';
import { launchChromium, workbenchUrl, ConsoleForwarder } from './browser';

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
