// The word index's structure: a dictionary of tokens (most of them in one sorted string, the newest
// in a Map until they are merged in) with each token's posting list of items. How it is filled is
// build.ts's; how a search reads it, query.ts's.

/** Token → its items, ascending: one item's k (most tokens: ids' numbers), or a Uint32Array [count, k1, k2, …] with room to grow. */
export type Posting = number | Uint32Array;

export interface ItemIndex {
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

export function emptyIndex(updates: number): ItemIndex {
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

/** Compares token i of dict with `s` as `<` orders strings: negative when the token comes first. */
export function compareToken(index: ItemIndex, i: number, s: string): number {
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
export function lowerBound(index: ItemIndex, s: string): number {
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
export function findToken(index: ItemIndex, token: string): number {
  const at = lowerBound(index, token);
  return at < index.starts.length - 1 && compareToken(index, at, token) === 0 ? at : -1;
}

export function addPosting(index: ItemIndex, token: string, k: number, known: Map<string, number>): void {
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
export function freeze(index: ItemIndex): void {
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

export function freshTokens(index: ItemIndex): string[] {
  // Array.prototype.sort compares strings by UTF-16 code units, as compareToken does.
  index.freshSorted ??= [...index.fresh.keys()].sort();
  return index.freshSorted;
}

export function trimPostings(index: ItemIndex): void {
  const { postings } = index;
  for (let id = 0; id < postings.length; id++) {
    const p = postings[id];
    if (typeof p !== 'number' && p.length > p[0] + 1 + (p[0] >> 3)) postings[id] = p.slice(0, p[0] + 1 + (p[0] >> 3));
  }
}

/** The postings of the tokens that start with `prefix`: a run of dict's, and fresh ones. */
export function prefixPostings(index: ItemIndex, prefix: string): Posting[] {
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
export function tokenPosting(index: ItemIndex, token: string): Posting[] {
  const fresh = index.fresh.get(token);
  if (fresh !== undefined) return [fresh];
  const at = findToken(index, token);
  return at < 0 ? [] : [index.postings[at]];
}
