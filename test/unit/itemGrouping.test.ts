// The Items view folds a template's occurrences into one row (src/extension/views/itemGrouping.ts).
import assert from 'node:assert/strict';
import type { ItemSummary } from '../../src/shared/api';
import { foldOccurrences, occurrenceOf } from '../../src/extension/views/itemGrouping';

function item(id: string): ItemSummary {
  return { id, name: id.split('@')[0], outcome: 'launched', phase: 'done', attempts: 1, maxAttempts: 3, nextAttemptAt: null, source: 'q.json', updatedAt: '2026-11-28T10:00:00.000Z', lastError: null, state: 'launched' };
}

describe('Items view: occurrences folded under their template', () => {
  it('reads the template and the time from a schedule\'s and a watched item\'s occurrence ids, and nothing from others', () => {
    assert.deepEqual(occurrenceOf('nightly@2026-11-24T02:00Z'), { templateId: 'nightly', at: '2026-11-24T02:00Z' });
    assert.deepEqual(occurrenceOf('lint:1@2026-11-24T10:15:02.120Z'), { templateId: 'lint:1', at: '2026-11-24T10:15:02.120Z' });
    assert.equal(occurrenceOf('build-42'), undefined);
    assert.equal(occurrenceOf('nightly@tomorrow'), undefined);
  });

  it('folds two or more occurrences where the first stood, in the list\'s order; a single one stays a row', () => {
    const list = ['a@2026-11-28T10:03Z', 'plain', 'b@2026-11-28T10:02Z', 'a@2026-11-28T10:02Z', 'other', 'a@2026-11-28T10:01Z'].map(item);
    const entries = foldOccurrences(list);
    assert.deepEqual(
      entries.map((e) => (e.kind === 'item' ? e.item.id : `${e.templateId}: ${e.items.map((i) => i.id).join(', ')}`)),
      ['a: a@2026-11-28T10:03Z, a@2026-11-28T10:02Z, a@2026-11-28T10:01Z', 'plain', 'b@2026-11-28T10:02Z', 'other'],
    );
    assert.deepEqual(foldOccurrences([]), []);
  });
});
