// The checkpoint worker (dist/checkpoint-worker.js): builds the engine's next snapshot from the
// last one and the journal, on its own thread and with its own copy of the database, then exits so
// that copy's memory goes with it. See Store.snapshotInBackground.
import { parentPort, workerData } from 'node:worker_threads';
import { Store, type CheckpointJob, type CheckpointMessage } from './store';

const send = (m: CheckpointMessage) => parentPort!.postMessage(m);
Store.buildCheckpoint(workerData as CheckpointJob).then(
  (built) => send({ ok: true, ...built }),
  (err: unknown) => send({ ok: false, error: err instanceof Error ? err.message : String(err) }),
);
