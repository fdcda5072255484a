// The Items view's groups: which item states each holds, in which order it is read, and the pure
// helpers EngineModel reads and reshapes its pages with.
import type { ItemState, ItemSummary, StatsOverview } from '../shared/api';

/**
 * The Items view's groups, in the order it shows them: what is happening now first, then what
 * will happen, what waits on the user or on other items, what needs attention, and what is done.
 */
export const ITEM_GROUPS = ['running', 'services', 'waiting', 'held', 'blocked', 'failed', 'launched'] as const;
export type ItemGroup = (typeof ITEM_GROUPS)[number];
/** The item states each group holds (the `state` of /items and GET /items/{id}). */
export const GROUP_STATES: Record<ItemGroup, readonly ItemState[]> = {
  // Services running (starting, ready); the stopped ones are moved here from their states' groups.
  services: ['starting', 'ready'],
  running: ['running'],
  waiting: ['backoff', 'waiting', 'scheduled'],
  held: ['held'],
  blocked: ['blocked'],
  failed: ['failed'],
  launched: ['launched'],
};
/**
 * Items per group the Items view lists at first, and how many more each "Show more…" adds: a queue
 * of 100,000 items is never 100,000 tree nodes (nor a read of them all).
 */
export const ITEMS_PER_GROUP = 200;
/**
 * The order each group is read in: what runs or waits by when it will launch (the engine's own
 * dispatch order, `order=launch`), what is done newest first (`order=recent`), the rest in
 * discovery order.
 */
export const GROUP_ORDERS: Partial<Record<ItemGroup, 'launch' | 'recent'>> = { waiting: 'launch', failed: 'recent', launched: 'recent' };
/**
 * Groups whose state is exactly an outcome: read by `outcome=`, whose total the engine answers from
 * its counters (the same numbers as /stats) instead of counting rows.
 */
export const GROUP_OUTCOMES: Partial<Record<ItemGroup, 'failed' | 'launched'>> = { failed: 'failed', launched: 'launched' };

export interface ItemsSnapshot {
  byGroup: Record<ItemGroup, { items: ItemSummary[]; total: number }>;
}

export type ItemsPage = { items: ItemSummary[]; total: number };

export function pagePath(query: string, limit = ITEMS_PER_GROUP): string {
  return `/items?${query}&limit=${limit}&offset=0`;
}

/** Which items a group lists: Failed and Launched by outcome (their counts are the engine's counters), the rest by state. */
export function groupFilter(group: ItemGroup): string {
  const outcome = GROUP_OUTCOMES[group];
  return outcome ? `outcome=${outcome}` : `state=${GROUP_STATES[group].join(',')}`;
}

/**
 * The groups /stats says are empty: nothing runs (so no item is running, starting or ready), none
 * is held, nothing else is pending. Stats come with every change (at most 4 a second), and each
 * asks for a read of the items again, so a group skipped on the eve of a change is read next time.
 */
export function emptyGroups(stats: StatsOverview | undefined): Set<ItemGroup> {
  const empty = new Set<ItemGroup>();
  if (!stats) return empty;
  if (stats.running === 0) empty.add('running').add('services');
  if (stats.held === 0) empty.add('held');
  // An item both held and running counts in both: what is neither is at most pending - max(held, running).
  if (stats.pending - Math.max(stats.held, stats.running) <= 0) empty.add('waiting').add('blocked');
  if (stats.failed === 0) empty.add('failed');
  if (stats.launched === 0) empty.add('launched');
  return empty;
}

/** Drops the items `ended` picks from the Running group; true when there were any. */
export function withoutEnded(snapshot: ItemsSnapshot, ended: (itemId: string) => boolean): boolean {
  const running = snapshot.byGroup.running;
  const left = running.items.filter((i) => !ended(i.id));
  if (left.length === running.items.length) return false;
  running.total -= running.items.length - left.length;
  running.items = left;
  return true;
}

/**
 * The Services group holds every service the pages listed: those running (starting, ready) and,
 * moved from the group of their state, the stopped ones (waiting to restart, failed, exited).
 */
export function withServicesTogether(snapshot: ItemsSnapshot): ItemsSnapshot {
  const services = snapshot.byGroup.services;
  for (const g of ITEM_GROUPS) {
    if (g === 'services') continue;
    const group = snapshot.byGroup[g];
    const stopped = group.items.filter((i) => i.service !== undefined);
    if (stopped.length === 0) continue;
    group.items = group.items.filter((i) => i.service === undefined);
    group.total -= stopped.length;
    services.items.push(...stopped);
    services.total += stopped.length;
  }
  const rank = (i: ItemSummary) => (i.state === 'starting' ? 0 : i.state === 'ready' ? 1 : 2);
  services.items.sort((a, b) => rank(a) - rank(b));
  return snapshot;
}
