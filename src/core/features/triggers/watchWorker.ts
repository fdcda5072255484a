// The file-watching thread (dist/watch-worker.js): runs chokidar for the watched templates off the
// engine's main thread (src/core/features/triggers/watchThread.ts). Setting up a watch reads every
// folder that can hold a match and opens an inotify watch per matching file: 400 ms of event loop
// for 5 000 matching files, which here costs this thread only. It posts each change that a glob
// names; the engine debounces and fires.
import { watch, type FSWatcher } from 'chokidar';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { isInside } from '../../intake/workingFolder';
import { watchGlob } from './globs';
import type { WatchRequest, WatchNotice } from './watchThread';

if (!parentPort) throw new Error('watch-worker: started by the engine as a worker thread');
const port = parentPort;
/** Folder names never watched, wherever they are. */
const NEVER = new Set(['.git', 'node_modules']);
const watchers = new Map<number, FSWatcher>();
const post = (notice: WatchNotice) => port.postMessage(notice);

port.on('message', (request: WatchRequest) => {
  if (request.type === 'unwatch') {
    const w = watchers.get(request.key);
    watchers.delete(request.key);
    void (w ? w.close() : Promise.resolve()).then(() => post({ type: 'closed', key: request.key }));
    return;
  }
  const { key, cwd, excluded } = request;
  const globs = request.globs.map((g) => watchGlob(g, cwd));
  const ignored = (p: string, stats?: Stats): boolean => {
    if (p.split(path.sep).some((s) => NEVER.has(s))) return true;
    if (excluded.some((x) => isInside(x, p))) return true;
    if (stats?.isDirectory()) return !globs.some((g) => (isInside(g.base, p) ? g.descend(p) : isInside(p, g.base)));
    if (stats?.isFile()) return !globs.some((g) => g.test(p));
    return false;
  };
  const watcher = watch(request.bases, { ignoreInitial: true, ignored, persistent: false });
  watchers.set(key, watcher);
  watcher.on('all', (event, changed) => {
    if (event === 'addDir' || event === 'unlinkDir' || !globs.some((g) => g.test(changed))) return;
    post({ type: 'change', key, path: changed });
  });
  watcher.on('ready', () => post({ type: 'ready', key }));
  watcher.on('error', (error) => post({ type: 'error', key, message: (error as Error).message }));
});
