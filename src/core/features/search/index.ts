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
//
// build.ts fills the index (at once, or in steps between turns of the event loop); query.ts answers
// a search from it; dictionary.ts is its structure and tokens.ts what its tokens are.
export type { ItemMatches } from '../../store/backend';
export { itemIndexCurrent, itemIndexReady, type BuildStep } from './build';
export { matchingItemSeqs } from './query';
