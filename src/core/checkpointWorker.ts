// The checkpoint worker (dist/checkpoint-worker.js): builds the engine's next snapshot from the
// last one and the journal, on its own thread and with its own copy of the database, then exits so
// that copy's memory goes with it. See Store.snapshotInBackground.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Store, type CheckpointJob, type CheckpointMessage } from './store';

lowerPriority();
const send = (m: CheckpointMessage) => parentPort!.postMessage(m);
Store.buildCheckpoint(workerData as CheckpointJob).then(
  (built) => send({ ok: true, ...built }),
  (err: unknown) => send({ ok: false, error: err instanceof Error ? err.message : String(err) }),
);

/**
 * On Linux a thread is a task with its own nice value, and this thread shares the engine host's
 * scheduling group (one per session with autogroup): at normal priority a seconds-long checkpoint
 * took CPU from the main thread on a busy 2-core machine (event-loop stalls of 100-200 ms). At 19
 * it runs when the main thread does not need the core. Elsewhere it simply runs at normal priority.
 */
function lowerPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
  } catch {
    // no /proc, or not permitted: normal priority
  }
}
