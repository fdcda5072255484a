// The engine's side of captured output: where it lives, the total cap, and
// pruning. The launch helper writes the files (outputCapture.ts); this decides when they go.
//
// - Total cap (engineMonitor.output.maxTotalMB): the kept output of finished attempts (the sum of
//   their output_bytes) stays under it; the oldest attempts' output is deleted first. A running
//   attempt counts once it has finished (until then it is bounded by the per-attempt cap).
// - Log retention: an attempt's output is deleted once no log entry of its item remains (the
//   retention rule that removes an item's history removes its output with it).
// Either way the attempt row gets output_pruned = 1 (journaled), and the output endpoint answers 410.
// Files are deleted asynchronously, off the event loop's critical path.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { readdir, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  DEFAULT_OUTPUT_MAX_BYTES,
  headFile,
  headIndexFile,
  isPackName,
  parseTails,
  segmentFile,
  segmentIndexFile,
  singleFile,
  tailsFile,
  type OutputTarget,
} from './outputFiles';
import { retireOutputPack } from './outputPacks';
import type { StoreBackend } from '../../store/backend';

export const DEFAULT_OUTPUT_MAX_TOTAL_MB = 1024;
/** Attempts whose output one pruning step deletes at most; the next step follows on a later turn. */
const PRUNE_BATCH = 200;
/**
 * Attempts whose files are being deleted at once. Log retention forgets up to 1,000 items a step,
 * ten steps a second, and each attempt is five unlinks: queued all at once they were tens of
 * thousands of requests waiting for libuv's four threads, each with its promise and, mostly, its
 * ENOENT error, which raised the engine host's peak memory (docs/PERFORMANCE.md). As many as the
 * thread pool has threads keeps it busy.
 */
const REMOVERS = 4;

export interface OutputOptions {
  /** null: no storage folder (memory only): output goes to a temporary folder removed at close. */
  storageDir: string | null;
  outputMaxBytes?: number;
  outputMaxTotalMB?: number;
  captureOutput?: boolean;
}

export class OutputRetention {
  readonly dir: string;
  private readonly temporary: boolean;
  readonly maxBytes: number;
  private readonly maxTotalBytes: number;
  private readonly capture: boolean;
  /** Sum of output_bytes of finished attempts whose output is still kept. */
  private total = 0;
  private pruning = false;
  private closed = false;
  /** The removers at work (at most REMOVERS), each taking attempts from `toRemove` until it is empty. */
  private readonly deleting = new Set<Promise<void>>();
  /** Attempts whose files are still to be deleted, oldest first, from `removeNext` on. */
  private toRemove: number[] = [];
  private removeNext = 0;

  constructor(
    private readonly store: StoreBackend,
    options: OutputOptions,
  ) {
    this.maxBytes = options.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES;
    this.capture = options.captureOutput !== false;
    this.maxTotalBytes = (options.outputMaxTotalMB ?? DEFAULT_OUTPUT_MAX_TOTAL_MB) * 1024 * 1024;
    if (options.storageDir) {
      this.dir = path.join(options.storageDir, 'output');
      this.temporary = false;
      mkdirSync(this.dir, { recursive: true });
    } else {
      this.dir = mkdtempSync(path.join(tmpdir(), 'engine-monitor-output-'));
      this.temporary = true;
    }
    this.total = store.get<{ n: number | null }>('SELECT SUM(output_bytes) AS n FROM attempts WHERE output_pruned = 0')?.n ?? 0;
  }

  /** Where the attempt's output goes; undefined when capture is off. */
  target(attemptId: number): OutputTarget | undefined {
    return this.capture ? { dir: this.dir, attemptId, maxBytes: this.maxBytes } : undefined;
  }

  /**
   * An attempt's output is complete at `bytes` (null: none was captured). The engine writes the
   * size into the attempt's row with the rest of its end (attempt_end), in the same batch.
   */
  recordFinished(bytes: number | null): void {
    if (bytes === null) return;
    this.total += bytes;
  }

  /** Deletes the oldest output until the total is under the cap; a step per turn of the event loop. */
  enforceTotal(): void {
    if (this.pruning || this.closed || this.total <= this.maxTotalBytes) return;
    this.pruning = true;
    setImmediate(() => {
      this.pruning = false;
      if (this.closed) return;
      const rows = this.store.all<{ id: number; output_bytes: number }>(
        'SELECT id, output_bytes FROM attempts WHERE output_pruned = 0 AND output_bytes IS NOT NULL ORDER BY id LIMIT ?',
        [PRUNE_BATCH],
      );
      const victims: typeof rows = [];
      let total = this.total;
      for (const r of rows) {
        if (total <= this.maxTotalBytes) break;
        victims.push(r);
        total -= r.output_bytes;
      }
      this.prune(victims);
      this.store.commit('background');
      if (victims.length > 0) this.enforceTotal();
    });
  }

  /** Log retention removed every entry of these items: their attempts' output goes too. */
  itemsForgotten(itemIds: string[]): void {
    if (this.closed || itemIds.length === 0) return;
    const victims: { id: number; output_bytes: number | null }[] = [];
    for (const itemId of itemIds) {
      victims.push(
        ...this.store.all<{ id: number; output_bytes: number | null }>(
          "SELECT id, output_bytes FROM attempts WHERE item_id = ? AND output_pruned = 0 AND outcome != 'running'",
          [itemId],
        ),
      );
    }
    this.prune(victims);
  }

  private prune(rows: { id: number; output_bytes: number | null }[]): void {
    if (rows.length === 0) return;
    this.store.batch(() => {
      for (const r of rows) {
        this.store.mutate('attempt_output_pruned', [r.id]);
        this.total -= r.output_bytes ?? 0;
      }
    });
    for (const r of rows) this.toRemove.push(r.id);
    while (this.deleting.size < REMOVERS && this.removeNext < this.toRemove.length) {
      const done = this.removeQueued().finally(() => this.deleting.delete(done));
      this.deleting.add(done);
    }
  }

  private async removeQueued(): Promise<void> {
    while (this.removeNext < this.toRemove.length) {
      const id = this.toRemove[this.removeNext++];
      if (this.removeNext === this.toRemove.length) {
        this.toRemove = [];
        this.removeNext = 0;
      }
      await this.removeFiles(id);
    }
  }

  private async removeFiles(id: number): Promise<void> {
    const { dir } = this;
    const gone = (file: string) => unlink(file).catch(() => undefined);
    try {
      const tails = parseTails(await readFile(tailsFile(dir, id), 'latin1'));
      if (tails) for (let k = tails.first; k <= tails.last; k++) await Promise.all([gone(segmentFile(dir, id, k)), gone(segmentIndexFile(dir, id, k))]);
    } catch {
      // no tail segments
    }
    await Promise.all([gone(tailsFile(dir, id)), gone(headFile(dir, id)), gone(headIndexFile(dir, id)), gone(singleFile(dir, id))]);
  }

  /**
   * Before the first launch: files of attempt ids this database never handed out (left by a
   * database that was lost and started again empty, so its ids start again at 1) would otherwise
   * be mixed into the new attempts' output.
   */
  async removeStrays(lastAttemptId: number): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    const stray = names.filter((n) => {
      // A pack's own name, left by a launch helper that was killed: its attempts' links keep the bytes.
      if (isPackName(n)) return true;
      const id = /^(\d+)\./.exec(n)?.[1];
      return id !== undefined && Number(id) > lastAttemptId;
    });
    await Promise.all(stray.map((n) => unlink(path.join(this.dir, n)).catch(() => undefined)));
  }

  /** At engine shutdown: waits for deletions under way; a temporary folder is removed. */
  async close(): Promise<void> {
    this.closed = true;
    // Attempts launched in this process (no launch helper) appended to a pack here.
    retireOutputPack(this.dir);
    await Promise.all(this.deleting);
    if (this.temporary) await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
