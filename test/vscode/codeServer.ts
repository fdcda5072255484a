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
// The harness is split by part: code-server itself (codeServerProcess.ts), Chromium and the
// workbench's console (browser.ts), extension-host suites (extensionTests.ts) and live workbenches
// for UI tests (workbench.ts). Tests import all of it from here.
export {
  CHROMIUM_PATH,
  CODE_SERVER_VERSION,
  DEFAULT_USER_SETTINGS,
  REPO_ROOT,
  SCREENSHOT_DIR,
  codeServerBinary,
  startCodeServer,
  type CodeServer,
  type StartCodeServerOptions,
} from './codeServerProcess';
export { ConsoleForwarder, decodeConsoleMessage, launchChromium, remoteUri, workbenchUrl, type FormattedConsoleMessage, type WorkbenchTarget } from './browser';
export { runExtensionTests, type RunExtensionTestsOptions } from './extensionTests';
export {
  assertUiBuild,
  filterLogsByAction,
  openWorkbench,
  runCommand,
  runPickCommand,
  screenshot,
  treeRows,
  viewPane,
  waitForExtension,
  waitForWorkbench,
  type OpenWorkbenchOptions,
  type TreeRow,
  type Workbench,
} from './workbench';
