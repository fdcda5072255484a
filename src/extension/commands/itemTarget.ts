// What an item command is given, read the same way by every command that takes an item: a tree
// node of the Items, Logs or Schedules view, an ItemSummary, `{ itemId, attempt }`, or an item id.
import type { AttemptDetail, ItemDetail, ItemState, ItemSummary } from '../../shared/api';
import type { TreeNode } from '../views/nodeTree';

/** What Show Output is asked to show: an item, and one of its attempts (the latest by default). */
export interface OutputTarget {
  itemId: string;
  attempt?: number;
}

/**
 * An item command's argument: a tree node, an ItemSummary, `{ itemId, attempt }`, or an item id.
 * A Schedules view node gives its template's id: Hold and Release on a template disable and
 * enable the template, so every item it would fire waits or comes back with it.
 */
export function targetOf(arg: unknown): OutputTarget | undefined {
  if (typeof arg === 'string') return arg ? { itemId: arg } : undefined;
  if (!arg || typeof arg !== 'object') return undefined;
  const a = arg as Partial<TreeNode> & Partial<ItemSummary> & Partial<OutputTarget>;
  if (typeof a.itemId === 'string') return { itemId: a.itemId, attempt: typeof a.attempt === 'number' ? a.attempt : undefined };
  if (a.item) return { itemId: a.item.id };
  if (a.entry?.itemId) return { itemId: a.entry.itemId };
  if (a.schedule) return { itemId: a.schedule.id };
  if (typeof a.id === 'string' && 'outcome' in a) return { itemId: a.id };
  return undefined;
}

/** The state of an item, also from an older engine that does not send `state`. */
export function stateOf(item: ItemSummary): ItemState {
  return item.state ?? (item.phase === 'done' ? item.outcome : item.phase);
}

/** The latest attempt of an item (attempt numbers restart after a retry by hand: by start time). */
export function latestAttempt(detail: ItemDetail): AttemptDetail | undefined {
  let latest: AttemptDetail | undefined;
  for (const a of detail.attempts) if (!latest || a.startedAt >= latest.startedAt) latest = a;
  return latest;
}
