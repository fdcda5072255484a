// /items?q= over the sql.js store. Every item's search text (id, name, command and args, lower-cased:
// itemSearchText) is kept in one string, in discovery order, so a word is looked for with one
// indexOf pass over all items instead of reading and parsing each item's definition per request
// (at 100,000 items that took 0.3-2 s a request). The text of 100,000 items is about 8 MB.
import type { ItemDefinition } from './items';
import type { Store } from './store';
import { itemSearchText } from '../shared/itemFilter';

interface ItemTexts {
  /** Each item's seq, in seq order; its text starts at starts[i] in `text`. */
  seqs: number[];
  starts: number[];
  /** The items' texts, each after a newline: a word never runs from one item into the next. */
  text: string;
  /** store.mutations('item_insert') and ('item_update') when this was read. */
  inserts: number;
  updates: number;
}

const texts = new WeakMap<Store, ItemTexts>();
const TEXT_CHUNK = 2_000;

/** Items' texts, read again when one was redefined and extended by the items discovered since. */
function itemTexts(store: Store): ItemTexts {
  const inserts = store.mutations('item_insert');
  const updates = store.mutations('item_update');
  let cached = texts.get(store);
  if (cached && cached.updates === updates && cached.inserts === inserts) return cached;
  // A redefinition changes a text in the middle: read everything again (queue files rarely change).
  if (!cached || cached.updates !== updates) cached = { seqs: [], starts: [], text: '', inserts: -1, updates };
  // In chunks: the rows of 100,000 items with their definitions, read at once, were ~150 MB of
  // strings alive together, a peak the engine host's RSS kept (docs/PERFORMANCE.md).
  const chunks: string[] = [cached.text];
  let length = cached.text.length;
  for (;;) {
    const after = cached.seqs.length > 0 ? cached.seqs[cached.seqs.length - 1] : -1;
    const rows = store.rows('SELECT seq, id, name, definition FROM items WHERE seq > ? ORDER BY seq LIMIT ?', [after, TEXT_CHUNK]);
    const parts: string[] = [];
    for (const [seq, id, name, definition] of rows) {
      const def = JSON.parse(definition as string) as ItemDefinition;
      const part = `\n${itemSearchText({ id: id as string, name: name as string, command: def.command, args: def.args })}`;
      cached.seqs.push(seq as number);
      cached.starts.push(length + 1);
      parts.push(part);
      length += part.length;
    }
    chunks.push(parts.join(''));
    if (rows.length < TEXT_CHUNK) break;
  }
  cached.text = chunks.join('');
  cached.inserts = inserts;
  texts.set(store, cached);
  return cached;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** Whether a letter or digit precedes `at`: ASCII decided by its code, anything else as wordsStartWords decides it. */
function letterOrDigitBefore(text: string, at: number): boolean {
  const code = text.charCodeAt(at - 1);
  if (code < 0x80) return (code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
  // The character before, whole even when it is outside the Basic Multilingual Plane.
  const before = code >= 0xdc00 && code <= 0xdfff && at >= 2 ? text.slice(at - 2, at) : text[at - 1];
  return LETTER_OR_DIGIT.test(before);
}

/**
 * The seqs of the items each of whose `wanted` words (searchWords) starts a word of the item's
 * text, in seq order: wordsStartWords over each item's itemSearchText, for all items in one pass
 * per word.
 */
export function matchingItemSeqs(store: Store, wanted: readonly string[]): number[] {
  const { seqs, starts, text } = itemTexts(store);
  const n = seqs.length;
  // The longest word first: it is likely the rarest, and the words after it are then looked for
  // only in the texts of the items still in (a Find Item… query is often an id and a common word).
  const words = [...new Set(wanted)].sort((a, b) => b.length - a.length);
  if (words.length === 0) return [...seqs];
  let items = firstWord(text, starts, words[0]);
  for (let k = 1; k < words.length && items.length > 0; k++) {
    const word = words[k];
    items = items.filter((i) => {
      const end = i + 1 < n ? starts[i + 1] - 1 : text.length;
      for (let at = text.indexOf(word, starts[i]); at >= 0 && at + word.length <= end; at = text.indexOf(word, at + 1)) {
        if (!letterOrDigitBefore(text, at)) return true;
      }
      return false;
    });
  }
  return items.map((i) => seqs[i]);
}

/** The indexes of the items whose text has a word starting with `word`, in order: one pass over all texts. */
function firstWord(text: string, starts: number[], word: string): number[] {
  const n = starts.length;
  const items: number[] = [];
  let item = 0;
  for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
    // Occurrences come in order, so the item holding this one is found by walking forward.
    while (item + 1 < n && starts[item + 1] <= at) item++;
    if (letterOrDigitBefore(text, at)) continue;
    items.push(item);
    // Matched: go on at the next item's text.
    if (item + 1 >= n) break;
    at = starts[item + 1] - 1;
  }
  return items;
}
