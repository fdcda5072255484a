/**
 * Runs an extension-host test suite inside code-server (a real VS Code) and exits with its code.
 *
 *   npx tsx test/vscode/runSuite.ts --extension <dir> --tests <compiled index.js> --folder <workspace>
 *       [--trust] [--timeout <ms>] [--settings <json file>]
 *
 * --extension  the extension's root (its package.json directory); default: the repo root
 * --tests      the compiled test index exporting `async run()`; default: dist/test/extension/index.js
 * --folder     the workspace folder to open; required
 * --trust      keep Workspace Trust on (default: --disable-workspace-trust)
 * --settings   a JSON file of user settings merged over the harness defaults
 *
 * The same suite runs under @vscode/test-electron with test/vscode/runElectron.ts.
 * Exit codes: the suite's own (0 = passed), 2 for bad arguments, 1 when the harness itself fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT, runExtensionTests } from './codeServer';

export interface SuiteArgs {
  extensionDevelopmentPath: string;
  extensionTestsPath: string;
  folder: string;
  trustWorkspaces: boolean;
  timeoutMs?: number;
  userSettings?: Record<string, unknown>;
}

/** Parses the command line shared by runSuite.ts and runElectron.ts; throws an Error with a usage message. */
export function parseSuiteArgs(argv: string[]): SuiteArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      extension: { type: 'string' },
      tests: { type: 'string' },
      folder: { type: 'string' },
      trust: { type: 'boolean', default: false },
      timeout: { type: 'string' },
      settings: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const extensionDevelopmentPath = path.resolve(values.extension ?? REPO_ROOT);
  const extensionTestsPath = path.resolve(values.tests ?? path.join(REPO_ROOT, 'dist', 'test', 'extension', 'index.js'));
  if (!values.folder) throw new Error('--folder <workspace folder> is required');
  const folder = path.resolve(values.folder);
  if (!existsSync(path.join(extensionDevelopmentPath, 'package.json'))) {
    throw new Error(`--extension: no package.json in ${extensionDevelopmentPath}`);
  }
  if (!existsSync(extensionTestsPath)) {
    throw new Error(`--tests: ${extensionTestsPath} does not exist (build the tests first)`);
  }
  if (!existsSync(folder)) throw new Error(`--folder: ${folder} does not exist`);
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error(`--timeout: not a positive integer: ${values.timeout}`);
  }
  let userSettings: Record<string, unknown> | undefined;
  if (values.settings !== undefined) {
    userSettings = JSON.parse(readFileSync(values.settings, 'utf8')) as Record<string, unknown>;
  }
  return { extensionDevelopmentPath, extensionTestsPath, folder, trustWorkspaces: values.trust ?? false, timeoutMs, userSettings };
}

async function main(): Promise<number> {
  let args: SuiteArgs;
  try {
    args = parseSuiteArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`runSuite: ${(err as Error).message}`);
    console.error('usage: npx tsx test/vscode/runSuite.ts --extension <dir> --tests <compiled index.js> --folder <workspace> [--trust] [--timeout <ms>] [--settings <json>]');
    return 2;
  }
  const started = Date.now();
  console.log(`runSuite: ${args.extensionTestsPath} in code-server, folder ${args.folder}`);
  const code = await runExtensionTests(args);
  console.log(`runSuite: exit code ${code} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return code;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`runSuite: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
