// A checkpoint: the engine's periodic snapshot, built while the journal continues in
// engine.journal.next. It is built in one of three ways: exported from the live database (small
// databases: a few milliseconds of the event loop), in a process the launch helper starts, or on a
// worker thread of this process when no helper can. The last two load the snapshot on disk and
// replay engine.journal into it (checkpointWorker.ts). The store installs the result.
import { renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWorker, workerCode, type WorkerCode } from '../launching/workerCode';
import { fsyncDir, JOURNAL_FILE, JOURNAL_NEXT_FILE } from './files';
import { installSnapshot, removeSnapshotTemporary, writeSnapshotFilesInBackground } from './snapshotFiles';

/** What the store asks a checkpoint builder to build. */
export interface CheckpointJob {
  dir: string;
  /** The last journal record the new snapshot must hold (all of engine.journal). */
  throughSeq: number;
  /** Where to write it (and `<tmp>.sum`); the store renames it into place. */
  tmp: string;
}

export interface CheckpointBuilt {
  bytes: number;
  ms: number;
  /** A checkpoint process's peak RSS in bytes (its copy of the database): for the benchmark. */
  peakRss?: number;
}

export type CheckpointMessage = ({ ok: true } & CheckpointBuilt) | { ok: false; error: string };

/** A checkpoint being built somewhere off the main thread. */
export interface CheckpointRun {
  /** Where it runs, for the logs: "worker thread" or "process <pid>". */
  readonly where: string;
  /** Settles once, with the builder's answer or with why there is none (it died, it was cancelled). */
  readonly done: Promise<CheckpointMessage>;
  /** Stops the builder; `done` then settles with ok: false. Safe to call at any time. */
  cancel(): void;
}

export type CheckpointRunner = (job: CheckpointJob) => CheckpointRun | undefined;

/**
 * Below this size of the snapshot on disk, a checkpoint is an export of the live database: starting
 * a builder costs more CPU than the export does (docs/PERFORMANCE.md).
 */
export const DEFAULT_EXPORT_CHECKPOINT_MAX_BYTES = 2 << 20;

/** The checkpoint in flight: its builder, its job, and whether it got installed. */
export class Checkpoint {
  /** Resolves true once installed, false when it was abandoned or failed. */
  readonly done: Promise<boolean>;
  private resolveDone!: (installed: boolean) => void;
  private answered = false;

  constructor(
    readonly run: CheckpointRun,
    readonly job: CheckpointJob,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** Takes the builder's answer and stops the builder: false when an answer was taken already. */
  takeAnswer(): boolean {
    if (this.answered) return false;
    this.answered = true;
    this.run.cancel();
    return true;
  }

  /**
   * Renames the built snapshot into place. engine.journal is folded into it, so its continuation
   * becomes the journal; the store's open descriptor follows the file through the rename.
   */
  install(): void {
    const dir = this.job.dir;
    installSnapshot(dir, this.job.tmp);
    renameSync(path.join(dir, JOURNAL_NEXT_FILE), path.join(dir, JOURNAL_FILE));
    fsyncDir(dir);
  }

  /** Removes what the builder wrote: this checkpoint will not be installed. */
  discardFiles(): void {
    removeSnapshotTemporary(this.job.tmp);
  }

  end(installed: boolean): void {
    this.resolveDone(installed);
  }
}

/**
 * A small database's checkpoint: `bytes` exported from the live database, written, fdatasynced and
 * checksummed on the thread pool. `started` is when the export began, for the timing.
 */
export function writeExportedCheckpoint(job: CheckpointJob, bytes: Uint8Array, started: number): CheckpointRun {
  let cancelled = false;
  const done = writeSnapshotFilesInBackground(job.tmp, bytes).then(
    (): CheckpointMessage => (cancelled ? { ok: false, error: 'cancelled' } : { ok: true, bytes: bytes.length, ms: performance.now() - started }),
    (err: unknown): CheckpointMessage => ({ ok: false, error: `writing ${job.tmp} failed: ${(err as Error).message}` }),
  );
  return {
    where: 'the engine (exported from memory)',
    done,
    cancel: () => {
      cancelled = true;
    },
  };
}

/**
 * How a checkpoint process is started: `node <args…>`, where the last argument is the job as
 * JSON. The launch helper starts it (StoreOptions.runCheckpoint).
 */
export function checkpointProcessArgs(job: CheckpointJob): string[] {
  const code = checkpointBuilderCode();
  // The same small young generation as the worker thread's: the snapshot's read buffer dies young.
  const heap = '--max-semi-space-size=1';
  if (!code.fromSource) return [heap, code.file, JSON.stringify(job)];
  return [heap, '--require', createRequire(__filename).resolve('tsx/cjs'), code.file, JSON.stringify(job)];
}

/** The worker's heap: a small young generation, as the checkpoint's garbage (replayed journal records) is short-lived. */
const CHECKPOINT_WORKER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/** The checkpoint on a worker thread of this process: the fallback when no checkpoint process can be started. */
export function startCheckpointThread(job: CheckpointJob): CheckpointRun {
  const worker = startWorker(checkpointBuilderCode(), { workerData: job, resourceLimits: CHECKPOINT_WORKER_LIMITS });
  // A checkpoint never keeps the process alive: one cut short leaves only a temporary file.
  worker.unref();
  const done = new Promise<CheckpointMessage>((resolve) => {
    worker.once('message', resolve);
    worker.once('error', (err) => resolve({ ok: false, error: err.message }));
    worker.once('exit', (code) => resolve({ ok: false, error: `the worker exited with code ${code}` }));
  });
  return { where: 'worker thread', done, cancel: () => void worker.terminate() };
}

/**
 * Where the checkpoint builder's code is: dist/checkpoint-worker.js beside the bundle running this
 * code, or, when running from TypeScript sources (unit tests), checkpointWorker.ts, loaded through tsx.
 */
function checkpointBuilderCode(): WorkerCode {
  return workerCode(__dirname, 'checkpoint-worker.js', 'checkpointWorker.ts');
}
