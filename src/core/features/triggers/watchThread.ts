// The engine's side of the file-watching thread (watchWorker.ts): one worker thread, started with
// the first watched template, holds every template's watcher. What arrives here is only the
// changes the templates' globs name, one message each.
import type { Worker } from 'node:worker_threads';
import { startWorker, workerCode } from '../../launching/workerCode';

export type WatchRequest =
  | { type: 'watch'; key: number; bases: string[]; globs: string[]; cwd: string; excluded: string[] }
  | { type: 'unwatch'; key: number };
export type WatchNotice =
  | { type: 'ready'; key: number }
  | { type: 'change'; key: number; path: string }
  | { type: 'error'; key: number; message: string }
  | { type: 'closed'; key: number };

export interface WatchListener {
  change(absPath: string): void;
  /** The watch failed; `gone` when the thread died with every watch (`sync` sets them up again). */
  error(message: string, gone: boolean): void;
}

export interface ThreadWatch {
  /** Resolves once the folders were read: changes from then on are seen. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export class WatchThread {
  private worker: Worker | undefined;
  private nextKey = 1;
  private readonly listeners = new Map<number, WatchListener & { ready: () => void; closed?: () => void }>();

  watch(spec: Omit<Extract<WatchRequest, { type: 'watch' }>, 'type' | 'key'>, listener: WatchListener): ThreadWatch {
    const key = this.nextKey++;
    let ready!: () => void;
    const readyP = new Promise<void>((resolve) => (ready = resolve));
    this.listeners.set(key, { ...listener, ready });
    this.ensureWorker().postMessage({ type: 'watch', key, ...spec } satisfies WatchRequest);
    return {
      ready: readyP,
      close: () => this.unwatch(key),
    };
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.listeners.clear();
    if (worker) await worker.terminate();
  }

  private unwatch(key: number): Promise<void> {
    const l = this.listeners.get(key);
    if (!l || !this.worker) {
      this.listeners.delete(key);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      l.closed = resolve;
      this.worker!.postMessage({ type: 'unwatch', key } satisfies WatchRequest);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // dist/watch-worker.js beside the bundle, or watchWorker.ts through tsx (unit tests).
    const worker = startWorker(workerCode(__dirname, 'watch-worker.js', 'watchWorker.ts'));
    // Never what keeps the engine's process alive.
    worker.unref();
    worker.on('message', (n: WatchNotice) => {
      const l = this.listeners.get(n.key);
      if (!l) return;
      if (n.type === 'change') l.change(n.path);
      else if (n.type === 'ready') l.ready();
      else if (n.type === 'error') l.error(n.message, false);
      else {
        this.listeners.delete(n.key);
        l.closed?.();
      }
    });
    const died = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const all = [...this.listeners.values()];
      this.listeners.clear();
      for (const l of all) {
        l.ready();
        l.closed?.();
        l.error(why, true);
      }
    };
    worker.on('error', (err) => died(`the file-watching thread failed: ${err.message}`));
    worker.on('exit', (code) => died(`the file-watching thread exited (code ${code})`));
    this.worker = worker;
    return worker;
  }
}
