// The /items filter, one model for every side (as logFilter.ts is for /logs): the API server reads
// it from a query string, the engine runs it against the store, and clients (Find Item…) write its
// query strings with the same code.
import { ITEM_STATES, type ItemOutcome, type ItemState } from './api';
import { searchParam, searchWords } from './logFilter';
import { DEFAULT_LIMIT, InvalidParameterError, MAX_LIMIT, codePoints, integerParam, manyOf, oneOf, parseParams, single } from './queryParams';

export const ITEMS_PARAMS = ['outcome', 'state', 'q', 'source', 'order', 'limit', 'offset'] as const;
/**
 * The orders /items lists in: `discovery` (the default), `launch` (the order the engine will launch
 * them: the due ones as dispatch takes them, then the others by when they become due) and `recent`
 * (the most recently changed first: a launched item by when its last attempt ended).
 */
export const ITEM_ORDERS = ['discovery', 'launch', 'recent'] as const;
export type ItemOrder = (typeof ITEM_ORDERS)[number];
export const MAX_OFFSET = 1_000_000_000;
/**
 * Longer than any queue file's path relative to its folder in practice, and short enough that a
 * request carrying it, percent-encoded, stays under Node's 16 KiB header limit.
 */
export const MAX_SOURCE_LENGTH = 512;
const OUTCOMES = ['launched', 'pending', 'failed'] as const;

/** Which items to list. Every field given narrows the choice; `{}` is every item. */
export interface ItemFilter {
  outcome?: ItemOutcome;
  /** Items in any of these states; absent or empty: every state. */
  states?: ItemState[];
  /** Free text: every one of its searchWords must start a word of the item's id, name, command or args. */
  q?: string;
  /**
   * Items from this queue file, as the engine names it (`source`: the path relative to its
   * workspace folder): what the editor's CodeLens asks for the file it shows.
   */
  source?: string;
}

export interface ItemsRequest {
  filter: ItemFilter;
  limit: number;
  offset: number;
  /** Absent: discovery order. */
  order?: ItemOrder;
}

/**
 * The words an item is found by: those of its id, name, command and args, split as log messages
 * are (runs of letters and digits, lower-cased), so `q=build 42` finds id `build-42`.
 */
export function itemWords(item: { id: string; name: string; command: string; args: readonly string[] }): string[] {
  return searchWords([item.id, item.name, item.command, ...item.args].join(' '));
}

/** True when every word of `wanted` (searchWords of q) starts one of `have` (itemWords). */
export function wordsMatch(wanted: readonly string[], have: readonly string[]): boolean {
  return wanted.every((w) => have.some((h) => h.startsWith(w)));
}

/** The text an item is searched in, lower-cased: `wordsStartWords` over it is `wordsMatch` over itemWords. */
export function itemSearchText(item: { id: string; name: string; command: string; args: readonly string[] }): string {
  return [item.id, item.name, item.command, ...item.args].join(' ').toLowerCase();
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * True when every word of `wanted` (lower-case letters and digits, from searchWords) starts a word
 * of the lower-cased `text`: it occurs where no letter or digit precedes it. The same answer as
 * splitting `text` into words, without building them: /items?q= runs it over every item.
 */
export function wordsStartWords(wanted: readonly string[], text: string): boolean {
  return wanted.every((w) => {
    for (let at = text.indexOf(w); at >= 0; at = text.indexOf(w, at + 1)) {
      if (at === 0) return true;
      // The character before, whole even when it is outside the Basic Multilingual Plane.
      const low = text.charCodeAt(at - 1);
      const before = low >= 0xdc00 && low <= 0xdfff && at >= 2 ? text.slice(at - 2, at) : text[at - 1];
      if (!LETTER_OR_DIGIT.test(before)) return true;
    }
    return false;
  });
}

/**
 * Reads an /items query string strictly; throws InvalidParameterError naming what is wrong.
 * `state` takes one or several states, comma-separated or repeated, as `action` does on /logs.
 */
export function parseItemsQueryString(queryString: string): ItemsRequest {
  const params = parseParams(queryString, ITEMS_PARAMS);
  const filter: ItemFilter = {};
  const outcome = oneOf(params, 'outcome', OUTCOMES);
  if (outcome) filter.outcome = outcome;
  const states = manyOf(params, 'state', ITEM_STATES, 'state');
  if (states) filter.states = states;
  const search = searchParam(params);
  // A q of no words (punctuation only) matches every item: no search at all.
  if (search && search.words > 0) filter.q = search.q;
  const source = single(params, 'source');
  if (source !== undefined) {
    if (source === '' || codePoints(source) > MAX_SOURCE_LENGTH) {
      throw new InvalidParameterError(`Parameter source must be a queue file's path relative to its workspace folder (1 to ${MAX_SOURCE_LENGTH} characters), as items' "source" gives it.`);
    }
    filter.source = source;
  }
  const order = oneOf(params, 'order', ITEM_ORDERS);
  const limit = integerParam(params, 'limit', 1, MAX_LIMIT, DEFAULT_LIMIT);
  const offset = integerParam(params, 'offset', 0, MAX_OFFSET, 0);
  return order === undefined || order === 'discovery' ? { filter, limit, offset } : { filter, limit, offset, order };
}

/** The /items query string of a filter and page, as parseItemsQueryString reads it back. */
export function itemsQueryString(filter: ItemFilter, page: { limit?: number; offset?: number; order?: ItemOrder } = {}): string {
  const out = new URLSearchParams();
  if (filter.outcome) out.set('outcome', filter.outcome);
  if (filter.states?.length) out.set('state', filter.states.join(','));
  if (filter.q !== undefined && searchWords(filter.q).length > 0) out.set('q', filter.q);
  if (filter.source !== undefined) out.set('source', filter.source);
  if (page.order !== undefined && page.order !== 'discovery') out.set('order', page.order);
  if (page.limit !== undefined) out.set('limit', String(page.limit));
  if (page.offset !== undefined) out.set('offset', String(page.offset));
  return out.toString();
}
