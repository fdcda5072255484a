// Which control actions apply to an item in which state: the rule the Items view's context menu
// (package.json `when` clauses on its contextValue), the palette's item picks and the dashboard's
// item detail all follow, so a button is never offered that the engine would refuse.
import type { ItemState } from './api';

/** The control actions the dashboard's item detail offers as buttons. */
export const ITEM_ACTIONS = ['retry', 'cancel', 'hold', 'release'] as const;
export type ItemAction = (typeof ITEM_ACTIONS)[number];

/** Finished for good: launched (succeeded) or failed. */
const finished = (s: ItemState) => s === 'launched' || s === 'failed';

export const ITEM_ACTION_APPLIES: Record<ItemAction, (s: ItemState) => boolean> = {
  retry: (s) => s === 'failed',
  cancel: (s) => !finished(s),
  hold: (s) => !finished(s) && s !== 'held',
  release: (s) => s === 'held',
};

/**
 * Whether `action` is offered for an item in `state`. A service is not offered Hold (the Items
 * view's menu has none for it either): Cancel stops it, Restart Service starts it again.
 */
export function itemActionApplies(action: ItemAction, state: ItemState, service = false): boolean {
  if (action === 'hold' && service) return false;
  return ITEM_ACTION_APPLIES[action](state);
}

export function isItemAction(v: unknown): v is ItemAction {
  return (ITEM_ACTIONS as readonly unknown[]).includes(v);
}
