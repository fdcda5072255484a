// Which names in a folder changed since the last look, so a poll of a queue folder holding 10,000
// unchanged files does not stat (and look up) every one of them each second.
//
// fs.watch (inotify on Linux) reports a file created, renamed or written in place. Whenever the
// answer could be incomplete, the next take() answers 'all' and the caller scans every file as
// before: no watcher yet or it failed (file systems without notification, watch limits), the folder
// itself replaced (the watch follows the old inode), and, as a safety net against a lost event,
// once every `fullScanEveryMs`.
//
// Each change also calls `onChange`, so that the engine polls at once instead of at its next
// interval (a file renamed into an idle engine's queue folder starts within milliseconds). Node's
// own fs.watch is enough here: the queue folder is one flat folder (no recursion), a script
// enqueues with one rename (one event), and an editor saving through a rename is one more event
// for the same name. What it can miss (an overflowed inotify queue, a network file system) the
// poll at the interval still finds.
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

export class FolderChanges {
  private watcher: FSWatcher | null = null;
  /**
   * The watched folder's real path and identity (inode and birth time: a folder deleted and made
   * again often gets the same inode back): a different one means it was replaced.
   */
  private watched: { path: string; identity: string } | null = null;
  private changed: Set<string> | 'all' = 'all';
  private lastFullAt = 0;

  constructor(
    private readonly fullScanEveryMs = 60_000,
    /** Called on every change the watch reports, after it is noted for the next take(). */
    private readonly onChange?: () => void,
  ) {}

  /**
   * The names changed since the previous call, or 'all'. `realPath` is the folder as it resolves
   * now; the watch starts (or restarts) before the caller reads it, so nothing falls in between.
   * `all`: the caller looks at every file this time whatever is known.
   */
  async take(realPath: string, all = false): Promise<Set<string> | 'all'> {
    const info = await stat(realPath);
    const identity = `${info.ino}:${info.birthtimeMs}`;
    if (!this.watched || this.watched.path !== realPath || this.watched.identity !== identity) {
      this.close();
      this.startWatching(realPath, identity);
    }
    const now = Date.now();
    let result = this.changed;
    if (all || !this.watcher || now - this.lastFullAt >= this.fullScanEveryMs) result = 'all';
    if (result === 'all') this.lastFullAt = now;
    this.changed = new Set();
    return result;
  }

  /** Forget what is known: the next take() answers 'all' (the folder is gone or unreadable). */
  reset(): void {
    this.close();
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    this.watched = null;
    this.changed = 'all';
  }

  private startWatching(realPath: string, identity: string): void {
    this.watched = { path: realPath, identity };
    this.changed = 'all';
    const own = path.basename(realPath);
    try {
      // Not persistent: a watch must not keep a process alive that has nothing else to do.
      const watcher = watch(realPath, { persistent: false }, (_event, name) => {
        if (this.changed !== 'all') {
          // No name, or the folder's own (it was deleted or moved): only a full scan can tell.
          if (name === null || name.toString() === own) this.changed = 'all';
          else this.changed.add(name.toString());
        }
        this.onChange?.();
      });
      watcher.on('error', () => {
        if (this.watcher === watcher) this.close();
      });
      this.watcher = watcher;
    } catch {
      // No notification here: every poll scans every file, as without a watcher.
      this.watcher = null;
    }
  }
}
