// /items?q= matches words in the items' search texts kept in memory (src/core/itemSearch.ts): the
// answer must be wordsStartWords over each item's itemSearchText, for any text, before and after
// items are discovered or redefined while the texts are cached.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { matchingItemSeqs } from '../../src/core/itemSearch';
import { definitionHash, type ItemDefinition } from '../../src/core/items';
import { Store } from '../../src/core/store';
import { itemSearchText, wordsStartWords } from '../../src/shared/itemFilter';
import { searchWords } from '../../src/shared/logFilter';

// Pieces that make words start inside others (re/report), cross the Basic Multilingual Plane,
// case-fold (É, İ), and separators of several kinds, newlines included.
const PIECES = ['report', 're', 'nightly', 'Night', 'é', 'É', 'İ', 'ı', '𝒜b', '日本', '3', '42', '0', '-', ' ', '_', '/', '\n', '.', 'x'];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 6 }).map((p) => p.join(''));
const QUERIES = ['re', 'report', 'night', 'nightly', 'é', 'e', 'i', 'ı', '𝒜', 'b', '日', '本', '3', '42', 'x', 're 3', 'nightly x', 'zebra'];

function definition(id: string, name: string, command: string, args: string[]): ItemDefinition {
  return { id, name, command, args, shell: false, cwd: '/tmp', env: {}, timeoutMs: 1000, maxAttempts: 1, runAt: null };
}

describe('item search texts', () => {
  it('match exactly the items wordsStartWords matches, as items are added and redefined (property)', async () => {
    const item = fc.record({ name: text, command: text, args: fc.array(text, { maxLength: 3 }) });
    await fc.assert(
      fc.asyncProperty(
        fc.array(item, { maxLength: 25 }),
        fc.array(item, { maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), item), { maxLength: 5 }),
        fc.constantFrom(...QUERIES),
        async (first, added, redefined, q) => {
          const { store } = await Store.open({ storageDir: null });
          try {
            const defs: ItemDefinition[] = [];
            const insert = (i: { name: string; command: string; args: string[] }) => {
              const def = definition(`item-${defs.length}`, i.name, i.command, i.args);
              defs.push(def);
              store.mutate('item_insert', [def.id, def.name, 'queue/q.json', JSON.stringify(def), definitionHash(def), 1, null, 1, 1, 1]);
            };
            const expected = () => defs.flatMap((d, seq) => (wordsStartWords(searchWords(q), itemSearchText(d)) ? [seq + 1] : []));
            first.forEach(insert);
            assert.deepEqual(matchingItemSeqs(store, searchWords(q)), expected());
            added.forEach(insert);
            assert.deepEqual(matchingItemSeqs(store, searchWords(q)), expected(), 'after items were added');
            for (const [n, i] of redefined) {
              if (defs.length === 0) break;
              const at = n % defs.length;
              const def = definition(defs[at].id, i.name, i.command, i.args);
              defs[at] = def;
              store.mutate('item_update', [def.name, 'queue/q.json', JSON.stringify(def), definitionHash(def), 1, null, 0, 1, 2, def.id]);
            }
            assert.deepEqual(matchingItemSeqs(store, searchWords(q)), expected(), 'after items were redefined');
          } finally {
            store.close();
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('read in several chunks, finds every item and each one alone', async () => {
    const { store } = await Store.open({ storageDir: null });
    try {
      // More items than one chunk of reading holds (2,000), and not a multiple of it.
      const count = 4_321;
      store.batch(() => {
        for (let i = 0; i < count; i++) {
          const def = definition(`build-${i}`, `nightly report ${i}`, 'make', ['--part', String(i)]);
          store.mutate('item_insert', [def.id, def.name, 'queue/q.json', JSON.stringify(def), definitionHash(def), 1, null, 1, 1, 1]);
        }
      });
      assert.equal(matchingItemSeqs(store, ['nightly']).length, count);
      for (const i of [0, 1_999, 2_000, 2_001, 4_000, count - 1]) {
        assert.deepEqual(matchingItemSeqs(store, searchWords(`build-${i} report`)), [i + 1], `item ${i}`);
      }
    } finally {
      store.close();
    }
  });
});
