/**
 * `npm run test:extension`: runs this folder's extension-host suite inside code-server on a fresh
 * copy of examples/demo (never the repository's own demo, which must stay clean), then checks
 * from outside that no engine host process outlived VS Code.
 *
 *   npx tsx test/extension/runInCodeServer.ts [--keep]   (--keep leaves the temp workspace)
 */
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { processesMentioning } from '../unit/support/cli';
import { REPO_ROOT, runExtensionTests } from '../vscode/codeServer';

/**
 * Launch helpers whose engine (named by their `--engine-pid=` argument) is gone: a helper ends
 * its attempts and exits within about 2 s of losing its engine, so one found later has leaked.
 */
export function orphanedLaunchHelpers(): { pid: number; cmdline: string }[] {
  return processesMentioning('launch-helper.js').filter((p) => {
    const engine = Number(/--engine-pid=(\d+)/.exec(p.cmdline)?.[1]);
    if (!engine) return false;
    try {
      process.kill(engine, 0);
      return false;
    } catch {
      return true;
    }
  });
}

async function main(): Promise<number> {
  const keep = process.argv.includes('--keep');
  const helpersBefore = new Set(orphanedLaunchHelpers().map((p) => p.pid));
  const tests = path.join(REPO_ROOT, 'dist', 'test', 'extension', 'index.js');
  if (!existsSync(tests) || !existsSync(path.join(REPO_ROOT, 'dist', 'extension.js')) || !existsSync(path.join(REPO_ROOT, 'dist', 'cli.js'))) {
    console.error('test:extension: build first (npm run build): dist/extension.js, dist/cli.js and dist/test/extension/index.js are needed');
    return 2;
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'engine-monitor-ext-'));
  const folder = path.join(tmp, 'demo');
  cpSync(path.join(REPO_ROOT, 'examples', 'demo'), folder, {
    recursive: true,
    filter: (src) => !src.split(path.sep).join('/').includes('/.engine/state'),
  });
  console.log(`test:extension: workspace ${folder}`);
  let code = 1;
  try {
    // Pass 1: a trusted folder (Workspace Trust disabled), the full suite.
    code = await runExtensionTests({ extensionDevelopmentPath: REPO_ROOT, extensionTestsPath: tests, folder });
    if (code === 0) {
      // Pass 2: Workspace Trust on, the folder untrusted: index.ts runs the Restricted Mode suite.
      const untrusted = path.join(tmp, 'untrusted');
      cpSync(path.join(REPO_ROOT, 'examples', 'demo'), untrusted, {
        recursive: true,
        filter: (src) => !src.split(path.sep).join('/').includes('/.engine/state'),
      });
      console.log(`test:extension: Restricted Mode pass, workspace ${untrusted}`);
      code = await runExtensionTests({ extensionDevelopmentPath: REPO_ROOT, extensionTestsPath: tests, folder: untrusted, trustWorkspaces: true });
    }
  } finally {
    // code-server is gone now: an engine host still running would be an orphan of the extension.
    await new Promise((r) => setTimeout(r, 500));
    const left = processesMentioning(tmp).filter((p) => p.cmdline.includes('cli.js'));
    await new Promise((r) => setTimeout(r, 2500));
    left.push(...orphanedLaunchHelpers().filter((p) => !helpersBefore.has(p.pid)));
    if (left.length) {
      console.error(`test:extension: FAIL: engine host or launch helper processes left behind:\n${left.map((p) => `  ${p.pid} ${p.cmdline}`).join('\n')}`);
      for (const p of left) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      code = code || 1;
    } else {
      console.log('test:extension: no engine host or launch helper process left behind');
    }
    if (!keep) rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  }
  return code;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
