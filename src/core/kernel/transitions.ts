// Every change of an item's state, of an attempt's end, of a hold and of the counters happens here,
// one named function per change, each doing all of its bookkeeping: the row, the counters that
// /stats answers from without counting rows, the hold an outcome ends, the log entry, and the hook
// that tells the features. Nothing else writes these, so the counters cannot drift from the rows.
// Callers run these inside the store batch of the change; none of them commits. An attempt's row
// is inserted by the claimer (kernel/claimer.ts), which numbers it: a fleet's database does so itself.
//
// An item's states (its `items` row):
//
//   pending     waiting to launch: due at `due_at` (a backoff or a runAt), unless `held` by the user
//               or `blocked` by a dependency that has not launched.
//     running   pending with an attempt under way (`running` = 1, one `attempts` row running).
//     starting  a service's attempt under way, its ready probe not yet passed (`running` = 2).
//     ready     a service's attempt that passed its probe (`running` = 3, the attempt's ready_at).
//   launched    an attempt succeeded. Final.
//   failed      out of attempts, cancelled, or failed without an attempt (a dependency failed, a
//               cycle). Final until retried by hand.
//
//   discovered()            (new)            → pending
//   redefined()             pending          → pending, attempts reset (failed stays failed)
//   attemptStarted()        pending          → running
//   launched()              running          → launched
//   retryLater()            running          → pending, due after a backoff
//   failedForGood()         running          → failed
//   cancelled()             pending, running → failed (`cancelled`), its attempt ended at once
//   cancelledElsewhere()    (fleet) the attempt of an item cancelled here that another engine runs: failed (`cancelled`)
//   failedWithoutAttempt()  pending          → failed
//   retriedByHand()         failed           → pending, attempts reset
//   ranAgainByHand()        launched         → pending, attempts reset
//   removed()               pending (not running), launched, failed → (gone): its row and attempts;
//                           the log, totalLaunches and totalFailed keep its history
//   held() / released()     pending: the hold flag only; an outcome ends a hold.
//
// A service (features/services) takes the same path with its own steps:
//   attemptStarted()        pending          → starting
//   serviceReady()          starting         → ready
//   serviceExited()         starting, ready  → (the log entry; then one of:)
//     serviceRestartLater() → pending, due after a backoff (or at once when the user restarts it)
//     serviceStopped()      → pending, due now, attempts reset: the engine stopped it
//     launched(), failedForGood()  as for any item
//   serviceStartedByHand()  launched         → pending (Restart Service on a service that exited 0)
//   blocked()               pending: the blocked flag only, kept by the dependencies feature.
import type { AttemptProblem, LaunchOutcome, LaunchRecord } from '../../shared/api';
import type { AttemptResult } from '../launching/attemptProcess';
import type { ItemDefinition } from '../intake/items';
import { launchRecord, readItem, READY, RUNNING, STARTING, type Counters, type ItemRow, type LaunchEnd, type StoredState } from '../reads/records';
import type { StoreBackend } from '../store/backend';
import type { LogWriter } from '../intake/ingest';
import type { EngineHooks } from './hooks';
import { backoffDelay, type BackoffOptions } from './retryPolicy';

/** An attempt's problems as its row keeps them: JSON, or null when the item has no matcher. */
function problemsJson(problems: AttemptProblem[] | null): string | null {
  return problems ? JSON.stringify(problems) : null;
}

/** The attempt a transition is about, as the kernel tracks it. */
export interface AttemptRef {
  attemptId: number;
  item: ItemDefinition;
  attempt: number;
  startedAt: number;
}

export class Transitions {
  private counts: Counters = { launched: 0, pending: 0, failed: 0, totalLaunches: 0, totalFailed: 0, held: 0 };
  /** The newest attempt started or ended, for /status. */
  lastLaunch: LaunchRecord | null = null;

  constructor(
    private readonly store: StoreBackend,
    private readonly options: BackoffOptions,
    private readonly log: LogWriter,
    private readonly hooks: EngineHooks,
  ) {}

  get counters(): Readonly<Counters> {
    return this.counts;
  }

  /** What a starting engine takes over from the database. */
  load(state: StoredState): void {
    this.counts = state.counters;
    this.lastLaunch = state.lastLaunch;
  }

  /** (new) → pending: its row and priority; then the features keep what they need of it (itemDiscovered). */
  discovered(item: ItemDefinition, source: string, stored: string, hash: string, now: number): void {
    this.store.mutate('item_insert', [item.id, item.name, source, stored, hash, item.maxAttempts, item.runAt, item.runAt ?? 0, now, now]);
    if (item.priority) this.store.mutate('item_priority', [item.priority, item.id]);
    this.counts.pending++;
    this.hooks.emit('itemDiscovered', item);
  }

  /**
   * A known item (not running, not launched) took a new definition from `source`: a pending one
   * starts over, attempts reset and due at its runAt; a failed one stays failed until retried.
   */
  redefined(item: ItemDefinition, before: ItemDefinition, source: string, stored: string, hash: string, known: Pick<ItemRow, 'outcome' | 'attempts' | 'due_at'>, now: number): void {
    const pending = known.outcome === 'pending';
    const [attempts, dueAt] = pending ? [0, item.runAt ?? 0] : [known.attempts, known.due_at];
    this.store.mutate('item_update', [item.name, source, stored, hash, item.maxAttempts, item.runAt, attempts, dueAt, now, item.id]);
    if ((item.priority ?? 0) !== (before.priority ?? 0)) this.store.mutate('item_priority', [item.priority ?? 0, item.id]);
    this.hooks.emit('itemRedefined', item, before);
  }

  /** An attempt was recorded (its row by the claimer, which numbers it) and the item is running. */
  attemptStarted(row: ItemRow, a: AttemptRef): void {
    this.store.mutate('item_state', ['pending', a.attempt, null, a.item.service ? STARTING : RUNNING, row.last_error, a.startedAt, row.id]);
    this.counts.totalLaunches++;
    this.lastLaunch = launchRecord(a.item, a.attempt, a.startedAt, null);
    const { item, attempt } = a;
    this.log('launch_started', 'info', `launching "${item.name}" (attempt ${attempt} of ${item.maxAttempts})`, item.id, {
      attempt,
      maxAttempts: item.maxAttempts,
      command: item.command,
      args: item.args,
      shell: item.shell,
      cwd: item.cwd,
    });
  }

  /** After a dispatch round's attempts: the launch counter is written once for the round. */
  launchRoundRecorded(): void {
    this.store.setMeta('total_launches', String(this.counts.totalLaunches));
  }

  /** An attempt's process ended: its row gets how (the item's state is the next transition's). */
  attemptEnded(a: AttemptRef, result: AttemptResult, outcome: LaunchOutcome, problems: AttemptProblem[] | null, error = result.error): void {
    const { finishedAt, exitCode, signal, stdoutTail, stderrTail, outputBytes } = result;
    const r = result.resources ?? null;
    this.store.mutate('attempt_end_measured', [
      ...[finishedAt, outcome, exitCode, signal, error, stdoutTail, stderrTail, outputBytes, problemsJson(problems)],
      ...[r?.cpuMs ?? null, r?.peakRssBytes ?? null, r?.sampledEveryMs ?? null, result.firstOutputMs ?? null, a.attemptId],
    ]);
  }

  /** The attempt took more than twice its item's median (the insight feature judged it): marked, and a warning logged. */
  attemptSlow(attemptId: number, itemId: string, message: string, details: Record<string, unknown>): void {
    this.store.mutate('attempt_slow', [attemptId]);
    this.log('attempt_slow', 'warn', message, itemId, details);
  }

  /** The attempt is over as far as /status goes: the newest launch record. */
  attemptOver(a: AttemptRef, end: LaunchEnd): void {
    this.lastLaunch = launchRecord(a.item, a.attempt, a.startedAt, end);
  }

  /** running → launched. `held` reads the hold only if needed. */
  launched(a: AttemptRef, now: number, held: () => boolean, durationMs: number, details: Record<string, unknown>): void {
    const { item, attempt } = a;
    this.store.mutate('item_state', ['launched', attempt, null, 0, null, now, item.id]);
    this.endHold(item.id, held(), now);
    this.counts.pending--;
    this.counts.launched++;
    this.hooks.emit('outcome', item.id, 'launched');
    this.log('launch_succeeded', 'info', `"${item.name}" succeeded (attempt ${attempt}, exited with code 0 in ${durationMs} ms)`, item.id, details);
  }

  /** An attempt failed (the item's next state is retryLater or failedForGood). */
  attemptFailed(a: AttemptRef, why: string, interrupted: boolean, details: Record<string, unknown>): void {
    const { item, attempt } = a;
    this.counts.totalFailed++;
    this.store.setMeta('total_failed', String(this.counts.totalFailed));
    if (interrupted) this.log('launch_interrupted', 'warn', `"${item.name}" attempt ${attempt} was interrupted (${why})`, item.id, details);
    else this.log('launch_failed', 'warn', `"${item.name}" attempt ${attempt} of ${item.maxAttempts} ${why}`, item.id, details);
  }

  /** running → failed: its last attempt failed. */
  failedForGood(a: AttemptRef, why: string, now: number, held: () => boolean, details: Record<string, unknown>): void {
    const { item, attempt } = a;
    this.store.mutate('item_state', ['failed', attempt, null, 0, why, now, item.id]);
    this.endHold(item.id, held(), now);
    this.counts.pending--;
    this.counts.failed++;
    this.log('item_failed', 'error', `"${item.name}" failed for good after ${attempt} attempt(s): ${why}`, item.id, details);
    this.hooks.emit('outcome', item.id, 'failed');
  }

  /** running → pending, due once the backoff has passed. */
  retryLater(a: AttemptRef, why: string, now: number): void {
    const { item, attempt } = a;
    const delay = backoffDelay(attempt, this.options);
    const dueAt = now + delay;
    this.store.mutate('item_state', ['pending', attempt, dueAt, 0, why, now, item.id]);
    this.log('retry_scheduled', 'info', `"${item.name}" will be retried in ${delay} ms (attempt ${attempt + 1} of ${item.maxAttempts})`, item.id, {
      attempt: attempt + 1,
      delayMs: delay,
      dueAt: new Date(dueAt).toISOString(),
    });
  }

  /**
   * pending or running → failed with error `cancelled`, whatever attempts it had left. A running
   * attempt (`a`, with whether its process was spawned) is recorded failed at once; its process's
   * end is filled in by cancelledAttemptExited.
   */
  cancelled(row: ItemRow, a: (AttemptRef & { spawned: boolean }) | undefined, now: number, state: string): void {
    const itemId = row.id;
    if (a) {
      this.store.mutate('attempt_finish', [now, 'failed', null, null, 'cancelled', '', '', a.attemptId]);
      this.counts.totalFailed++;
      this.store.setMeta('total_failed', String(this.counts.totalFailed));
      this.lastLaunch = launchRecord(a.item, a.attempt, a.startedAt, { outcome: 'failed', finishedAt: now, durationMs: now - a.startedAt, exitCode: null, signal: null, error: 'cancelled' });
      const how = a.spawned ? (process.platform === 'win32' ? 'its process tree was ended' : 'its processes were sent SIGTERM (SIGKILL in 5 s if they do not exit)') : 'it had not been spawned yet and never will be';
      this.log('launch_cancelled', 'warn', `"${row.name}" attempt ${a.attempt} cancelled by the user; ${how}; the item failed`, itemId, {
        attempt: a.attempt,
        maxAttempts: a.item.maxAttempts,
        spawned: a.spawned,
      });
    } else {
      this.log('launch_cancelled', 'warn', `"${row.name}" cancelled by the user before its next attempt; the item failed`, itemId, {
        attempt: null,
        attempts: row.attempts,
        state,
      });
    }
    this.store.mutate('item_state', ['failed', a ? a.attempt : row.attempts, null, 0, 'cancelled', now, itemId]);
    this.endHold(itemId, row.held === 1, now);
    this.counts.pending--;
    this.counts.failed++;
    this.hooks.emit('outcome', itemId, 'failed');
    this.hooks.emit('cancelled', itemId, a);
  }

  /**
   * On a fleet: the running attempt of an item cancelled here runs on another engine; its row is
   * recorded failed (`cancelled`) as cancelled() does for one of ours, and that engine fills in
   * its process's end when it exits (cancelledAttemptExited).
   */
  cancelledElsewhere(attemptId: number, now: number): void {
    this.store.mutate('attempt_finish', [now, 'failed', null, null, 'cancelled', '', '', attemptId]);
  }

  /** A cancelled attempt's process has exited: its row, failed at the cancel, gets how the process ended. */
  cancelledAttemptExited(a: AttemptRef, result: AttemptResult, problems: AttemptProblem[] | null): void {
    this.attemptEnded(a, result, 'failed', problems, 'cancelled');
  }

  /**
   * pending → failed without an attempt (a dependency failed, or a cycle). Announces no outcome:
   * the dependencies feature, its caller, fails the dependents itself.
   */
  failedWithoutAttempt(itemId: string, error: string): void {
    const row = readItem(this.store, itemId);
    if (!row || row.outcome !== 'pending') return;
    const now = Date.now();
    this.store.mutate('item_state', ['failed', row.attempts, null, 0, error, now, itemId]);
    this.endHold(itemId, row.held === 1, now);
    this.counts.pending--;
    this.counts.failed++;
  }

  /** failed → pending, its attempts reset; due now, or at its runAt if that is later. */
  retriedByHand(row: ItemRow, runAt: number | null | undefined): void {
    const now = Date.now();
    this.store.mutate('item_state', ['pending', 0, Math.max(now, runAt ?? 0), 0, row.last_error, now, row.id]);
    this.counts.failed--;
    this.counts.pending++;
    this.log('item_retried', 'info', `"${row.name}" retried by hand; attempts reset`, row.id, { previousAttempts: row.attempts });
  }

  /** launched → pending, its attempts reset (Run Again); due now, or at its runAt if that is later. */
  ranAgainByHand(row: ItemRow, runAt: number | null | undefined): void {
    const now = Date.now();
    this.store.mutate('item_state', ['pending', 0, Math.max(now, runAt ?? 0), 0, null, now, row.id]);
    this.counts.launched--;
    this.counts.pending++;
    this.log('item_retried', 'info', `"${row.name}" run again by hand; attempts reset`, row.id, { previousAttempts: row.attempts, previousOutcome: 'launched' });
  }

  /**
   * An item the user removed (pending and not running, launched or failed): its row, its attempts
   * (and, through itemsForgotten, their output) and its own dependencies go; `total` and its
   * outcome's counter drop. totalLaunches, totalFailed and the log keep its history: the log
   * says who removed what. A later queue file (or a changed one) naming its id brings it back as new.
   */
  removed(row: ItemRow): void {
    const state = row.outcome === 'pending' ? (row.held === 1 ? 'held' : 'pending') : row.outcome;
    this.hooks.emit('itemsForgotten', [row.id]);
    this.store.mutate('attempts_delete', [row.id]);
    this.store.mutate('dependencies_clear', [row.id]);
    this.store.mutate('item_delete', [row.id]);
    if (row.outcome === 'pending' && row.held === 1) this.counts.held--;
    this.counts[row.outcome]--;
    this.log('item_removed', 'info', `"${row.name}" removed by the user (it was ${state}, ${row.attempts} attempt(s))`, row.id, {
      outcome: row.outcome,
      attempts: row.attempts,
      lastError: row.last_error,
    });
  }

  /** A pending item waits for a dependency to launch (blocked), or no longer does. */
  blocked(itemId: string, blocked: boolean): void {
    this.store.mutate('item_blocked', [blocked ? 1 : 0, itemId]);
  }

  /** A pending item is held by the user. */
  held(row: ItemRow): void {
    this.store.mutate('item_hold', [1, Date.now(), row.id]);
    this.counts.held++;
    const running = row.running !== 0 ? '; its running attempt goes on' : '';
    this.log('item_held', 'info', `"${row.name}" held by the user: it is not launched until released${running}`, row.id, { running: row.running !== 0 });
  }

  /** A held item is released by the user. */
  released(row: ItemRow): void {
    this.store.mutate('item_hold', [0, Date.now(), row.id]);
    this.counts.held--;
    this.log('item_released', 'info', `"${row.name}" released by the user`, row.id, null);
  }

  /** The wall clock jumped: a backoff is a delay, not a time of day, so it keeps the time it had left. */
  backoffsShifted(ms: number): void {
    this.store.mutate('items_backoff_shift', [ms]);
  }

  /** starting → ready: the service's probe passed (or it ran 1 s without one); what depends on it may start. */
  serviceReady(a: AttemptRef, readyAt: number, probe: string): void {
    const { item, attempt } = a;
    this.store.mutate('item_running', [READY, readyAt, item.id]);
    this.store.mutate('attempt_ready', [readyAt, a.attemptId]);
    const readyAfterMs = Math.max(0, readyAt - a.startedAt);
    this.log('service_ready', 'info', `service "${item.name}" is ready after ${readyAfterMs} ms (${probe})`, item.id, { attempt, readyAfterMs, probe });
    this.hooks.emit('serviceReady', item.id, true);
  }

  /** A service's process ended (starting or ready); the item's next state is the next transition. */
  serviceExited(a: AttemptRef, result: AttemptResult, wasReady: boolean, why: string, onPurpose = false): void {
    const { item, attempt } = a;
    const level = result.succeeded || onPurpose ? 'info' : 'warn';
    this.log('service_exited', level, `service "${item.name}" ${wasReady ? 'was ready and' : 'was starting and'} ${result.succeeded ? 'exited with code 0' : why}`, item.id, {
      attempt,
      exitCode: result.exitCode,
      signal: result.signal,
      error: result.error,
      wasReady,
    });
    if (wasReady) this.hooks.emit('serviceReady', item.id, false);
  }

  /** A service that exited → pending, started again after `delayMs` (its restart policy and backoff decided). */
  serviceRestartLater(a: AttemptRef, why: string, now: number, delayMs: number, details: Record<string, unknown>): void {
    const { item, attempt } = a;
    const dueAt = now + delayMs;
    this.store.mutate('item_state', ['pending', attempt, dueAt, 0, why, now, item.id]);
    this.log('service_restarted', 'info', `service "${item.name}" will be started again in ${delayMs} ms (restart ${attempt})`, item.id, {
      attempt: attempt + 1,
      delayMs,
      dueAt: new Date(dueAt).toISOString(),
      ...details,
    });
  }

  /** A service the engine stopped (Stop, or the engine shutting down) → pending, due now, attempts reset: the next start starts it afresh. */
  serviceStopped(a: AttemptRef, now: number): void {
    this.store.mutate('item_state', ['pending', 0, now, 0, 'stopped with the engine', now, a.item.id]);
  }

  /** launched (a service that exited 0 and stays down) → pending, attempts reset: the user's Restart Service. */
  serviceStartedByHand(row: ItemRow): void {
    const now = Date.now();
    this.store.mutate('item_state', ['pending', 0, now, 0, null, now, row.id]);
    this.counts.launched--;
    this.counts.pending++;
    this.log('item_retried', 'info', `service "${row.name}" started again by hand; attempts reset`, row.id, { previousAttempts: row.attempts });
  }

  /** The number of consecutive failures a service's backoff and maxAttempts count (see features/services). */
  nextDelay(failures: number): number {
    return backoffDelay(Math.max(1, failures), this.options);
  }

  /** An item that reaches an outcome is no longer held: holding is for pending items. */
  private endHold(itemId: string, held: boolean, now: number): void {
    if (!held) return;
    this.store.mutate('item_hold', [0, now, itemId]);
    this.counts.held--;
  }
}
