// The launch loop. A dispatch round runs once per turn of the event loop however often it was
// asked for (an outcome, a poll, a control request, the due timer): it takes as many due items as
// there are free slots through the claimer, records their attempts, and spawns them once the
// store has those records on disk, so that no process runs that a crash could leave unrecorded.
import type { ItemRow } from '../reads/records';
import type { ActiveAttempt, Attempts } from './attempts';
import type { Claimer } from './claimer';
import type { KernelContext } from './context';
import type { EngineMode } from './engineOptions';

export interface DispatchState {
  mode: EngineMode;
  /** Storage came back no longer this engine's: nothing more is launched. */
  storageLost: boolean;
}

export class Dispatcher {
  private dueTimer: NodeJS.Timeout | undefined;
  private queued = false;
  /** Launch rounds waiting for their journal records to reach the disk. */
  readonly launching = new Set<Promise<void>>();

  constructor(
    private readonly k: KernelContext,
    private readonly attempts: Attempts,
    private readonly claimer: Claimer,
    private readonly state: () => DispatchState,
  ) {}

  schedule(): void {
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      this.dispatch();
    });
  }

  /** No due timer until the next round: the engine stops launching. */
  stopTimer(): void {
    clearTimeout(this.dueTimer);
  }

  private dispatch(): void {
    clearTimeout(this.dueTimer);
    const { store, options } = this.k;
    if (this.k.isClosed()) return;
    const { mode, storageLost } = this.state();
    if (mode !== 'running') {
      if (store.hasPending) store.commit();
      return;
    }
    // Every attempt is journaled before its process is spawned; if storage is failing we cannot
    // keep that promise, so launching waits until it persists again.
    if (store.lastError !== null && !store.commit()) return;
    // That commit may be the one that finds storage back, and no longer this engine's (a poll's
    // writes now wait for this round): the state is read again after it.
    if (storageLost || this.state().storageLost) return;
    const free = options.concurrency - this.attempts.busySlots;
    const now = Date.now();
    if (free > 0) {
      const round = this.claimer.claim(free, now, (rows) => this.record(rows, now));
      if (round?.committed) for (const s of round.starts) if (!s.cancelled) this.attempts.spawn(s);
      if (round && !round.committed) this.launchWhenDurable(round.starts);
    }
    if (this.attempts.busySlots < options.concurrency) {
      const delay = this.claimer.nextLook(now);
      if (delay !== null) this.dueTimer = setTimeout(() => this.schedule(), delay);
    }
    // Outcomes with no launch to share a commit with: written now (a kill -9 cannot lose them),
    // synced on the thread pool.
    if (store.hasPending) store.commit('background');
  }

  /** The attempts of a dispatch round, in its batch; the launch counter is written once for the round. */
  private record(rows: ItemRow[], now: number): ActiveAttempt[] {
    const starts = rows.map((row) => this.attempts.start(row, now));
    if (starts.length > 0) this.k.transitions.launchRoundRecorded();
    return starts;
  }

  /**
   * Spawns attempts once their journal records are on disk. The wait does not hold the event loop:
   * one fdatasync on the thread pool for every launch of this round and any that join it meanwhile.
   */
  private launchWhenDurable(starts: ActiveAttempt[]): void {
    const launching = this.k.store.commitDurably().then((durable) => {
      this.launching.delete(launching);
      // A shutdown that got this far leaves them recorded as running: interrupted at the next start.
      if (this.k.isClosed()) return;
      if (!durable || this.state().storageLost) {
        // Not journaled, so not launched: each attempt fails without a process and is retried
        // with backoff like any failure, once storage works again.
        for (const s of starts) if (!s.cancelled) this.attempts.notLaunched(s, 'storage unavailable; not launched');
        return;
      }
      // A cancel that came while the records were on their way was recorded already: no process.
      for (const s of starts) if (!s.cancelled) this.attempts.spawn(s);
    });
    this.launching.add(launching);
  }
}
