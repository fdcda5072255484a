// The attempts this engine has under way: recorded and waiting for the disk, spawned, or cancelled
// and still exiting. An attempt's end is judged here (succeeded, retried later, failed for good)
// and recorded through transitions.ts; its process is the launcher's.
import type { AttemptProblem } from '../../shared/api';
import { KILL_GRACE_MS, resultWithoutProcess, type AttemptResult, type RunningAttempt } from '../launching/attemptProcess';
import type { AttemptLauncher } from '../launching';
import { itemFromRow, type ItemDefinition } from '../intake/items';
import type { AttemptOutputs } from '../features/output/attemptOutputs';
import type { ProblemMatching } from '../features/problems/problemMatching';
import { readHeld, type ItemRow } from '../reads/records';
import { describeFailure, launchEnd, outcomeDetails } from './attemptOutcome';
import type { Claimer } from './claimer';
import type { KernelContext } from './context';
import type { FinishedAttempt } from './monitoredEngine';
import type { AttemptRef } from './transitions';

export interface ActiveAttempt extends AttemptRef {
  /** Undefined while its journal records are on their way to the disk (not spawned yet). */
  run: RunningAttempt | undefined;
  /** Set when the user cancelled it: recorded as failed at once, never spawned if it was not yet. */
  cancelled?: boolean;
  /** Settles once the attempt's end is recorded (after its problem matcher has read the output). */
  recorded?: Promise<void>;
  /** Set by a feature that ended the process itself (a service not ready in time): the attempt's error, whatever the exit. */
  endError?: string;
  /** A ready service's attempt: it runs on, but no longer holds a concurrency slot. */
  ready?: boolean;
  /**
   * Whether the user holds its item, kept by hold and release while it runs, so the outcome need
   * not read it back. Undefined for attempts taken over from the database (interrupted, or
   * another engine's on a fleet), whose outcome reads it.
   */
  held?: boolean;
}

/**
 * How a feature records the end of its items' attempts, in the end's batch after the attempt's row
 * (transitions.attemptEnded): true when it took the attempt and recorded the item's next state.
 */
export type AttemptJudge = (a: ActiveAttempt, result: AttemptResult, how: { interrupted: boolean; details: Record<string, unknown>; held: () => boolean }) => boolean;

/** An attempt found running in the database that no process of this engine runs. */
export interface OrphanAttempt {
  id: number;
  attempt: number;
  startedAt: number;
  item: ItemDefinition;
}

export class Attempts {
  readonly active = new Map<number, ActiveAttempt>();
  /**
   * Cancelled attempts whose process has not exited yet (SIGTERM sent, SIGKILL after 5 s): no
   * longer running as far as the counters go, but still holding their concurrency slot.
   */
  readonly ending = new Map<number, ActiveAttempt>();
  /** Ready services among `active` (they hold no slot). */
  private readyServices = 0;
  /** A feature's judgement of how an attempt of its items ends (services); the first that takes it records the item's next state. */
  private readonly judges: AttemptJudge[] = [];
  /** onAttemptFinished's listeners (/metrics). */
  private readonly finishedListeners = new Set<(attempt: FinishedAttempt) => void>();
  private claimer!: Claimer;

  constructor(
    private readonly k: KernelContext,
    private readonly launcher: AttemptLauncher,
    private readonly outputs: AttemptOutputs,
    private readonly problems: ProblemMatching,
  ) {}

  /** The claimer is built after the attempts it claims for. */
  useClaimer(claimer: Claimer): void {
    this.claimer = claimer;
  }

  /**
   * Concurrency slots taken: its attempts and cancelled ones that have not exited yet, but not
   * ready services, which run until stopped and would otherwise starve what depends on them.
   */
  get busySlots(): number {
    return this.active.size + this.ending.size - this.readyServices;
  }

  /** A service's attempt became ready: it gives up its slot. */
  markReady(a: ActiveAttempt): void {
    if (a.ready || !this.active.has(a.attemptId)) return;
    a.ready = true;
    this.readyServices++;
  }

  /** A feature judges the ends of its items' attempts (see AttemptJudge). */
  judgeWith(judge: AttemptJudge): void {
    this.judges.push(judge);
  }

  /** It leaves `active`: a ready service's slot is counted again only if it is still ending. */
  private leave(a: ActiveAttempt): void {
    this.active.delete(a.attemptId);
    if (!a.ready) return;
    a.ready = false;
    this.readyServices--;
  }

  /** Every attempt that still has, or will have, a process. */
  all(): ActiveAttempt[] {
    return [...this.active.values(), ...this.ending.values()];
  }

  /** True while a cancelled attempt of the item still has a process (until it exits). */
  isEnding(itemId: string): boolean {
    for (const a of this.ending.values()) if (a.item.id === itemId) return true;
    return false;
  }

  /** The running attempt of an item, if this engine runs one. */
  of(itemId: string): ActiveAttempt | undefined {
    for (const a of this.active.values()) if (a.item.id === itemId) return a;
    return undefined;
  }

  /** The running attempt of a held or released item, if any, learns it (read when it ends). */
  setHeld(itemId: string, held: boolean): void {
    for (const a of this.active.values()) if (a.item.id === itemId) a.held = held;
  }

  /** Records a due item's next attempt (numbered by the claimer) in the dispatch round's batch. */
  start(row: ItemRow, now: number): ActiveAttempt {
    const item = itemFromRow(row.definition, row);
    const attempt = row.attempts + 1;
    const attemptId = this.claimer.insertAttempt(row.id, attempt, now);
    const a: ActiveAttempt = { attemptId, item, attempt, startedAt: now, run: undefined, held: row.held === 1 };
    this.k.transitions.attemptStarted(row, a);
    this.active.set(attemptId, a);
    return a;
  }

  spawn(a: ActiveAttempt): void {
    const run = this.launcher.launch(a.attemptId, a.item, a.attempt, this.outputs.target(a.attemptId));
    a.run = run;
    this.k.hooks.emit('attemptSpawned', a, run);
    a.recorded = run.done.then(async (result) => {
      // Before the outcome is recorded, so the attempt's log entry and its problems arrive together.
      const problems = await this.problems.problems(a, result);
      if (a.cancelled) {
        this.ending.delete(a.attemptId);
        if (!this.k.isClosed()) {
          this.k.transitions.cancelledAttemptExited(a, result, problems);
          this.k.hooks.emit('attemptEnded', a.attemptId, result, a.item.id);
        }
        this.k.scheduleDispatch();
        return;
      }
      if (this.k.isClosed()) return; // shutdown left it recorded as running: interrupted at next start
      this.claimer.recordOutcome(a, result, problems);
      // The dispatch right after journals this outcome together with the next launches: one
      // fsync for everything that finished in this turn of the event loop and what replaces it.
      this.k.scheduleDispatch();
    });
  }

  /** An attempt that could not be launched (storage failed before its records were on disk). */
  notLaunched(a: ActiveAttempt, why: string): void {
    this.finish(a, resultWithoutProcess(a.startedAt, why));
  }

  /** An attempt that was running when its engine stopped: failed with `why`, retried under the usual rules. */
  interrupted(o: OrphanAttempt, why: string): void {
    const a: ActiveAttempt = { attemptId: o.id, item: o.item, attempt: o.attempt, startedAt: o.startedAt, run: undefined };
    this.finish(a, resultWithoutProcess(o.startedAt, why), true);
  }

  /** Records how an attempt ended and what becomes of its item. */
  finish(a: ActiveAttempt, ended: AttemptResult, interrupted = false, problems: AttemptProblem[] | null = null): void {
    const { store, transitions } = this.k;
    const result = a.endError === undefined ? ended : { ...ended, succeeded: false, error: a.endError };
    this.leave(a);
    const end = launchEnd(result);
    // On a store other engines share, another may hold or release the item meanwhile: its row says.
    const held = () => (this.claimer.shared || a.held === undefined ? readHeld(store, a.item.id) : a.held);
    store.batch(() => {
      transitions.attemptEnded(a, result, end.outcome, problems);
      const details: Record<string, unknown> = outcomeDetails(a.item, a.attempt, result);
      // For the editor: whether GET /items/{id} has problems worth fetching for this attempt.
      if (problems) details.problems = problems.length;
      const now = result.finishedAt;
      if (this.judges.some((judge) => judge(a, result, { interrupted, details, held }))) return;
      if (result.succeeded) return transitions.launched(a, now, held, end.durationMs, details);
      const why = describeFailure(result);
      transitions.attemptFailed(a, why, interrupted, details);
      if (a.attempt >= a.item.maxAttempts) transitions.failedForGood(a, why, now, held, details);
      else transitions.retryLater(a, why, now);
    });
    transitions.attemptOver(a, end);
    this.k.hooks.emit('attemptEnded', a.attemptId, result, a.item.id);
    this.finished({ itemId: a.item.id, attempt: a.attempt, succeeded: result.succeeded, durationMs: end.durationMs, resources: result.resources ?? null });
    this.k.events.emit({ type: 'stats' });
  }

  /** The user cancelled the item whose attempt this is: it no longer counts as running. Call in the cancel's batch. */
  cancel(a: ActiveAttempt): void {
    a.cancelled = true;
    this.leave(a);
  }

  /** After the cancel is recorded: a spawned process is ended (SIGTERM, SIGKILL after 5 s) and holds its slot until it exits. */
  afterCancel(a: ActiveAttempt, now: number): void {
    this.finished({ itemId: a.item.id, attempt: a.attempt, succeeded: false, durationMs: now - a.startedAt });
    if (!a.run) return;
    this.ending.set(a.attemptId, a);
    a.run.terminate(KILL_GRACE_MS);
  }

  /**
   * At shutdown: the attempts `which` selects may finish for up to `graceMs`; what is left then is
   * ended (SIGTERM, SIGKILL after 1 s) and stays recorded as running, interrupted at the next start.
   */
  async endForShutdown(graceMs: number, which: (a: ActiveAttempt) => boolean): Promise<void> {
    const attempts = this.all().filter(which);
    if (attempts.length === 0) return;
    const all = Promise.all(attempts.flatMap((a): Promise<unknown>[] => (a.recorded ? [a.recorded] : a.run ? [a.run.done] : [])));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    // Let the exit handlers record the outcomes that just arrived.
    await new Promise((r) => setImmediate(r));
    for (const a of attempts) a.run?.terminate(1000);
  }

  onFinished(listener: (attempt: FinishedAttempt) => void): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
  }

  /** Tells onAttemptFinished's listeners; one that throws is reported and stops neither the others nor the engine. */
  private finished(attempt: FinishedAttempt): void {
    for (const listener of this.finishedListeners) {
      try {
        listener(attempt);
      } catch (err) {
        console.error('engine attempt listener failed:', err);
      }
    }
  }
}
