// Where the engine host finds its launch helper (launchHelperMain.ts) and how it starts it. The
// engine only forks the entry it is given (EngineOptions.launchHelper); which file that is, a
// bundle beside this one or the TypeScript source under tsx, depends on how this program was built
// and started, which only the host knows.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { LaunchHelperEntry } from '../core/launching';

/**
 * The helper's V8 heap limits. It holds a few attempts and their output tails, so small heaps
 * cost nothing and keep a long-lived helper from growing: fork cost grows with memory (measured in
 * docs/PERFORMANCE.md). Explicit, too, so the helper never inherits the engine's own options
 * (--cpu-prof, inspector flags).
 */
export const LAUNCH_HELPER_NODE_OPTIONS = ['--max-old-space-size=64', '--max-semi-space-size=1'];

/**
 * The launch helper for this platform and layout:
 * - null on Windows: it has no process groups to end when the helper or the engine dies (the
 *   helper's cleanup is POSIX-only), so attempts are launched in the engine's own process there;
 * - `launch-helper.js` beside the running bundle (dist/cli.js → dist/launch-helper.js);
 * - running from TypeScript sources (tests, tsx): the .ts entry under tsx's loader, so what runs
 *   is the source being tested, never a stale build;
 * - the repository's dist/launch-helper.js (another bundle, e.g. the benchmark's, two levels down).
 * Undefined when none exists: the engine then warns once and launches in its own process.
 */
export function locateLaunchHelper(dir = __dirname): LaunchHelperEntry | null | undefined {
  if (process.platform === 'win32') return null;
  const beside = path.join(dir, 'launch-helper.js');
  if (existsSync(beside)) return { file: beside, execArgv: LAUNCH_HELPER_NODE_OPTIONS };
  const source = path.join(dir, 'launchHelperMain.ts');
  if (__filename.endsWith('.ts') && existsSync(source)) {
    try {
      const tsx = createRequire(__filename).resolve('tsx/cjs');
      return { file: source, execArgv: [...LAUNCH_HELPER_NODE_OPTIONS, '--require', tsx] };
    } catch {
      // tsx is not installed: try a build below.
    }
  }
  const built = path.join(dir, '..', '..', 'dist', 'launch-helper.js');
  if (existsSync(built)) return { file: built, execArgv: LAUNCH_HELPER_NODE_OPTIONS };
  return undefined;
}
