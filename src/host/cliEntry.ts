// dist/cli.js, the `engine-monitor` program: a small door to dist/cli-main.js (src/host/cli.ts,
// the command line and the engine host). `serve` loads it through V8's code cache (codeCache.ts),
// because a window waits for the engine host's start; the one-shot client commands load it as
// Node would, since for them reading ~1 MB of cached code costs what it saves.
import path from 'node:path';
import { CODE_CACHE_ENV, defaultCodeCacheDir, runWithCodeCache } from './codeCache';

/** Long enough for the start-up work (database, first scan, server, first requests) to be compiled. */
const SAVE_AFTER_MS = 3000;

const main = path.join(__dirname, 'cli-main.js');
const setting = process.env[CODE_CACHE_ENV];
if (process.argv[2] === 'serve' && setting !== 'off') {
  const run = runWithCodeCache(main, setting || defaultCodeCacheDir());
  if (run.state !== 'accepted' && run.state !== 'off') setTimeout(() => run.save(), SAVE_AFTER_MS).unref();
} else {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a path known only at run time, beside this file
  require(main);
}
