// /logs pages are written from the stored rows without re-parsing each entry's details: the text
// must be exactly what serialising the entries would give, for any message and any details.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { queryLogs } from '../../src/core/logQuery';
import { Store } from '../../src/core/store';
import { LOG_LEVELS } from '../../src/shared/api';

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
      let nextId = 1;
      await fc.assert(
        fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 40 }), fc.boolean(), async (entries, limit, asc) => {
          const first = nextId;
          store.batch(() => {
            for (const e of entries) {
              const id = nextId++;
              // As Engine.log stores them: details as JSON.stringify text.
              store.mutate('log_insert', [id, 1_700_000_000_000 + id, 'launch_failed', e.level, e.message, e.itemId, e.details === null ? null : JSON.stringify(e.details)]);
            }
          });
          const page = queryLogs(store, { order: asc ? 'asc' : 'desc', limit, afterId: asc ? first - 1 : undefined });
          const text = page.json!();
          assert.equal(text, JSON.stringify(page.entries));
          assert.equal(page.lastId, page.entries[page.entries.length - 1]?.id);
        }),
        { numRuns: 300 },
      );
    } finally {
      store.close();
    }
  });
});
