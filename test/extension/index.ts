// The extension-host suite, run inside a real VS Code (code-server via test/vscode/runSuite.ts, or
// @vscode/test-electron via test/vscode/runElectron.ts). Bundled by build.mjs into
// dist/test/extension/index.js; a bundle defeats mocha's globbing, so the files are listed here,
// in the order they must run (the last one deactivates the extension). An untrusted folder gets
// the Restricted Mode suite instead.
import Mocha from 'mocha';
import * as vscode from 'vscode';

export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 60_000, reporter: 'spec' });
  // Define describe/it on the global object, then load the files: their top-level describe()
  // calls register the suites.
  mocha.suite.emit('pre-require', globalThis, 'engine-monitor', mocha);
  // While working on one suite: ENGINE_MONITOR_TEST_GREP=<regexp of test titles> (code-server's
  // environment reaches this extension host).
  const grep = process.env.ENGINE_MONITOR_TEST_GREP;
  if (grep) mocha.grep(new RegExp(grep));
  if (!vscode.workspace.isTrusted) {
    // The Workspace Trust pass (runInCodeServer.ts runs it with trust enabled, folder untrusted).
    require('./restricted.test');
    require('./lifecycle.test');
  } else {
    require('./sse.test');
    require('./earlyReads.test');
    require('./activation.test');
    require('./views.test');
    require('./schedules.test');
    require('./commands.test');
    require('./settings.test');
    require('./resilience.test');
    require('./remote.test');
    require('./walkthrough.test');
    require('./output.test');
    require('./compare.test');
    require('./control.test');
    require('./diagnostics.test');
    require('./codelens.test');
    require('./services.test');
    require('./problems.test');
    require('./tasks.test');
    require('./lifecycle.test');
  }
  await new Promise<void>((resolve, reject) => {
    mocha.run((failures) => (failures ? reject(new Error(`${failures} test(s) failed`)) : resolve()));
  });
}
