// /logs pages are written from the stored rows without re-parsing each entry's details, and
// entries already written are served from a cache: the text must be exactly what serialising the
// entries would give, for any message and any details, whether the entries come from the cache
// or from the database.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ENTRY_CACHE_SIZE, queryLogs } from '../../src/core/logQuery';
import { Store } from '../../src/core/store';
import { LOG_LEVELS, type LogEntry } from '../../src/shared/api';

describe('log pages: the JSON written from stored rows', () => {
  it('equals JSON.stringify(entries) for arbitrary messages, item ids and details (property)', async () => {
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
        { numRuns: 300 },
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
