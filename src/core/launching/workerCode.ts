// The code of a thread or process the engine starts (the checkpoint builder, the fleet store's
// connection thread, the problem-matcher thread): its bundle beside the bundle running this code
// (dist/), or, when running from TypeScript sources (unit tests), its .ts file, loaded through tsx.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';

export interface WorkerCode {
  file: string;
  fromSource: boolean;
}

/** `bundle` (dist/<bundle>) or `source` in `dir` (the caller's __dirname), whichever is there. */
export function workerCode(dir: string, bundle: string, source: string): WorkerCode {
  const bundled = path.join(dir, bundle);
  if (existsSync(bundled)) return { file: bundled, fromSource: false };
  const fromSource = path.join(dir, source);
  if (existsSync(fromSource)) return { file: fromSource, fromSource: true };
  throw new Error(`${bundle} is missing from ${dir}`);
}

/** A worker thread running `code`. */
export function startWorker(code: WorkerCode, options: WorkerOptions = {}): Worker {
  return code.fromSource ? new Worker(`require('tsx/cjs'); require(${JSON.stringify(code.file)});`, { ...options, eval: true }) : new Worker(code.file, options);
}
