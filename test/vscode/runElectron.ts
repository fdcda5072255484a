/**
 * Runs the same extension-host suite as runSuite.ts, but in desktop VS Code through
 * `@vscode/test-electron` (which downloads VS Code from Microsoft's update server, so it only works
 * on machines that can reach it; on the team's offline machines use runSuite.ts).
 *
 *   npx tsx test/vscode/runElectron.ts --extension <dir> --tests <compiled index.js> --folder <workspace>
 *       [--timeout <ms>] [--settings <json file>]
 *
 * VS Code version: VSCODE_TEST_VERSION, default 1.100.3 (the Code version inside code-server 4.100.3,
 * so both runners exercise the same API). On Linux without a display, run it under `xvfb-run -a`.
 * `--trust` is not supported here: runTests always passes --disable-workspace-trust.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runTests, TestRunFailedError } from '@vscode/test-electron';
import { DEFAULT_USER_SETTINGS } from './codeServer';
import { parseSuiteArgs, type SuiteArgs } from './runSuite';

export const ELECTRON_VSCODE_VERSION = process.env.VSCODE_TEST_VERSION || '1.100.3';

/** Runs the suite in desktop VS Code and resolves with its exit code (0 = passed). */
export async function runElectronSuite(args: SuiteArgs): Promise<number> {
  if (args.trustWorkspaces) {
    throw new Error('--trust is not supported by @vscode/test-electron (it always passes --disable-workspace-trust); use runSuite.ts');
  }
  // A fresh user-data-dir with the same quiet defaults as the code-server runs, instead of
  // test-electron's shared .vscode-test/user-data that keeps state between runs.
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'vscode-electron-test-'));
  const userDataDir = path.join(tmpRoot, 'user-data');
  const extensionsDir = path.join(tmpRoot, 'extensions');
  mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  writeFileSync(
    path.join(userDataDir, 'User', 'settings.json'),
    JSON.stringify({ ...DEFAULT_USER_SETTINGS, ...args.userSettings }, null, 2),
  );

  let timer: NodeJS.Timeout | undefined;
  try {
    const run = runTests({
      version: ELECTRON_VSCODE_VERSION,
      extensionDevelopmentPath: args.extensionDevelopmentPath,
      extensionTestsPath: args.extensionTestsPath,
      launchArgs: [
        args.folder, // first launch argument: the folder to open
        `--user-data-dir=${userDataDir}`,
        `--extensions-dir=${extensionsDir}`,
        '--disable-extensions', // other installed extensions; the one under development still loads
        '--disable-telemetry',
      ],
    }).then(
      () => 0,
      (err: unknown) => {
        // runTests rejects on a non-zero exit; report it as the exit code, like runSuite.ts.
        if (err instanceof TestRunFailedError) return err.code ?? 1;
        throw err;
      },
    );
    if (args.timeoutMs === undefined) return await run;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`extension tests did not finish within ${args.timeoutMs} ms`)), args.timeoutMs);
    });
    return await Promise.race([run, timeout]);
  } finally {
    if (timer) clearTimeout(timer);
    rmSync(tmpRoot, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function main(): Promise<number> {
  let args: SuiteArgs;
  try {
    args = parseSuiteArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`runElectron: ${(err as Error).message}`);
    console.error('usage: npx tsx test/vscode/runElectron.ts --extension <dir> --tests <compiled index.js> --folder <workspace> [--timeout <ms>] [--settings <json>]');
    return 2;
  }
  console.log(`runElectron: ${args.extensionTestsPath} in VS Code ${ELECTRON_VSCODE_VERSION} (desktop), folder ${args.folder}`);
  const code = await runElectronSuite(args);
  console.log(`runElectron: exit code ${code}`);
  return code;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`runElectron: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
