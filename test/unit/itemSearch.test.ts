// /items?q= matches words with an index of the items' words kept in memory (src/core/itemSearch.ts):
// the answer must be wordsStartWords over each item's itemSearchText, for any text and any word,
// before and after items are discovered or redefined while the index is kept.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { itemIndexCurrent, itemIndexReady, matchingItemSeqs, type BuildStep, type ItemMatches } from '../../src/core/features/search';
import { definitionHash, type ItemDefinition } from '../../src/core/intake/items';
import { Store } from '../../src/core/store';
import { itemSearchText, wordsStartWords } from '../../src/shared/itemFilter';
import { searchWords } from '../../src/shared/logFilter';

// Pieces that make words start inside others (re/report), cross the Basic Multilingual Plane,
// case-fold (É, İ), and separators of several kinds, newlines included.
const PIECES = ['report', 're', 'nightly', 'Night', 'é', 'É', 'İ', 'ı', '𝒜b', '日本', '3', '42', '0', '-', ' ', '_', '/', '\n', '.', 'x'];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 6 }).map((p) => p.join(''));
const QUERIES = ['re', 'report', 'night', 'nightly', 'é', 'e', 'i', 'ı', '𝒜', 'b', '日', '本', '3', '42', 'x', 're 3', 'nightly x', 'zebra'];

/** Every match's seq. */
function all(found: ItemMatches): number[] {
  return found.seqs(0, found.count);
}

/** A turn of the event loop: a build in the background takes one step. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** One chunk of a few items per step: a build of a few dozen items takes many turns. */
const SMALL_STEPS: BuildStep = { items: 3, ms: 0 };

function definition(id: string, name: string, command: string, args: string[]): ItemDefinition {
  return { id, name, command, args, shell: false, cwd: '/tmp', env: {}, timeoutMs: 1000, maxAttempts: 1, runAt: null };
}

/** What a test varies of an item. */
interface ItemText {
  name: string;
  command: string;
  args: string[];
}

/** An in-memory store and the items written to it, as a queue file's ingest writes them. */
interface ItemStore {
  store: Store;
  /** Each item's definition as it is now, by seq - 1. */
  defs: ItemDefinition[];
  /** Discovers an item: the next seq, id `item-<n>` unless given. */
  add: (i: ItemText, id?: string) => void;
  /** Redefines the item of seq `at` + 1. */
  redefine: (at: number, i: ItemText) => void;
}

/** Runs `fn` with a new in-memory store of items, closed afterwards whether `fn` throws or not. */
async function itemStore(fn: (items: ItemStore) => void | Promise<void>): Promise<void> {
  const { store } = await Store.open({ storageDir: null });
  const defs: ItemDefinition[] = [];
  const items: ItemStore = {
    store,
    defs,
    add: (i, id = `item-${defs.length}`) => {
      const def = definition(id, i.name, i.command, i.args);
      defs.push(def);
      store.mutate('item_insert', [def.id, def.name, 'queue/q.json', JSON.stringify(def), definitionHash(def), 1, null, 1, 1, 1]);
    },
    redefine: (at, i) => {
      const def = definition(defs[at].id, i.name, i.command, i.args);
      defs[at] = def;
      store.mutate('item_update', [def.name, 'queue/q.json', JSON.stringify(def), definitionHash(def), 1, null, 0, 1, 2, def.id]);
    },
  };
  try {
    await fn(items);
  } finally {
    store.close();
  }
}

describe('item search index', function () {
  // The properties run hundreds of cases over a real store: 5 s on a quiet machine, and up to 17 s
  // beside the rest of the suite's workers, too near mocha's default 20 s.
  this.timeout(120_000);
  it('match exactly the items wordsStartWords matches, as items are added and redefined (property)', async () => {
    const item = fc.record({ name: text, command: text, args: fc.array(text, { maxLength: 3 }) });
    await fc.assert(
      fc.asyncProperty(
        fc.array(item, { maxLength: 25 }),
        fc.array(item, { maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), item), { maxLength: 5 }),
        fc.constantFrom(...QUERIES),
        (first, added, redefined, q) =>
          itemStore(({ store, defs, add, redefine }) => {
            const expected = () => defs.flatMap((d, seq) => (wordsStartWords(searchWords(q), itemSearchText(d)) ? [seq + 1] : []));
            first.forEach((i) => add(i));
            assert.deepEqual(all(matchingItemSeqs(store, searchWords(q))), expected());
            added.forEach((i) => add(i));
            assert.deepEqual(all(matchingItemSeqs(store, searchWords(q))), expected(), 'after items were added');
            for (const [n, i] of redefined) if (defs.length > 0) redefine(n % defs.length, i);
            assert.deepEqual(all(matchingItemSeqs(store, searchWords(q))), expected(), 'after items were redefined');
          }),
      ),
      { numRuns: 300 },
    );
  });

  it('a word in every item narrows nothing, alone or beside others, until an item without it comes (property)', async () => {
    // A big batch's common word ("nightly" in every name) is left out of the search rather than
    // walked: the answer must not change, whether the other words are rare, common or absent, and
    // must narrow again once an item without the word is added or an item is redefined without it.
    const rest = fc.array(fc.constantFrom(...PIECES, 'weekly', 'daily'), { maxLength: 4 }).map((p) => p.join(' '));
    const queries = [['nightly'], ['night'], ['nightly', 'report'], ['report', 'nightly'], ['nightly', 'weekly', 'daily'], ['nightly', 'zebra'], ['nig', 're']];
    await fc.assert(
      fc.asyncProperty(fc.array(rest, { minLength: 1, maxLength: 30 }), rest, fc.nat(), (names, later, at) =>
        itemStore(({ store, defs, add, redefine }) => {
          const check = (when: string) => {
            for (const q of queries) {
              const expected = defs.flatMap((d, seq) => (wordsStartWords(q, itemSearchText(d)) ? [seq + 1] : []));
              const found = matchingItemSeqs(store, q);
              assert.equal(found.count, expected.length, `${when}: count of ${JSON.stringify(q)}`);
              assert.deepEqual(all(found), expected, `${when}: ${JSON.stringify(q)}`);
            }
          };
          names.forEach((n) => add({ name: `nightly ${n}`, command: 'true', args: [] }));
          check('every item holds "nightly"');
          add({ name: later, command: 'true', args: [] });
          check('an item without "nightly" added');
          redefine(at % names.length, { name: later, command: 'true', args: [] });
          check('an item redefined without "nightly"');
        }),
      ),
      { numRuns: 200 },
    );
  });

  it('match exactly wordsStartWords for any words, punctuation and odd characters included, as items are added and redefined (property)', async () => {
    // matchingItemSeqs takes words as given, not only searchWords' runs of letters and digits:
    // words made here from item texts (a prefix of a token, "bench-012345", a word that starts or
    // ends with punctuation) and from pieces with combining marks, astral letters and digits, an
    // astral symbol, and (in definitions only: the store keeps id and name as UTF-8) lone surrogates.
    const ODD = ['e\u0301', '\u0301', '𝒜', '𝟙', '😀', 'ß', 'ǅ', '٣', 'Ⅻ', 'ﬁ', '\u00a0'];
    const LONE = ['\ud835', '\udc00', 'a\udc00b', '\udc00\udc00'];
    const piece = fc.constantFrom(...PIECES, ...ODD, 'bench', '012345', '0123', '45', 'a-b', '--');
    const plain = fc.array(piece, { maxLength: 6 }).map((p) => p.join(''));
    const any = fc.array(fc.oneof(piece, fc.constantFrom(...LONE)), { maxLength: 6 }).map((p) => p.join(''));
    const item = fc.record({ name: plain, command: any, args: fc.array(any, { maxLength: 3 }) });
    // A query word: a piece of some item's text (which item, where, how long), or made of pieces.
    const word = fc.oneof(
      fc.record({ item: fc.nat(), at: fc.nat(), length: fc.integer({ min: 1, max: 12 }) }),
      fc.array(fc.oneof(piece, fc.constantFrom(...LONE)), { minLength: 1, maxLength: 3 }).map((p) => p.join('')),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(item, { maxLength: 30 }),
        fc.array(item, { maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), item), { maxLength: 5 }),
        fc.array(word, { minLength: 1, maxLength: 3 }),
        (first, added, redefined, spec) =>
          itemStore(({ store, defs, add, redefine }) => {
            const check = (when: string) => {
              const texts = defs.map(itemSearchText);
              const words = spec.map((w) => {
                if (typeof w === 'string') return w.toLowerCase();
                const text = texts.length === 0 ? 'x' : texts[w.item % texts.length];
                const at = w.at % text.length;
                return text.slice(at, at + w.length) || 'x';
              });
              const expected = texts.flatMap((t, k) => (wordsStartWords(words, t) ? [k + 1] : []));
              const found = matchingItemSeqs(store, words);
              assert.equal(found.count, expected.length, `${when}: count of ${JSON.stringify(words)}`);
              // A page, as /items reads one, past the end included.
              assert.deepEqual(found.seqs(1, 4), expected.slice(1, 4), `${when}: a page of ${JSON.stringify(words)}`);
              assert.deepEqual(all(found), expected, `${when}: ${JSON.stringify(words)}`);
              const q = words.join(' ');
              const split = texts.flatMap((t, k) => (wordsStartWords(searchWords(q), t) ? [k + 1] : []));
              assert.deepEqual(all(matchingItemSeqs(store, searchWords(q))), split, `${when}: searchWords(${JSON.stringify(q)})`);
            };
            first.forEach((i) => add(i));
            check('first items');
            added.forEach((i) => add(i));
            check('after items were added');
            for (const [n, i] of redefined) if (defs.length > 0) redefine(n % defs.length, i);
            check('after items were redefined');
          }),
      ),
      { numRuns: 300 },
    );
  });

  it('match exactly wordsStartWords over many items sharing words, rare and common (property)', async () => {
    // Enough items that a word's tokens are merged or sorted, and candidates looked up or marked,
    // each way: which one depends on how many items each token and each word has.
    const vocabulary = ['build', 'builder', 'b', 'report', 'nightly', 'night', 'a1', 'a10', 'a100', 'x-y', 'é', 'ü', '𝒜1'];
    const items = fc.array(
      fc.record({ words: fc.array(fc.nat(vocabulary.length + 40), { minLength: 1, maxLength: 5 }), sep: fc.constantFrom(' ', '-', '/', '.') }),
      { minLength: 100, maxLength: 400 },
    );
    // A number beyond the vocabulary stands for a word of its own (`w17`): most tokens have few items.
    const wordOf = (n: number) => (n < vocabulary.length ? vocabulary[n] : `w${n}`);
    const query = fc.array(fc.oneof(fc.constantFrom(...vocabulary, 'bu', 'a', 'a1', 'w1', 'w', 'n', 'x-', '-y', 'x-y', 'zz'), fc.nat(vocabulary.length + 40).map(wordOf)), {
      minLength: 1,
      maxLength: 3,
    });
    await fc.assert(
      fc.asyncProperty(items, fc.array(query, { minLength: 1, maxLength: 5 }), (list, queries) =>
        itemStore(({ store, defs, add }) => {
          const insert = (from: number, to: number) =>
            store.batch(() => list.slice(from, to).forEach((i, k) => add({ name: i.words.map(wordOf).join(i.sep), command: 'run', args: [] }, `it-${from + k}`)));
          // Most items, searched; then the rest, whose new tokens the index keeps apart until there are many.
          const most = Math.floor(list.length * 0.9);
          for (const [known, when] of [[most, 'most items'], [list.length, 'all items']] as const) {
            insert(known === most ? 0 : most, known);
            for (const words of queries) {
              const expected = defs.flatMap((d, k) => (wordsStartWords(words, itemSearchText(d)) ? [k + 1] : []));
              const found = matchingItemSeqs(store, words);
              assert.equal(found.count, expected.length, `${when}: count of ${JSON.stringify(words)}`);
              // A page, as /items reads one, past the end included.
              assert.deepEqual(found.seqs(1, 4), expected.slice(1, 4), `${when}: a page of ${JSON.stringify(words)}`);
              assert.deepEqual(all(found), expected, `${when}: ${JSON.stringify(words)}`);
            }
          }
        }),
      ),
      { numRuns: 60 },
    );
  });

  it('finds a word first seen since the last search, by a prefix or whole, one such word or several', () =>
    itemStore(({ store, add }) => {
      // The id's words are the name's first word and `item`: an item adds no other new word.
      const insert = (name: string) => add({ name, command: 'make', args: [] }, `item-${name.split(' ')[0]}`);
      for (let i = 0; i < 40; i++) insert(`${i} nightly report`);
      assert.equal(matchingItemSeqs(store, ['nightly']).count, 40);
      // One new word (the index keeps it apart from the others until there are many), then two more.
      insert('zeppelin');
      assert.deepEqual(all(matchingItemSeqs(store, ['zep'])), [41]);
      assert.deepEqual(all(matchingItemSeqs(store, ['zeppelin'])), [41]);
      insert('zebra zeppelins');
      assert.deepEqual(all(matchingItemSeqs(store, ['ze'])), [41, 42]);
      assert.deepEqual(all(matchingItemSeqs(store, ['zeppelin'])), [41, 42]);
      assert.deepEqual(all(matchingItemSeqs(store, ['zeb', 'item'])), [42]);
    }));

  it('read in several chunks, finds every item and each one alone', () =>
    itemStore(({ store, add }) => {
      // More items than one chunk of reading holds (2,000), and not a multiple of it.
      const count = 4_321;
      store.batch(() => {
        for (let i = 0; i < count; i++) add({ name: `nightly report ${i}`, command: 'make', args: ['--part', String(i)] }, `build-${i}`);
      });
      assert.equal(matchingItemSeqs(store, ['nightly']).count, count);
      assert.deepEqual(matchingItemSeqs(store, ['nightly']).seqs(4_000, 4_400), Array.from({ length: 321 }, (_, i) => 4_001 + i), 'a page at the end');
      for (const i of [0, 1_999, 2_000, 2_001, 4_000, count - 1]) {
        assert.deepEqual(all(matchingItemSeqs(store, searchWords(`build-${i} report`))), [i + 1], `item ${i}`);
      }
    }));

  it('a build in steps, while items are added and redefined between its steps, ends current and matches exactly wordsStartWords (property)', async () => {
    const item = fc.record({ name: text, command: text, args: fc.array(text, { maxLength: 3 }) });
    const change = fc.oneof(
      fc.record({ add: item }),
      fc.record({ redefine: fc.tuple(fc.nat(), item) }),
      fc.constant({ turn: true as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(item, { maxLength: 40 }), fc.array(change, { maxLength: 15 }), fc.constantFrom(...QUERIES), (first, changes, q) =>
        itemStore(async ({ store, defs, add, redefine }) => {
          first.forEach((i) => add(i));
          const build = itemIndexReady(store, SMALL_STEPS);
          let settled = false;
          let changedAfter = false;
          void build?.then(() => (settled = true));
          for (const c of changes) {
            if ('turn' in c) {
              await turn();
              continue;
            }
            changedAfter ||= settled;
            if ('add' in c) add(c.add);
            else if (defs.length > 0) redefine(c.redefine[0] % defs.length, c.redefine[1]);
          }
          await build;
          // Changes made before the build ended are in the index the build leaves: no search reads the rest.
          if (!changedAfter) assert.equal(itemIndexCurrent(store), true, 'current once the build is over');
          const expected = defs.flatMap((d, seq) => (wordsStartWords(searchWords(q), itemSearchText(d)) ? [seq + 1] : []));
          assert.deepEqual(all(matchingItemSeqs(store, searchWords(q))), expected);
        }),
      ),
      { numRuns: 300 },
    );
  });

  it('a build in steps reads items discovered and redefined meanwhile, and searches that come meanwhile wait for the same build', () =>
    itemStore(async ({ store, add, redefine }) => {
      const insert = (id: string, name: string) => add({ name, command: 'make', args: [] }, id);
      for (let i = 0; i < 60; i++) insert(`item-${i}`, `nightly report ${i}`);
      const build = itemIndexReady(store, SMALL_STEPS);
      assert.ok(build, 'no index yet: a build');
      assert.equal(itemIndexReady(store, SMALL_STEPS), build, 'a second search waits for the same build');
      let settled = false;
      void build.then(() => (settled = true));
      for (let t = 0; t < 5; t++) await turn();
      assert.equal(settled, false, 'still building after 5 steps of 3 items');
      assert.equal(itemIndexCurrent(store), false);
      // Item 0 was read by the first step: redefined, it must not be found by its old words.
      redefine(0, { name: 'zeppelin', command: 'make', args: [] });
      await turn();
      insert('item-60', 'zebra nightly');
      await turn();
      assert.equal(settled, false);
      await build;
      assert.equal(itemIndexCurrent(store), true, 'the build ends current');
      assert.equal(itemIndexReady(store, SMALL_STEPS), undefined, 'nothing to wait for once built');
      assert.deepEqual(all(matchingItemSeqs(store, ['zeppelin'])), [1]);
      assert.deepEqual(all(matchingItemSeqs(store, ['ze'])), [1, 61]);
      assert.equal(matchingItemSeqs(store, ['nightly']).count, 60, 'item 0 no longer, item 60 too');
      assert.deepEqual(all(matchingItemSeqs(store, ['report', '0'])), []);
      // A few items discovered since: read by the search itself, no build to wait for.
      insert('item-61', 'zeppelin two');
      assert.equal(itemIndexReady(store, SMALL_STEPS), undefined);
      assert.equal(itemIndexCurrent(store), false);
      assert.deepEqual(all(matchingItemSeqs(store, ['zeppelin'])), [1, 62]);
      // More than a step's worth: a build again, which extends the index.
      for (let i = 62; i < 70; i++) insert(`item-${i}`, `zeppelin ${i}`);
      const extend = itemIndexReady(store, SMALL_STEPS);
      assert.ok(extend);
      await extend;
      assert.equal(itemIndexCurrent(store), true);
      assert.equal(matchingItemSeqs(store, ['zeppelin']).count, 10);
    }));
});
