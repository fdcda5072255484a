// Helpers shared by the store's unit tests (store*.test.ts): real stores on a real disk.
import { cpSync } from 'node:fs';
import { Store, type StoreNote, type StoreOptions } from '../../../src/core/store';
import { TempWorkspace } from './workspace';

/** Counts the synchronous fdatasyncs the store makes (it calls them through the fs module) until restored. */
export function countSyncFdatasyncs(): { readonly calls: number; restore: () => void } {
  const fs = require('node:fs') as typeof import('node:fs');
  const original = fs.fdatasyncSync;
  let calls = 0;
  fs.fdatasyncSync = (fd: number) => {
    calls++;
    original(fd);
  };
  return {
    get calls() {
      return calls;
    },
    restore: () => {
      fs.fdatasyncSync = original;
    },
  };
}

/** Opens a store (`null`: in memory), runs `fn` on it and closes it, whether `fn` throws or not. */
export async function withStore<T>(storageDir: string | null, fn: (store: Store) => T | Promise<T>): Promise<T> {
  const { store } = await Store.open({ storageDir });
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

/** Records when the engine's persist tick starts each background snapshot. */
export function recordSnapshotStarts(store: Store): number[] {
  const started: number[] = [];
  const snapshotInBackground = store.snapshotInBackground.bind(store);
  store.snapshotInBackground = () => {
    started.push(Date.now());
    return snapshotInBackground();
  };
  return started;
}


/**
 * Copies a live storage folder as a crash at this moment would leave it, half-written checkpoints
 * included. A replaced snapshot being deleted in the background (engine.sqlite.tmp-*.old) is left
 * out: it can vanish between cpSync's readdir and its lstat, and a start removes it unread.
 */
export function copyAsCrashed(from: string, to: string): void {
  cpSync(from, to, { recursive: true, filter: (src) => !src.endsWith('.old') });
}

/** Log entries through the engine's own journaled statements. */
export function addLogs(store: Store, from: number, count: number): void {
  store.batch(() => {
    for (let id = from; id < from + count; id++) {
      const message = `entry ${id} exit code ${id % 7}`;
      store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', 3, message, `item-${id % 13}`, JSON.stringify({ n: id })]);
      store.mutate('log_fts_insert', [id, message]);
    }
  });
}

export function dump(store: Store): unknown {
  return {
    logs: store.rows('SELECT id, ts, action, level, message, item_id, details FROM logs ORDER BY id'),
    fts: store.rows("SELECT docid FROM logs_fts WHERE logs_fts MATCH 'exit' ORDER BY docid"),
    meta: store.rows("SELECT key, value FROM meta WHERE key <> 'journal_seq' ORDER BY key"),
  };
}

/** Closes every store in `open` and empties it; one a test closed itself is passed over. */
export function closeStores(open: Store[]): void {
  for (const s of open.splice(0)) {
    try {
      s.close();
    } catch {
      // closed by the test
    }
  }
}

/**
 * The checkpoint tests' fixture: a fresh temporary workspace per test, and every store a test opens
 * through `open` closed after it. Call inside a `describe`; it registers the hooks.
 */
export function checkpointStores(): {
  readonly ws: TempWorkspace;
  open(dir?: string, notes?: StoreNote[], options?: Partial<StoreOptions>): Promise<Store>;
  /** Closes a store the test opened its own way after the test, with the rest. */
  track(store: Store): Store;
} {
  let ws: TempWorkspace | undefined;
  const open: Store[] = [];
  beforeEach(() => (ws = new TempWorkspace('engine-ckpt-')));
  afterEach(() => {
    closeStores(open);
    ws?.dispose();
  });
  const workspace = (): TempWorkspace => {
    if (!ws) throw new Error('checkpointStores(): the workspace exists only while a test runs');
    return ws;
  };
  return {
    get ws() {
      return workspace();
    },
    async open(dir = workspace().storage, notes: StoreNote[] = [], options: Partial<StoreOptions> = {}) {
      // These tests are about the builder off the main thread, which a small database skips.
      const { store } = await Store.open({ storageDir: dir, onNote: (n) => notes.push(n), exportCheckpointMaxBytes: 0, ...options });
      open.push(store);
      return store;
    },
    track(store) {
      open.push(store);
      return store;
    },
  };
}
