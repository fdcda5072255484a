// Filling the word index from the store's items: at once when a search needs it now, or in steps
// with turns of the event loop between them (itemIndexReady), so a large store's first search does
// not hold /health and launches. The index is kept per store, and knows from the store's mutation
// counters whether it has read every item.
import { performance } from 'node:perf_hooks';
import { itemSearchText } from '../../../shared/itemFilter';
import type { ItemDefinition } from '../../intake/items';
import type { Store } from '../../store';
import { addPosting, emptyIndex, freeze, trimPostings, type ItemIndex } from './dictionary';
import { eachToken } from './tokens';

const indexes = new WeakMap<Store, ItemIndex>();
const TEXT_CHUNK = 2_000;
/**
 * Fresh tokens are merged into dict (freeze, which copies dict) when a read leaves more than this or
 * more than a quarter of dict's; while many items are read, when there are more than both.
 */
const FRESH_TOKENS = 2_048;

/**
 * Each item's search text, in seq order, from the item after `after` on, read in chunks: the rows
 * of 100,000 items with their definitions, read at once, were ~150 MB of strings alive together,
 * a peak the engine host's RSS kept (docs/PERFORMANCE.md). `chunkDone` runs after each chunk.
 * Stops after the chunk that reaches `limit` items; true when it read the last item.
 */
export function eachItemText(
  store: Store,
  after: number,
  fn: (seq: number, text: string) => void,
  chunkDone?: () => void,
  limit = Infinity,
  chunk = TEXT_CHUNK,
): boolean {
  for (let read = 0; read < limit; ) {
    const rows = store.rows('SELECT seq, id, name, definition FROM items WHERE seq > ? ORDER BY seq LIMIT ?', [after, chunk]);
    for (const [seq, id, name, definition] of rows) {
      const def = JSON.parse(definition as string) as ItemDefinition;
      fn(seq as number, itemSearchText({ id: id as string, name: name as string, command: def.command, args: def.args }));
      after = seq as number;
    }
    read += rows.length;
    chunkDone?.();
    if (rows.length < chunk) return true;
  }
  return false;
}

/** The texts of the items with these seqs (ascending), in chunks as above. */
export function eachTextOf(store: Store, seqs: ArrayLike<number>, fn: (seq: number, text: string) => void): void {
  for (let from = 0; from < seqs.length; from += TEXT_CHUNK) {
    const chunk = JSON.stringify(Array.from({ length: Math.min(TEXT_CHUNK, seqs.length - from) }, (_, i) => seqs[from + i]));
    for (const [seq, id, name, definition] of store.rows('SELECT seq, id, name, definition FROM items WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq', [chunk])) {
      const def = JSON.parse(definition as string) as ItemDefinition;
      fn(seq as number, itemSearchText({ id: id as string, name: name as string, command: def.command, args: def.args }));
    }
  }
}

/** Redefinitions and removals: either changes the items in the middle, and the index is built again. */
function rewrites(store: Store): number {
  return store.mutations('item_update') + store.mutations('item_delete');
}

/** Whether the index has read every item the store holds, as its mutation counters tell. */
function current(store: Store, index: ItemIndex | undefined): boolean {
  return index !== undefined && index.updates === rewrites(store) && index.inserts === store.mutations('item_insert');
}

/**
 * The index, built again when an item was redefined and extended by the items discovered since,
 * all at once: reads at most `limit` items (rounded up to whole chunks of `chunk`), then returns
 * whether it is current. Whatever it read stays in the index: the next call goes on from there.
 */
function catchUp(store: Store, limit = Infinity, chunk = TEXT_CHUNK): boolean {
  const inserts = store.mutations('item_insert');
  const updates = rewrites(store);
  let index = indexes.get(store);
  if (current(store, index)) return true;
  // A redefinition changes a text in the middle: index everything again (queue files rarely
  // change). During a stepped build this restarts it: the items read so far may be stale.
  if (!index || index.updates !== updates) {
    index = emptyIndex(updates);
    indexes.set(store, index);
  }
  const ix = index;
  // dict's positions of the tokens looked up lately: common words (`nightly`) are found once per chunk, not once per item.
  let known = new Map<string, number>();
  const done = eachItemText(
    store,
    ix.count > 0 ? ix.seqs[ix.count - 1] : -1,
    (seq, text) => {
      const k = ix.count++;
      if (k === ix.seqs.length) {
        const grown = new Uint32Array(k * 2);
        grown.set(ix.seqs);
        ix.seqs = grown;
      }
      ix.seqs[k] = seq;
      eachToken(text, (start, end) => addPosting(ix, text.slice(start, end), k, known));
    },
    () => {
      // Merging now and then keeps fresh small while many items are read (a Map of every token of
      // 100,000 items is what dict saves).
      if (ix.fresh.size > Math.max(FRESH_TOKENS, (ix.starts.length - 1) >> 2)) {
        freeze(ix);
        known = new Map();
      }
    },
    limit,
    chunk,
  );
  if (!done) return false;
  // Fresh tokens are found by a sort at the next search after one is added: keep them few.
  if (ix.fresh.size > Math.min(FRESH_TOKENS, (ix.starts.length - 1) >> 2)) freeze(ix);
  // After a large read, give back the room the posting lists grew into (up to half of each).
  if (ix.count - ix.readFrom >= TEXT_CHUNK) trimPostings(ix);
  ix.readFrom = ix.count;
  ix.inserts = inserts;
  return true;
}

/** The index, current: read now, all at once, when it is not (see itemIndexReady). */
export function itemIndex(store: Store): ItemIndex {
  catchUp(store);
  return indexes.get(store) as ItemIndex;
}

/**
 * A build in the background reads chunks of `items` items until `ms` have passed, then lets the
 * event loop turn. By time, not by a count of items: the first chunks (code not yet optimised)
 * and those that end in a merge of the fresh tokens cost several times the others.
 */
export interface BuildStep {
  items: number;
  ms: number;
}
const BUILD_STEP: BuildStep = { items: 250, ms: 8 };
const builds = new WeakMap<Store, Promise<void>>();

/** Whether the index of the store's items has read every item (tests: a build ends current). */
export function itemIndexCurrent(store: Store): boolean {
  return current(store, indexes.get(store));
}

/**
 * undefined when a search can run now without a long read (the index is current, or only a few
 * items were discovered since); else a promise that the index is built, or caught up, in steps
 * with a turn of the event loop between them, so that /health, launches and other requests go on
 * meanwhile (at 100,000 items a build all at once held the loop 0.6-2.5 s). One build per store:
 * every search that comes meanwhile waits for the same one. Items discovered during the build are
 * read by its later steps (they come after the last item read); a redefinition during it restarts
 * it (catchUp). A search that does not wait (matchingItemSeqs) finishes the build itself, at once.
 * Built when first needed, not at start: ~9 MB at 100,000 items that an engine nobody searches
 * does not need.
 */
export function itemIndexReady(store: Store, step: BuildStep = BUILD_STEP): Promise<void> | undefined {
  const index = indexes.get(store);
  if (current(store, index)) return undefined;
  const pending = builds.get(store);
  if (pending) return pending;
  // (item_insert counts statements, so this is at least the items discovered since.)
  if (index && index.updates === rewrites(store) && index.inserts >= 0 && store.mutations('item_insert') - index.inserts <= step.items) return undefined;
  const build = (async () => {
    try {
      // Each step in a turn of its own, the first too: the request that starts the build returns at once.
      for (;;) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        const until = performance.now() + step.ms;
        let done: boolean;
        do done = catchUp(store, Math.max(1, step.items), Math.max(1, step.items));
        while (!done && performance.now() < until);
        if (done) return;
      }
    } finally {
      builds.delete(store);
    }
  })();
  builds.set(store, build);
  return build;
}
