// The checkpoint builder (dist/checkpoint-worker.js): builds the engine's next snapshot from the
// last one and the journal, with its own copy of the database, then exits so that copy's memory
// goes with it. See checkpoint.ts and Store.snapshotInBackground.
//
// It runs as a process of its own, started by the launch helper (`node checkpoint-worker.js
// <job as JSON>`, answering over the IPC channel), or, when no helper is running, as a worker
// thread of the engine host (workerData in, parentPort out). A process is preferred: a thread
// shares the engine's address space and V8's background threads, and while a long checkpoint ran
// on one the engine's event loop still stalled (docs/PERFORMANCE.md).
import { readdirSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import path from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { CheckpointBuilt, CheckpointJob, CheckpointMessage } from './checkpoint';
import { JOURNAL_FILE } from './files';
import { replayJournal } from './journal';
import { applyPragmas, migrate, readJournalSeq, writeJournalSeq } from './schema';
import { loadVerified, writeSnapshotFiles } from './snapshotFiles';
import { loadSqlJs, SqlDatabase } from './sqlJs';

if (isMainThread) {
  runAsProcess();
} else {
  lowerPriority(threadIds('thread'));
  const send = (m: CheckpointMessage) => parentPort!.postMessage(m);
  build(workerData as CheckpointJob).then(send, () => undefined);
}

function runAsProcess(): void {
  const send = process.send?.bind(process);
  if (!send) {
    console.error('checkpoint-worker: run by the engine (its launch helper), with an IPC channel');
    process.exit(2);
  }
  // The helper went away (it ends us when the engine does): nobody would install the result.
  process.on('disconnect', () => process.exit(1));
  lowerPriority(threadIds('process'));
  let job: CheckpointJob;
  try {
    job = JSON.parse(process.argv[process.argv.length - 1]) as CheckpointJob;
  } catch {
    send({ ok: false, error: 'the checkpoint process got no job' } satisfies CheckpointMessage, () => process.exit(2));
    return;
  }
  void build(job).then((m) => send(m.ok ? { ...m, peakRss: process.resourceUsage().maxRSS * 1024 } : m, () => process.exit(0)));
}

function build(job: CheckpointJob): Promise<CheckpointMessage> {
  return buildCheckpoint(job).then(
    (built): CheckpointMessage => ({ ok: true, ...built }),
    (err: unknown): CheckpointMessage => ({ ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
}

/**
 * Loads the last snapshot, replays engine.journal (every record up to `throughSeq`, which the engine
 * committed before rotating) and writes the result to `job.tmp` for the engine to install. Nothing
 * here touches the live database.
 */
async function buildCheckpoint(job: CheckpointJob): Promise<CheckpointBuilt> {
  const started = performance.now();
  const SQL = await loadSqlJs();
  const { db, verified } = loadVerified(SQL, job.dir);
  const sql = new SqlDatabase(db);
  try {
    if (!verified) {
      const check = String(db.exec('PRAGMA quick_check')[0]?.values[0]?.[0]);
      if (check !== 'ok') throw new Error(`the snapshot on disk fails its integrity check (${check})`);
    }
    applyPragmas(db);
    migrate(db);
    const { seq, appendable: complete } = replayJournal(path.join(job.dir, JOURNAL_FILE), sql, readJournalSeq(sql), []);
    if (!complete || seq !== job.throughSeq) {
      throw new Error(`the journal on disk ends at record ${seq}${complete ? '' : ' (with unreadable records)'}, not ${job.throughSeq}`);
    }
    writeJournalSeq(sql, job.throughSeq);
    const out = db.export();
    writeSnapshotFiles(job.tmp, out);
    return { bytes: out.length, ms: performance.now() - started };
  } finally {
    sql.close();
  }
}

/**
 * The Linux task ids to lower: this thread, or, for a process, every thread it has (V8's and
 * libuv's threads were started before any of our code ran and keep the nice value they had).
 */
function threadIds(mode: 'thread' | 'process'): number[] {
  if (process.platform !== 'linux') return [];
  try {
    if (mode === 'thread') return [Number(readlinkSync('/proc/thread-self').split('/').pop())];
    return readdirSync('/proc/self/task').map(Number);
  } catch {
    return [];
  }
}

/**
 * On Linux a thread is a task with its own nice value, and the engine host's threads share one
 * scheduling group (one per session with autogroup; the launch helper and so this process are
 * in it too): at normal priority a seconds-long checkpoint took CPU from the engine's main thread
 * on a busy 2-core machine. At 19 it runs when the main thread does not need the core. Elsewhere
 * a process is lowered as a whole, and a thread runs at normal priority.
 */
function lowerPriority(tids: number[]): void {
  try {
    if (process.platform !== 'linux') {
      if (isMainThread) setPriority(19);
      return;
    }
    for (const tid of tids) setPriority(tid, 19);
  } catch {
    // not permitted: normal priority
  }
}
