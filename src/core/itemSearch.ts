// /items?q= over the sql.js store: an inverted index of the items' words, kept in memory per store.
// Scanning every item's search text per request (one indexOf pass over ~8 MB at 100,000 items)
// cost 1.5-3.5 ms a request, and at 10 connections p99 is ~10 x that; the index answers from the
// posting lists of the tokens a word can start, a cost that grows with the matches, not the items.
//
// The answer is exactly wordsStartWords(words, itemSearchText(item)) (src/shared/itemFilter.ts): a
// word must occur in the item's text where no letter or digit (\p{L}\p{N}) precedes it. The
// index's tokens are the maximal runs of letters and digits that start at such a place, so a word
// made of letters and digits occurs there iff some token of the item starts with it; a word with
// other characters gives necessary conditions on its runs, and its candidates are then checked
// against their texts read from the store.
import { performance } from 'node:perf_hooks';
import type { ItemDefinition } from './items';
import type { Store } from './store';
import type { ItemMatches } from './store/backend';

export type { ItemMatches };
import { itemSearchText, wordsStartWords } from '../shared/itemFilter';

/** Token → its items, ascending: one item's k (most tokens: ids' numbers), or a Uint32Array [count, k1, k2, …] with room to grow. */
type Posting = number | Uint32Array;

interface ItemIndex {
  /** The seq of item k (k < count), k counting items in discovery (seq) order: postings hold k, not the seq. */
  seqs: Uint32Array;
  count: number;
  /**
   * Most tokens, in token order (strings compared by UTF-16 code units, as `<` does, so a prefix's
   * tokens are one run), as one string: token i is dict.slice(starts[i], starts[i + 1]). With a Map
   * of 200,000 short strings (100,000 items' ids and numbers) the index held 22.6 MB; this way 8.7 MB.
   */
  dict: string;
  starts: Uint32Array;
  /** The postings of dict's tokens, in the same order. */
  postings: Posting[];
  /** The tokens first seen since dict was last rebuilt (freeze), with their postings. */
  fresh: Map<string, Posting>;
  /** fresh's tokens in token order; undefined when one was added since. */
  freshSorted: string[] | undefined;
  /** Scratch for unions and intersections: item k is in the current set when marks[k] === mark. */
  marks: Uint32Array;
  mark: number;
  /**
   * Scratch for a search's items (a word in every item is 100,000 of them): not a new 400 KB array
   * of garbage per request.
   */
  scratch: Uint32Array;
  /** store.mutations('item_insert') and ('item_update') when this was read. */
  inserts: number;
  updates: number;
  /** count when the index was last current: the read since is "large" (trimPostings) from there. */
  readFrom: number;
}

const indexes = new WeakMap<Store, ItemIndex>();
const TEXT_CHUNK = 2_000;
/**
 * Fresh tokens are merged into dict (freeze, which copies dict) when a read leaves more than this or
 * more than a quarter of dict's; while many items are read, when there are more than both.
 */
const FRESH_TOKENS = 2_048;

function emptyIndex(updates: number): ItemIndex {
  return {
    seqs: new Uint32Array(1_024),
    count: 0,
    dict: '',
    starts: Uint32Array.of(0),
    postings: [],
    fresh: new Map(),
    freshSorted: undefined,
    marks: new Uint32Array(0),
    mark: 0,
    scratch: new Uint32Array(0),
    inserts: -1,
    updates,
    readFrom: 0,
  };
}

/**
 * Each item's search text, in seq order, from the item after `after` on, read in chunks: the rows
 * of 100,000 items with their definitions, read at once, were ~150 MB of strings alive together,
 * a peak the engine host's RSS kept (docs/PERFORMANCE.md). `chunkDone` runs after each chunk.
 * Stops after the chunk that reaches `limit` items; true when it read the last item.
 */
function eachItemText(
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
function eachTextOf(store: Store, seqs: ArrayLike<number>, fn: (seq: number, text: string) => void): void {
  for (let from = 0; from < seqs.length; from += TEXT_CHUNK) {
    const chunk = JSON.stringify(Array.from({ length: Math.min(TEXT_CHUNK, seqs.length - from) }, (_, i) => seqs[from + i]));
    for (const [seq, id, name, definition] of store.rows('SELECT seq, id, name, definition FROM items WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq', [chunk])) {
      const def = JSON.parse(definition as string) as ItemDefinition;
      fn(seq as number, itemSearchText({ id: id as string, name: name as string, command: def.command, args: def.args }));
    }
  }
}

/** Whether the index has read every item the store holds, as its mutation counters tell. */
function current(store: Store, index: ItemIndex | undefined): boolean {
  return index !== undefined && index.updates === store.mutations('item_update') && index.inserts === store.mutations('item_insert');
}

/**
 * The index, built again when an item was redefined and extended by the items discovered since,
 * all at once: reads at most `limit` items (rounded up to whole chunks of `chunk`), then returns
 * whether it is current. Whatever it read stays in the index: the next call goes on from there.
 */
function catchUp(store: Store, limit = Infinity, chunk = TEXT_CHUNK): boolean {
  const inserts = store.mutations('item_insert');
  const updates = store.mutations('item_update');
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
function itemIndex(store: Store): ItemIndex {
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
/** Whether the index of the store's items has read every item (tests: a build ends current). */
export function itemIndexCurrent(store: Store): boolean {
  return current(store, indexes.get(store));
}

export function itemIndexReady(store: Store, step: BuildStep = BUILD_STEP): Promise<void> | undefined {
  const index = indexes.get(store);
  if (current(store, index)) return undefined;
  const pending = builds.get(store);
  if (pending) return pending;
  // (item_insert counts statements, so this is at least the items discovered since.)
  if (index && index.updates === store.mutations('item_update') && index.inserts >= 0 && store.mutations('item_insert') - index.inserts <= step.items) return undefined;
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

/** Compares token i of dict with `s` as `<` orders strings: negative when the token comes first. */
function compareToken(index: ItemIndex, i: number, s: string): number {
  const { dict, starts } = index;
  const from = starts[i];
  const length = starts[i + 1] - from;
  const n = Math.min(length, s.length);
  for (let j = 0; j < n; j++) {
    const d = dict.charCodeAt(from + j) - s.charCodeAt(j);
    if (d !== 0) return d;
  }
  return length - s.length;
}

/** The first of dict's tokens that does not come before `s`. */
function lowerBound(index: ItemIndex, s: string): number {
  let lo = 0;
  let hi = index.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareToken(index, mid, s) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** dict's position of the token, or -1. */
function findToken(index: ItemIndex, token: string): number {
  const at = lowerBound(index, token);
  return at < index.starts.length - 1 && compareToken(index, at, token) === 0 ? at : -1;
}

function addPosting(index: ItemIndex, token: string, k: number, known: Map<string, number>): void {
  const fresh = index.fresh.get(token);
  if (fresh !== undefined) {
    const p = appendItem(fresh, k);
    if (p !== fresh) index.fresh.set(token, p);
    return;
  }
  let at = known.get(token);
  if (at === undefined) {
    at = findToken(index, token);
    if (at < 0) {
      // A copy: a slice of 13 characters or more would keep the whole item text alive.
      index.fresh.set(token.length >= 13 ? (' ' + token).slice(1) : token, k);
      index.freshSorted = undefined;
      return;
    }
    if (known.size >= 4_096) known.clear();
    known.set(token, at);
  }
  index.postings[at] = appendItem(index.postings[at], k);
}

/** The posting with item k added (it is the highest yet), a new array when it had to grow. */
function appendItem(p: Posting, k: number): Posting {
  if (typeof p === 'number') {
    if (p === k) return p;
    const list = new Uint32Array(4);
    list[0] = 2;
    list[1] = p;
    list[2] = k;
    return list;
  }
  const n = p[0];
  // Items are added in order: the item is already there when it is the last one.
  if (p[n] === k) return p;
  let list = p;
  if (n + 1 >= list.length) {
    list = new Uint32Array(list.length * 2);
    list.set(p);
  }
  list[n + 1] = k;
  list[0] = n + 1;
  return list;
}

/** Merges the fresh tokens into dict. */
function freeze(index: ItemIndex): void {
  const added = freshTokens(index);
  const total = index.starts.length - 1;
  const parts: string[] = [];
  const starts = new Uint32Array(total + added.length + 1);
  const postings: Posting[] = new Array<Posting>(total + added.length);
  let i = 0;
  let m = 0;
  let length = 0;
  for (let j = 0; j <= added.length; j++) {
    // dict's tokens before the next fresh one (or all that are left), copied as one run.
    const run = i;
    while (i < total && (j === added.length || compareToken(index, i, added[j]) < 0)) {
      starts[m] = length + index.starts[i] - index.starts[run];
      postings[m++] = index.postings[i++];
    }
    if (i > run) {
      parts.push(index.dict.slice(index.starts[run], index.starts[i]));
      length += index.starts[i] - index.starts[run];
    }
    if (j === added.length) break;
    starts[m] = length;
    postings[m++] = index.fresh.get(added[j]) as Posting;
    parts.push(added[j]);
    length += added[j].length;
  }
  starts[m] = length;
  index.dict = parts.join('');
  index.starts = starts;
  index.postings = postings;
  index.fresh = new Map();
  index.freshSorted = undefined;
}

function freshTokens(index: ItemIndex): string[] {
  // Array.prototype.sort compares strings by UTF-16 code units, as compareToken does.
  index.freshSorted ??= [...index.fresh.keys()].sort();
  return index.freshSorted;
}

function trimPostings(index: ItemIndex): void {
  const { postings } = index;
  for (let id = 0; id < postings.length; id++) {
    const p = postings[id];
    if (typeof p !== 'number' && p.length > p[0] + 1 + (p[0] >> 3)) postings[id] = p.slice(0, p[0] + 1 + (p[0] >> 3));
  }
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
/** ASCII letters and digits by code: the common case, without a regular expression. */
const ASCII_LETTER_OR_DIGIT = new Uint8Array(128).map((_, c) => (/[0-9A-Za-z]/.test(String.fromCharCode(c)) ? 1 : 0));

/** Whether a letter or digit precedes `at`, exactly as wordsStartWords decides it (lone surrogates included). */
function letterOrDigitBefore(text: string, at: number): boolean {
  if (at === 0) return false;
  const code = text.charCodeAt(at - 1);
  if (code < 0x80) return ASCII_LETTER_OR_DIGIT[code] === 1;
  // The character before, whole even when it is outside the Basic Multilingual Plane.
  const before = code >= 0xdc00 && code <= 0xdfff && at >= 2 ? text.slice(at - 2, at) : text[at - 1];
  return LETTER_OR_DIGIT.test(before);
}

/**
 * Calls `fn(start, end)` for each token of `text`: each maximal run of letters and digits (whole
 * code points; a lone surrogate is neither) that no letter or digit precedes as wordsStartWords
 * sees it. (A run after a lone low surrogate that follows a letter is no token: wordsStartWords
 * reads the two as one "character before" and finds the letter in it.)
 */
function eachToken(text: string, fn: (start: number, end: number) => void): void {
  let start = -1;
  for (let at = 0; at < text.length; ) {
    const code = text.charCodeAt(at);
    let size = 1;
    let inWord: boolean;
    if (code < 0x80) inWord = ASCII_LETTER_OR_DIGIT[code] === 1;
    else {
      const point = text.codePointAt(at) as number;
      if (point > 0xffff) size = 2;
      inWord = LETTER_OR_DIGIT.test(String.fromCodePoint(point));
    }
    if (inWord) {
      if (start < 0) start = at;
    } else if (start >= 0) {
      if (!letterOrDigitBefore(text, start)) fn(start, at);
      start = -1;
    }
    at += size;
  }
  if (start >= 0 && !letterOrDigitBefore(text, start)) fn(start, text.length);
}

/** The postings of the tokens that start with `prefix`: a run of dict's, and fresh ones. */
function prefixPostings(index: ItemIndex, prefix: string): Posting[] {
  const lo = lowerBound(index, prefix);
  // From lo on, the tokens that start with the prefix come first.
  let end = lo;
  let hi = index.starts.length - 1;
  while (end < hi) {
    const mid = (end + hi) >>> 1;
    if (startsWith(index, mid, prefix)) end = mid + 1;
    else hi = mid;
  }
  const found = index.postings.slice(lo, end);
  if (index.fresh.size > 0) {
    const fresh = freshTokens(index);
    let at = 0;
    let top = fresh.length;
    while (at < top) {
      const mid = (at + top) >>> 1;
      if (fresh[mid] < prefix) at = mid + 1;
      else top = mid;
    }
    for (; at < fresh.length && fresh[at].startsWith(prefix); at++) found.push(index.fresh.get(fresh[at]) as Posting);
  }
  return found;
}

function startsWith(index: ItemIndex, i: number, prefix: string): boolean {
  const from = index.starts[i];
  if (index.starts[i + 1] - from < prefix.length) return false;
  for (let j = 0; j < prefix.length; j++) if (index.dict.charCodeAt(from + j) !== prefix.charCodeAt(j)) return false;
  return true;
}

/** The posting of exactly this token, if it is one. */
function tokenPosting(index: ItemIndex, token: string): Posting[] {
  const fresh = index.fresh.get(token);
  if (fresh !== undefined) return [fresh];
  const at = findToken(index, token);
  return at < 0 ? [] : [index.postings[at]];
}

/** A condition on an item: it is in one of these postings. `cost`: their items in all. */
interface Term {
  postings: Posting[];
  cost: number;
}

function term(postings: Posting[]): Term {
  let cost = 0;
  for (const p of postings) cost += typeof p === 'number' ? 1 : p[0];
  return { postings, cost };
}

/**
 * What the index knows of a word: the terms every item it matches meets, and whether that is
 * also enough (else each candidate's text is checked); undefined when the index cannot help (a
 * word with no letter or digit, or with a lone surrogate: every text is checked).
 */
function wordTerms(index: ItemIndex, word: string): { terms: Term[]; exact: boolean } | undefined {
  const runs: { start: number; end: number }[] = [];
  let start = -1;
  for (let at = 0; at < word.length; ) {
    const point = word.codePointAt(at) as number;
    if (point >= 0xd800 && point <= 0xdfff) return undefined;
    const inWord = point < 0x80 ? ASCII_LETTER_OR_DIGIT[point] === 1 : LETTER_OR_DIGIT.test(String.fromCodePoint(point));
    if (inWord && start < 0) start = at;
    if (!inWord && start >= 0) {
      runs.push({ start, end: at });
      start = -1;
    }
    at += point > 0xffff ? 2 : 1;
  }
  if (start >= 0) runs.push({ start, end: word.length });
  if (runs.length === 0) return undefined;
  // Where the word occurs in a text, each of its runs starts a token there (the first because no
  // letter or digit precedes the word, the others because the word's own separators do); a run
  // the word goes on after is that whole token, the last one, when it ends the word, a prefix of it.
  const terms = runs.map(({ start: s, end: e }) => {
    const run = word.slice(s, e);
    return term(e === word.length ? prefixPostings(index, run) : tokenPosting(index, run));
  });
  return { terms, exact: runs.length === 1 && runs[0].start === 0 && runs[0].end === word.length };
}

/** The scratch array, long enough for every item. */
function scratch(index: ItemIndex): Uint32Array {
  if (index.scratch.length < index.count) index.scratch = new Uint32Array(index.count + (index.count >> 2));
  return index.scratch;
}

function nextMark(index: ItemIndex): number {
  const n = index.count;
  if (index.marks.length < n) {
    index.marks = new Uint32Array(n + (n >> 2));
    index.mark = 0;
  }
  if (index.mark === 0xffffffff) {
    index.marks.fill(0);
    index.mark = 0;
  }
  return ++index.mark;
}

/** Marks the items of the term's tokens with a new mark, which it returns. */
function markTerm(index: ItemIndex, t: Term): number {
  const mark = nextMark(index);
  const { marks } = index;
  for (const p of t.postings) {
    if (typeof p === 'number') marks[p] = mark;
    else for (let j = p[0]; j >= 1; j--) marks[p[j]] = mark;
  }
  return mark;
}

/** The items of a term, ascending, without repeats: a posting's own items, or in the scratch array. */
function termItems(index: ItemIndex, t: Term): Uint32Array {
  if (t.postings.length === 0) return new Uint32Array(0);
  if (t.postings.length === 1) {
    const p = t.postings[0];
    return typeof p === 'number' ? Uint32Array.of(p) : p.subarray(1, p[0] + 1);
  }
  const n = index.count;
  if (t.cost * 8 < n) {
    // Few items: gather and sort them rather than walk every item's mark.
    const all = new Uint32Array(t.cost);
    let m = 0;
    for (const p of t.postings) {
      if (typeof p === 'number') all[m++] = p;
      else for (let j = 1; j <= p[0]; j++) all[m++] = p[j];
    }
    all.sort();
    let out = 0;
    for (let i = 0; i < m; i++) if (out === 0 || all[i] !== all[out - 1]) all[out++] = all[i];
    return all.subarray(0, out);
  }
  const mark = markTerm(index, t);
  const { marks } = index;
  const out = scratch(index);
  let m = 0;
  for (let k = 0; k < n; k++) if (marks[k] === mark) out[m++] = k;
  return out.subarray(0, m);
}

function inPosting(p: number | Uint32Array, k: number): boolean {
  if (typeof p === 'number') return p === k;
  let lo = 1;
  let hi = p[0] + 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (p[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo <= p[0] && p[lo] === k;
}

/**
 * The items of `items` that meet the term, in the scratch array (in place when they are there
 * already: an item is written at or before where it was read): each looked up in the term's
 * postings, or all of those marked, whichever reads less.
 */
function narrow(index: ItemIndex, items: Uint32Array, t: Term): Uint32Array {
  const out = items.buffer === index.scratch.buffer ? items : scratch(index);
  let m = 0;
  if (items.length * t.postings.length * 8 < t.cost) {
    for (const k of items) {
      for (const p of t.postings) {
        if (inPosting(p, k)) {
          out[m++] = k;
          break;
        }
      }
    }
  } else {
    const mark = markTerm(index, t);
    const { marks } = index;
    for (const k of items) if (marks[k] === mark) out[m++] = k;
  }
  return out.subarray(0, m);
}

/**
 * The items each of whose `wanted` words starts a word of the item's text (wordsStartWords over
 * each item's itemSearchText). A page needs only the count and its own seqs: a word in every item
 * is 100,000 matches, never turned into seqs all at once.
 */
export function matchingItemSeqs(store: Store, wanted: readonly string[]): ItemMatches {
  const index = itemIndex(store);
  const terms: Term[] = [];
  // The words the index can only narrow down: each candidate's text is checked for them.
  const checked: string[] = [];
  // (An empty word starts every text.)
  for (const word of new Set(wanted)) {
    if (word === '') continue;
    const known = wordTerms(index, word);
    if (known) terms.push(...known.terms);
    if (!known || !known.exact) checked.push(word);
  }
  // The rarest term first: the others then only narrow its items.
  terms.sort((a, b) => a.cost - b.cost);
  let items: Uint32Array | undefined;
  for (const t of terms) {
    items = items === undefined ? termItems(index, t) : narrow(index, items, t);
    if (items.length === 0) break;
  }
  const { seqs } = index;
  if (checked.length === 0 || items?.length === 0) {
    const found = items;
    if (found === undefined) return { count: index.count, seqs: (from, to) => Array.from(seqs.subarray(from, Math.min(to, index.count))) };
    return { count: found.length, seqs: (from, to) => Array.from(found.subarray(from, to), (k) => seqs[k]) };
  }
  const matching: number[] = [];
  const keep = (seq: number, text: string) => {
    if (wordsStartWords(checked, text)) matching.push(seq);
  };
  if (items === undefined) eachItemText(store, -1, keep);
  else eachTextOf(store, Array.from(items, (k) => seqs[k]), keep);
  return { count: matching.length, seqs: (from, to) => matching.slice(from, to) };
}
