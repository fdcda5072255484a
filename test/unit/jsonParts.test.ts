// Large JSON answers written in parts (src/shared/jsonParts.ts): the parts must be exactly the
// JSON the answer would be as one string, and each must stay well below V8's large-object size.
import assert from 'node:assert/strict';
import { jsonArrayParts, JSON_PART_CHARS } from '../../src/shared/jsonParts';

describe('jsonArrayParts', () => {
  const entry = (i: number) => ({ id: i, message: `entry ${i} ${'é✓'.repeat(i % 7)} "quoted"`, details: i % 3 ? { n: i } : null });

  for (const count of [0, 1, 2, 150, 1000]) {
    it(`joins ${count} elements into exactly JSON.stringify of the array, and of an object around it`, () => {
      const values = Array.from({ length: count }, (_, i) => entry(i));
      const texts = values.map((v) => JSON.stringify(v));
      assert.equal(jsonArrayParts(texts).join(''), JSON.stringify(values));
      const body = { items: values, total: 12345, limit: 1000, offset: 0 };
      assert.equal(jsonArrayParts(texts, '{"items":', ',"total":12345,"limit":1000,"offset":0}').join(''), JSON.stringify(body));
    });
  }

  it('cuts 1,000 entries of ~300 bytes into parts of about JSON_PART_CHARS, never inside an entry', () => {
    const texts = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: i, text: 'x'.repeat(280) }));
    const parts = jsonArrayParts(texts);
    assert.ok(parts.length > 5, `${parts.length} parts`);
    for (const part of parts) assert.ok(part.length < JSON_PART_CHARS + 400, `a part of ${part.length} characters`);
    // Every part after the first starts with the comma before a whole entry.
    for (const part of parts.slice(1)) assert.match(part, /^,\{"id":/);
  });
});
