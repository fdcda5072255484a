// What a user may do to items: retry a failed one, run a launched one again, cancel a pending one
// (ending its running attempt), hold and release a pending one or a schedule template, remove one
// (or every finished one). Each request is checked against
// the item's state (a refusal is a ControlError the HTTP routes turn into 404 or 409), recorded
// through transitions.ts, and on disk before it is answered.
import type { ItemRow } from '../../reads/records';
import { itemState, readFailedItemIds, readItem } from '../../reads/records';
import { itemFromRow } from '../../intake/items';
import type { Attempts } from '../../kernel/attempts';
import type { KernelContext } from '../../kernel/context';
import { ControlError, type ItemRemoval } from '../../kernel/monitoredEngine';
import type { Dependencies } from '../dependencies/dependencies';
import type { Scheduler } from '../schedules/schedules';

/** The item's outcome as a reason a control request cannot apply to it. */
function finishedAlready(row: ItemRow): string {
  return row.outcome === 'launched' ? 'has already launched (an attempt succeeded)' : `has already failed${row.last_error ? ` (${row.last_error})` : ''}`;
}

export class ItemControl implements ItemRemoval {
  constructor(
    private readonly k: KernelContext,
    private readonly attempts: Attempts,
    private readonly dependencies: Dependencies,
    private readonly scheduler: Scheduler,
  ) {}

  /** Makes a failed item pending again, its attempts reset (`item_retried`); not before its runAt. */
  retryItem(itemId: string): void {
    const row = this.requireItem(itemId);
    if (row.outcome !== 'failed') {
      throw new ControlError('conflict', `item "${itemId}" is ${row.outcome === 'launched' ? 'launched' : 'pending'}; only a failed item can be retried`);
    }
    const def = itemFromRow(row.definition, row);
    this.k.store.batch(() => {
      this.k.transitions.retriedByHand(row, def.runAt);
      // Its dependencies are judged again: blocked until they launch, failed again if one failed.
      this.dependencies.evaluate(itemId);
    });
    this.answered(true);
  }

  /** Makes a launched item pending again, its attempts reset (`item_retried`); not before its runAt. */
  runAgain(itemId: string): void {
    const row = this.requireItem(itemId);
    if (row.outcome !== 'launched') {
      throw new ControlError('conflict', `item "${itemId}" is ${row.outcome}; only a launched item can be run again (a failed one is retried)`);
    }
    const def = itemFromRow(row.definition, row);
    this.k.store.batch(() => {
      this.k.transitions.ranAgainByHand(row, def.runAt);
      this.dependencies.evaluate(itemId);
    });
    this.answered(true);
  }

  /**
   * Removes an item, whatever its state (transitions.removed). A running one is cancelled first,
   * and removed once its process has exited (SIGTERM, SIGKILL after 5 s): its process never
   * outlives the item, and its attempt's end is recorded before the attempt goes. A schedule
   * template is not an item: it lives in its queue file, and its occurrences are removed one by one.
   */
  async removeItem(itemId: string): Promise<void> {
    if (this.scheduler.has(itemId)) {
      throw new ControlError('conflict', `"${itemId}" is a schedule template, not an item: delete its entry from its queue file to remove it (its occurrences can be removed one by one)`);
    }
    let row = this.requireItem(itemId);
    if (row.running === 1 && !this.attempts.of(itemId)) {
      throw new ControlError('conflict', `item "${itemId}" is running on another engine of the fleet; cancel it first, then remove it`);
    }
    if (this.attempts.of(itemId)) this.cancelItem(itemId);
    await this.exited(itemId);
    row = this.requireItem(itemId);
    if (row.running === 1 || this.attempts.of(itemId)) {
      throw new ControlError('conflict', `item "${itemId}" started again while it was being removed; cancel it, then remove it`);
    }
    this.k.store.batch(() => this.k.transitions.removed(row));
    this.answered(false);
  }

  /** Removes every launched and failed item (Clear Finished): how many. Pending and running ones stay. */
  async clearFinished(): Promise<number> {
    const ids = this.k.store.all<{ id: string }>("SELECT id FROM items WHERE outcome IN ('launched', 'failed') ORDER BY seq").map((r) => r.id);
    // A cancelled item's process may still be ending: it is waited for, as Remove Item does.
    await Promise.all(ids.map((id) => this.exited(id)));
    let removed = 0;
    this.k.store.batch(() => {
      for (const id of ids) {
        const row = readItem(this.k.store, id);
        if (!row || row.outcome === 'pending') continue;
        this.k.transitions.removed(row);
        removed++;
      }
    });
    if (removed > 0) this.answered(false);
    return removed;
  }

  /** Settles once no process of the item's cancelled attempts is left (at once if none is). */
  private async exited(itemId: string): Promise<void> {
    const ending = this.attempts.all().flatMap((a) => (a.item.id === itemId && a.cancelled && a.recorded ? [a.recorded] : []));
    await Promise.all(ending);
  }

  retryAllFailed(): number {
    const ids = readFailedItemIds(this.k.store);
    for (const id of ids) this.retryItem(id);
    return ids.length;
  }

  /**
   * Cancels a pending item: it becomes failed at once with error `cancelled`, whatever attempts it
   * had left, and is not retried (Retry by hand works as for any failed item). A running attempt
   * is recorded failed with error `cancelled` and its process group gets SIGTERM, then SIGKILL
   * after 5 s; an attempt journaled but not spawned yet is never spawned. One `launch_cancelled`
   * entry either way (`details.attempt` is null when no attempt was running); no `item_failed`,
   * which reports failures the user did not ask for.
   */
  cancelItem(itemId: string): void {
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be cancelled`);
    const a = this.attempts.of(itemId);
    const now = Date.now();
    this.k.store.batch(() => {
      if (a) this.attempts.cancel(a);
      this.k.transitions.cancelled(row, a && { ...a, spawned: a.run !== undefined }, now, a ? '' : itemState(row, now));
    });
    if (a) this.attempts.afterCancel(a, now);
    // An attempt that was never spawned frees its slot now; a running one when its process exits.
    this.answered(true);
  }

  /**
   * Holds a pending item: it is not launched until released; a running attempt is not touched
   * (should it fail, the item waits, held, for its retry). Holding a held item changes nothing.
   */
  holdItem(itemId: string): void {
    if (this.scheduler.has(itemId)) return this.enableSchedule(itemId, false);
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be held`);
    if (row.held === 1) return;
    this.k.store.batch(() => {
      this.attempts.setHeld(itemId, true);
      this.k.transitions.held(row);
    });
    this.answered(false);
  }

  /** Releases a held item: it launches when due (at once if it already is). Releasing an item not held changes nothing. */
  releaseItem(itemId: string): void {
    if (this.scheduler.has(itemId)) return this.enableSchedule(itemId, true);
    const row = this.requireItem(itemId);
    if (row.outcome !== 'pending') throw new ControlError('conflict', `item "${itemId}" ${finishedAlready(row)}; only a pending item can be held or released`);
    if (row.held !== 1) return;
    this.k.store.batch(() => {
      this.attempts.setHeld(itemId, false);
      this.k.transitions.released(row);
    });
    this.answered(true);
  }

  /**
   * Hold/release on a schedule template: disabled, no occurrence fires; enabled again, the next
   * occurrence after the release fires (those it was held through are not caught up).
   */
  private enableSchedule(templateId: string, enabled: boolean): void {
    const { store, log } = this.k;
    const changed = store.batch(() => {
      if (!this.scheduler.setEnabled(templateId, enabled)) return false;
      if (enabled) log('item_released', 'info', `schedule "${templateId}" released: its occurrences fire again`, templateId, { schedule: true });
      else log('item_held', 'info', `schedule "${templateId}" held: no occurrence fires until released`, templateId, { schedule: true });
      return true;
    });
    if (!changed) return;
    this.k.changed({ commit: 'sync' });
    this.scheduler.arm();
  }

  private requireItem(itemId: string): ItemRow {
    const row = readItem(this.k.store, itemId);
    if (!row) throw new ControlError('not_found', `no item with id "${itemId}"`);
    return row;
  }

  /** A control request is on disk before it is answered; `dispatch` when it may let an item launch. */
  private answered(dispatch: boolean): void {
    this.k.changed({ commit: 'sync', dispatch });
  }
}
