// /logs pages are written from the stored rows without re-parsing each entry's details, and
// entries already written are served from a cache: the text must be exactly what serialising the
// entries would give, for any message and any details, whether the entries come from the cache
// or from the database.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ENTRY_CACHE_SIZE, essentialWords, queryLogs } from '../../src/core/reads/logQuery';
import { searchWords } from '../../src/shared/logFilter';
import { Store } from '../../src/core/store';
import { LOG_LEVELS, type LogEntry } from '../../src/shared/api';

describe('log pages: the JSON written from stored rows', () => {
  it('equals JSON.stringify(entries) for arbitrary messages, item ids and details (property)', async function () {
    // Pure computation, 7 s on a quiet machine and up to 18 s on a loaded one: mocha's 20 s default is too close.
    this.timeout(120_000);
    const { store } = await Store.open({ storageDir: null });
    try {
      const entry = fc.record({
        message: fc.string({ unit: 'binary', maxLength: 80 }),
        itemId: fc.option(fc.string({ unit: 'grapheme', maxLength: 20 }), { nil: null }),
        level: fc.integer({ min: 0, max: LOG_LEVELS.length - 1 }),
        details: fc.option(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 })), { nil: null }),
      });
      // What the test inserted, by id: the expected pages are cut from this, independently of the
      // code under test.
      const written: LogEntry[] = [];
      await fc.assert(
        fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 40 }), fc.boolean(), async (entries, limit, asc) => {
          const first = written.length + 1;
          store.batch(() => {
            for (const e of entries) {
              const id = written.length + 1;
              const ts = 1_700_000_000_000 + id * 1_001;
              // As Engine.log stores them: details as JSON.stringify text.
              store.mutate('log_insert', [id, ts, 'launch_failed', e.level, e.message, e.itemId, e.details === null ? null : JSON.stringify(e.details)]);
              written.push({
                id,
                timestamp: new Date(ts).toISOString(),
                action: 'launch_failed',
                level: LOG_LEVELS[e.level],
                message: e.message,
                itemId: e.itemId,
                details: e.details === null ? null : (JSON.parse(JSON.stringify(e.details)) as Record<string, unknown>),
              });
            }
          });
          // asc: the new entries (not cached yet); desc: the newest, partly cached by earlier runs.
          const expected = asc ? written.slice(first - 1, first - 1 + limit) : written.slice(-limit).reverse();
          const page = queryLogs(store, { order: asc ? 'asc' : 'desc', limit, afterId: asc ? first - 1 : undefined });
          const text = page.json!();
          assert.equal(text, JSON.stringify(expected));
          assert.deepEqual(page.entries, expected);
          assert.equal(page.lastId, expected[expected.length - 1]?.id);
          assert.equal(page.hasMore, asc ? entries.length > limit : written.length > limit);
          // The same page again comes from the cache, unchanged.
          assert.equal(queryLogs(store, { order: asc ? 'asc' : 'desc', limit, afterId: asc ? first - 1 : undefined }).json!(), text);
        }),
        // The first example is the case fast-check seed 1474214314 found: a message that starts with
        // U+FEFF came back without it (sql.js's TextDecoder dropped it).
        { numRuns: 300, examples: [[[{ message: '\uFEFFx', itemId: '\uFEFF', level: 3, details: { '\uFEFFk': '\uFEFFv' } }], 5, true]] },
      );
    } finally {
      store.close();
    }
  });
});

describe('log pages: the entry cache', () => {
  it('stays bounded, and pages of evicted and pruned entries are still right', async () => {
    const { store } = await Store.open({ storageDir: null });
    try {
      const total = ENTRY_CACHE_SIZE + 2_500;
      store.batch(() => {
        for (let id = 1; id <= total; id++) {
          store.mutate('log_insert', [id, 1_700_000_000_000 + id, id % 2 ? 'launch_failed' : 'launch_succeeded', 1, `entry ${id}`, null, null]);
        }
      });
      // Reading every entry, oldest first, fills the cache past its size: the oldest are evicted.
      for (let afterId = 0; afterId < total; afterId += 1000) {
        assert.equal(queryLogs(store, { order: 'asc', limit: 1000, afterId }).entries.length, Math.min(1000, total - afterId));
      }
      const oldest = queryLogs(store, { order: 'asc', limit: 3 });
      assert.deepEqual(oldest.entries.map((e) => [e.id, e.message]), [[1, 'entry 1'], [2, 'entry 2'], [3, 'entry 3']]);
      const failed = queryLogs(store, { order: 'desc', limit: 2, actions: ['launch_failed'] });
      assert.deepEqual(failed.entries.map((e) => e.id), [total - 1, total - 3]);
      // Pruned entries leave every page, cached or not.
      store.mutate('logs_prune', [total - 2]);
      const rest = queryLogs(store, { order: 'asc', limit: 10 });
      assert.deepEqual(rest.entries.map((e) => e.id), [total - 1, total]);
      assert.equal(rest.hasMore, false);
    } finally {
      store.close();
    }
  });
});

describe('log pages: word search (q)', () => {
  // Words of every frequency, so that both plans of the search run: the walk through the entries
  // (common words) and the full-text index (rare words), and the switch from one to the other
  // inside one page. Prefixes of each other (exit/exited), and words only the index's tokenizer
  // folds (café, ÉXIT, Straße, a CJK run glued to a word): on those the search must agree with the
  // index exactly.
  const VOCABULARY: [word: string, share: number][] = [
    ['nightly', 0.95],
    ['report', 0.6],
    ['exited', 0.4],
    ['exit', 0.2],
    ['code', 0.5],
    ['launching', 0.1],
    ['attempt-3', 0.05],
    ['failed', 0.02],
    ['quokka', 0.004],
    ['café', 0.01],
    ['ÉXIT', 0.01],
    ['Straße', 0.005],
    ['日本exit', 0.005],
    ['x9', 0.3],
  ];
  const QUERY_WORDS = ['nightly', 'night', 'report', 'exit', 'exited', 'code', 'launch', 'attempt', '3', 'failed', 'quokka', 'cafe', 'café', 'strasse', 'straße', 'x', 'x9', 'zebra', 'e'];
  const ACTIONS = ['launch_failed', 'launch_succeeded', 'item_discovered'] as const;

  /** A deterministic generator, so a failing case is reproduced from fast-check's seed alone. */
  function random(seed: number): () => number {
    let s = seed >>> 0 || 1;
    return () => {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      return (s >>> 0) / 2 ** 32;
    };
  }

  it('pages through exactly the entries the full-text index matches, in order (property)', async function () {
    this.timeout(120_000);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.array(fc.constantFrom(...QUERY_WORDS), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.option(fc.constantFrom(...ACTIONS), { nil: undefined }),
        fc.integer({ min: 1, max: 150 }),
        async (seed, count, words, asc, action, limit) => {
          const { store } = await Store.open({ storageDir: null });
          try {
            const next = random(seed);
            // A different mix of frequencies per case: each word's share scaled by 0…2.
            const scale = VOCABULARY.map(() => next() * 2);
            store.batch(() => {
              for (let id = 1; id <= count; id++) {
                const message = VOCABULARY.filter((_, i) => next() < VOCABULARY[i][1] * scale[i])
                  .map(([w]) => w)
                  .join(next() < 0.5 ? ' ' : ', ');
                store.mutate('log_insert', [id, 1_700_000_000_000 + id, ACTIONS[Math.floor(next() * ACTIONS.length)], 1, message, null, null]);
                store.mutate('log_fts_insert', [id, message]);
              }
            });
            // The reference: the index alone decides, as the engine's only plan did before.
            const where = ['id IN (SELECT docid FROM logs_fts WHERE logs_fts MATCH ?)'];
            const params: (string | number)[] = [essentialWords(words.flatMap(searchWords)).map((t) => `"${t}*"`).join(' ')];
            if (action) {
              where.push('action = ?');
              params.push(action);
            }
            const expected = store.rows(`SELECT id FROM logs WHERE ${where.join(' AND ')} ORDER BY id ${asc ? 'ASC' : 'DESC'}`, params).map((r) => r[0] as number);
            const got: number[] = [];
            let afterId: number | undefined;
            for (let pages = 0; ; pages++) {
              assert.ok(pages <= expected.length, 'the pages never end');
              const page = queryLogs(store, { order: asc ? 'asc' : 'desc', limit, words, ...(action ? { actions: [action] } : {}), ...(afterId === undefined ? {} : { afterId }) });
              const ids = page.entries.map((e) => e.id);
              got.push(...ids);
              assert.equal(page.lastId, ids[ids.length - 1]);
              if (!page.hasMore) break;
              assert.equal(ids.length, limit, 'a page before the last is full');
              afterId = page.lastId;
            }
            assert.deepEqual(got, expected);
          } finally {
            store.close();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
