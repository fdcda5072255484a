// One attempt as the engine sees it, wherever its process is spawned: in a helper (its pid arrives
// later) or in this process after a fallback. It keeps the RunningAttempt shape of in-process
// launching, so the engine does not know the difference.
import type { AttemptResult, RunningAttempt } from './attemptProcess';
import { KILL_GRACE_MS } from './attemptProcess';
import type { ItemDefinition } from '../intake/items';
import { newAttemptMarker } from './leftoverProcesses';
import type { OutputTarget } from '../features/output/outputFiles';
import type { Helper } from './helperProcess';

/** Who ends an attempt: the launcher, which knows where it runs. */
export interface AttemptOwner {
  terminate(a: HelperAttempt, graceMs: number): void;
}

export class HelperAttempt implements RunningAttempt {
  pid: number | null = null;
  readonly done: Promise<AttemptResult>;
  /** Set when the attempt was launched in-process (fallback). */
  inProcess: RunningAttempt | undefined;
  /** The helper it was sent to: the one that can terminate it. */
  helper: Helper | undefined;
  finished = false;
  private resolve!: (result: AttemptResult) => void;

  constructor(
    readonly attemptId: number,
    readonly item: ItemDefinition,
    readonly attempt: number,
    private readonly owner: AttemptOwner,
    readonly output: OutputTarget | undefined,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  readonly startedAt = Date.now();
  /** Its ENGINE_MONITOR_ATTEMPT token, and when it was made in this process's clock (for a sweep). */
  readonly marker = newAttemptMarker();
  readonly markedAt = performance.now();

  terminate(graceMs = KILL_GRACE_MS): void {
    this.owner.terminate(this, graceMs);
  }

  finish(result: AttemptResult): void {
    if (this.finished) return;
    this.finished = true;
    this.resolve(result);
  }
}
