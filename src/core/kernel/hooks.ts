// The points where features join the kernel. A feature subscribes to what it needs once, when the
// engine is built, instead of the kernel calling each feature by name: adding a feature adds a
// subscriber, not a branch in the launch loop. Hooks run synchronously, in the batch of the change
// that fired them (a feature's writes commit with it), in the order they were subscribed.
import type { AttemptResult, RunningAttempt } from '../launching/attemptProcess';
import type { ItemDefinition } from '../intake/items';
import type { AttemptRef } from './transitions';

export interface EngineHookMap {
  /** A queue file or a schedule gave a new item, recorded pending in the same batch. */
  itemDiscovered: (item: ItemDefinition) => void;
  /** A known item took a new definition (`before` was the old one), in the same batch. */
  itemRedefined: (item: ItemDefinition, before: ItemDefinition) => void;
  /** An item reached its outcome through an attempt or a cancel (not a failed dependency, whose feature handles its own). */
  outcome: (itemId: string, outcome: 'launched' | 'failed') => void;
  /**
   * The user cancelled an item (in the cancel's batch): `a` is this engine's attempt it ended (with
   * whether its process was spawned), undefined when this engine ran none of it (on a fleet,
   * another engine may).
   */
  cancelled: (itemId: string, a: (AttemptRef & { spawned: boolean }) | undefined) => void;
  /** An attempt's process was handed to the launcher (services start probing it). */
  attemptSpawned: (a: AttemptRef, run: RunningAttempt) => void;
  /** A service became ready (true), or its ready attempt ended (false): what depends on it may start, or waits again. */
  serviceReady: (itemId: string, ready: boolean) => void;
  /** An attempt's process is gone and its end recorded: its output is complete. */
  attemptEnded: (attemptId: number, result: AttemptResult, itemId: string) => void;
  /** Before a change is committed: what was discovered meanwhile is judged (dependencies). */
  settle: () => void;
  /** Pruning removed the last log entries of these items, or the user removed them: their attempts' output goes. */
  itemsForgotten: (itemIds: string[]) => void;
}

export class EngineHooks {
  private readonly subscribers = new Map<keyof EngineHookMap, ((...args: never[]) => void)[]>();

  on<K extends keyof EngineHookMap>(name: K, fn: EngineHookMap[K]): void {
    const list = this.subscribers.get(name);
    if (list) list.push(fn);
    else this.subscribers.set(name, [fn]);
  }

  emit<K extends keyof EngineHookMap>(name: K, ...args: Parameters<EngineHookMap[K]>): void {
    const list = this.subscribers.get(name) as ((...a: Parameters<EngineHookMap[K]>) => void)[] | undefined;
    if (list) for (const fn of list) fn(...args);
  }
}
