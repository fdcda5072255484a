// A search of the word index: each word's terms (the postings of the tokens it can start), the
// rarest first, each narrowing the items of the ones before; words the index can only narrow down
// are checked against the candidates' texts.
import { wordsStartWords } from '../../../shared/itemFilter';
import type { Store } from '../../store';
import type { ItemMatches } from '../../store/backend';
import { eachItemText, eachTextOf, itemIndex } from './build';
import { prefixPostings, tokenPosting, type ItemIndex, type Posting } from './dictionary';
import { ASCII_LETTER_OR_DIGIT, LETTER_OR_DIGIT } from './tokens';

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
  // Indexed loops: for-of over a typed array cost ~7 ns an item here, several times these.
  const n = items.length;
  if (n * t.postings.length * 8 < t.cost) {
    for (let i = 0; i < n; i++) {
      const k = items[i];
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
    for (let i = 0; i < n; i++) {
      const k = items[i];
      if (marks[k] === mark) out[m++] = k;
    }
  }
  return out.subarray(0, m);
}

/** Whether one of the term's postings holds every item (postings hold each item once): it narrows nothing. */
function coversAll(index: ItemIndex, t: Term): boolean {
  for (const p of t.postings) if (typeof p === 'number' ? index.count === 1 && p === 0 : p[0] === index.count) return true;
  return false;
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
  // The rarest term first: the others then only narrow its items. A word in every item (a common
  // word of a big batch: "nightly") narrows nothing and is left out rather than walked.
  terms.sort((a, b) => a.cost - b.cost);
  let items: Uint32Array | undefined;
  for (const t of terms) {
    if (coversAll(index, t)) continue;
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
