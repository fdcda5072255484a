// The store's checkpoints, run in processes the launch helpers start (StoreOptions.runCheckpoint):
// a process of its own loads the snapshot outside the engine host's memory. One asked for while no
// helper is ready waits for the first that is, or runs on a worker thread once none will. Waiting
// is worth it: a thread of the engine host loads the whole snapshot into the host's own memory
// (docs/PERFORMANCE.md, "Memory").
import { checkpointProcessArgs, startCheckpointThread, type CheckpointJob, type CheckpointMessage, type CheckpointRun } from '../store';
import type { Helper } from './helperProcess';
import { post } from './outbox';
import type { FromLaunchHelper } from './protocol';

/** A checkpoint waiting for a helper: it starts in the first that becomes ready, or on a thread. */
class WaitingCheckpoint implements CheckpointRun {
  readonly done: Promise<CheckpointMessage>;
  private resolve!: (m: CheckpointMessage) => void;
  private run: CheckpointRun | undefined;
  private cancelled = false;

  constructor(
    readonly job: CheckpointJob,
    private readonly forget: (w: WaitingCheckpoint) => void,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  get where(): string {
    return this.run?.where ?? 'nowhere yet (waiting for a launch helper)';
  }

  /** Starts it in `run`'s builder; its answer becomes this one's. */
  startIn(run: CheckpointRun): void {
    this.run = run;
    void run.done.then((m) => this.resolve(m));
  }

  cancel(): void {
    if (this.run) return this.run.cancel();
    if (this.cancelled) return;
    this.cancelled = true;
    this.forget(this);
    this.resolve({ ok: false, error: 'cancelled before it started' });
  }
}

export class HelperCheckpoints {
  private readonly waiting = new Set<WaitingCheckpoint>();
  private nextId = 0;

  /** Some checkpoint waits for a helper. */
  get anyWaiting(): boolean {
    return this.waiting.size > 0;
  }

  /** A checkpoint that starts in the first helper ready (startWaitingIn) or on a thread (startWaitingOnThreads). */
  waitForHelper(job: CheckpointJob): CheckpointRun {
    const w = new WaitingCheckpoint(job, (done) => this.waiting.delete(done));
    this.waiting.add(w);
    return w;
  }

  /** A checkpoint in a process the ready helper `h` starts. */
  runIn(h: Helper, job: CheckpointJob): CheckpointRun {
    const checkpointId = ++this.nextId;
    const args = checkpointProcessArgs(job);
    let where = 'a process started by the launch helper';
    const done = new Promise<CheckpointMessage>((resolve) => {
      h.checkpoints.set(checkpointId, (m, pid) => {
        if (pid !== null) where = `process ${pid}`;
        resolve(m);
      });
    });
    post(h, { type: 'checkpoint', checkpointId, args });
    return {
      get where() {
        return where;
      },
      done,
      cancel: () => {
        if (h.checkpoints.has(checkpointId) && h.child.connected) {
          post(h, { type: 'checkpoint_cancel', checkpointId });
        }
      },
    };
  }

  /** Helper `h` became ready: every waiting checkpoint starts in it. */
  startWaitingIn(h: Helper): void {
    for (const w of this.waiting) w.startIn(this.runIn(h, w.job));
    this.waiting.clear();
  }

  /** No helper will run the waiting checkpoints (in-process launching, shutdown): worker threads do. */
  startWaitingOnThreads(): void {
    for (const w of this.waiting) {
      let run: CheckpointRun;
      try {
        run = startCheckpointThread(w.job);
      } catch (err) {
        // No worker bundle: the store writes the snapshot from memory instead, and says why.
        run = { where: 'worker thread', done: Promise.resolve({ ok: false, error: (err as Error).message }), cancel: () => undefined };
      }
      w.startIn(run);
    }
    this.waiting.clear();
  }

  /** A helper's answer: the checkpoint it ran ended. */
  answered(h: Helper, m: Extract<FromLaunchHelper, { type: 'checkpointed' }>): void {
    const settle = h.checkpoints.get(m.checkpointId);
    h.checkpoints.delete(m.checkpointId);
    settle?.(m.message, m.pid);
  }

  /**
   * The helper exited: its checkpoint processes end with it (they exit when their IPC channel
   * closes), and the store falls back to a snapshot from memory for any that was still running.
   */
  helperExited(h: Helper, how: string): void {
    for (const settle of h.checkpoints.values()) settle({ ok: false, error: `the launch helper exited (${how})` }, null);
    h.checkpoints.clear();
  }
}
