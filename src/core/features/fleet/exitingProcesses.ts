// One item, one process at a time, across the fleet. A cancelled attempt's process may live on for
// a while (a SIGTERM-deaf one until its SIGKILL 5 s later), and so does one cancelled through
// another engine's API until the engine that has it learns of the cancel (at its next tick) and
// ends it as its own cancel would. Meanwhile the database records the process
// (`exiting_processes`, keyed by the engine that has it) and every engine's claim skips the item,
// so a Retry right after the Cancel starts no second process anywhere. The exit removes the row
// and announces the item as due, so the engines look again at once. A lost engine's rows block
// nothing (its lease expired): they are removed, and its attempts taken over as interrupted as
// before.
import type { AttemptProblem } from '../../../shared/api';
import type { AttemptResult } from '../../launching/attemptProcess';
import type { ActiveAttempt, Attempts } from '../../kernel/attempts';
import type { KernelContext } from '../../kernel/context';
import type { AttemptRef } from '../../kernel/transitions';
import { isStoreUnavailable, type PgStore } from '../../store/pgStore';

export class ExitingProcesses {
  /** Our cancelled attempts recorded in the table: their exit removes the row. */
  private readonly ours = new Set<number>();
  /** Exits seen while the database was unreachable: their rows go at the next tick. */
  private uncleared: number[] = [];

  constructor(
    private readonly pg: PgStore,
    private readonly k: KernelContext,
    private readonly attempts: Attempts,
  ) {
    k.hooks.on('cancelled', (itemId, a) => this.cancelled(itemId, a));
    k.hooks.on('attemptEnded', (attemptId) => {
      if (this.ours.delete(attemptId)) this.clear(attemptId);
    });
  }

  /**
   * In the cancel's batch: our spawned attempt's process is recorded until it exits. When this
   * engine ran no attempt of the item, the item's running attempts on other engines are recorded
   * failed (`cancelled`), and their processes recorded for the engines that will clear them (an
   * engine of an earlier build does not: its process is not recorded, as before).
   */
  private cancelled(itemId: string, a: (AttemptRef & { spawned: boolean }) | undefined): void {
    if (a) {
      if (!a.spawned) return;
      this.record(a.attemptId, itemId, this.pg.engineId);
      this.ours.add(a.attemptId);
      return;
    }
    const now = Date.now();
    const elsewhere = this.pg.query<{ id: number; engine_id: string; records_exits: number | null }>(
      `SELECT a.id, a.engine_id, e.records_exits FROM attempts a LEFT JOIN engines e ON e.engine_id = a.engine_id AND e.lease_until >= em_now()
       WHERE a.item_id = $1 AND a.outcome = 'running' AND a.engine_id IS DISTINCT FROM $2 FOR UPDATE OF a`,
      [itemId, this.pg.engineId],
    );
    for (const r of elsewhere) {
      this.k.transitions.cancelledElsewhere(r.id, now);
      if (r.records_exits === 1) this.record(r.id, itemId, r.engine_id);
    }
  }

  private record(attemptId: number, itemId: string, engineId: string): void {
    this.pg.query('INSERT INTO exiting_processes (attempt_id, item_id, engine_id, since) VALUES ($1, $2, $3, em_now()) ON CONFLICT (attempt_id) DO NOTHING', [
      attemptId,
      itemId,
      engineId,
    ]);
  }

  /**
   * An attempt of ours ended before this engine learnt that another engine cancelled it (its row says failed,
   * `cancelled`), its process's end is recorded as a cancelled attempt's, the item is left as the
   * cancel (and any Retry since) made it, and the row that held the item goes. False otherwise:
   * the outcome is judged as usual.
   */
  endedAfterCancelElsewhere(a: ActiveAttempt, result: AttemptResult, problems: AttemptProblem[] | null): boolean {
    const row = this.pg.query<{ outcome: string; error: string | null }>('SELECT outcome, error FROM attempts WHERE id = $1', [a.attemptId])[0];
    if (row?.outcome !== 'failed' || row.error !== 'cancelled') return false;
    this.k.store.batch(() => {
      this.attempts.cancel(a);
      this.k.transitions.cancelledAttemptExited(a, result, problems);
    });
    this.k.hooks.emit('attemptEnded', a.attemptId, result, a.item.id);
    this.clear(a.attemptId);
    return true;
  }

  /**
   * Each tick: rows whose exit could not be written, and rows of engines that are lost, go; and
   * our attempts another engine cancelled (their rows name this engine) end as our own cancel ends
   * them: SIGTERM, SIGKILL 5 s later, the slot held until the process exits and its exit clearing
   * the row. Their rows and their items say cancelled already (the cancelling engine wrote them).
   */
  tick(): void {
    for (const id of this.uncleared.splice(0)) this.clear(id);
    this.pg.query('DELETE FROM exiting_processes x WHERE NOT EXISTS (SELECT 1 FROM engines e WHERE e.engine_id = x.engine_id AND e.lease_until >= em_now())');
    const now = Date.now();
    for (const { attempt_id } of this.pg.query<{ attempt_id: number }>('SELECT attempt_id FROM exiting_processes WHERE engine_id = $1', [this.pg.engineId])) {
      const a = this.attempts.active.get(attempt_id);
      if (!a || a.cancelled) {
        // No process of ours any more (a cancel committed as its outcome was being recorded): the row goes.
        if (!this.ours.has(attempt_id)) this.clear(attempt_id);
        continue;
      }
      this.attempts.cancel(a);
      this.attempts.afterCancel(a, now);
      // Not spawned (so never will be): no process holds the item.
      if (a.run) this.ours.add(a.attemptId);
      else this.clear(a.attemptId);
    }
  }

  /** The process exited: its row goes, and every engine hears that the item may be due. */
  private clear(attemptId: number): void {
    try {
      this.pg.query(`WITH gone AS (DELETE FROM exiting_processes WHERE attempt_id = $1 RETURNING item_id) SELECT pg_notify('engine_monitor_due', '') FROM gone`, [attemptId]);
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      this.uncleared.push(attemptId);
    }
  }
}
