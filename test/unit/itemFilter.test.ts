// The /items filter (src/shared/itemFilter.ts): query strings read strictly, and the word search
// that runs over every item agreeing with the plain rule it is an optimisation of.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { itemSearchText, itemsQueryString, itemWords, parseItemsQueryString, wordsMatch, wordsStartWords } from '../../src/shared/itemFilter';
import { searchWords } from '../../src/shared/logFilter';

describe('item filter', () => {
  it('reads state (comma-separated or repeated), q, outcome and the page, and writes them back', () => {
    const request = parseItemsQueryString('state=held,running&state=failed&q=build%2042&outcome=pending&limit=5&offset=10');
    assert.deepEqual(request, { filter: { outcome: 'pending', states: ['held', 'running', 'failed'], q: 'build 42' }, limit: 5, offset: 10 });
    assert.deepEqual(parseItemsQueryString(itemsQueryString(request.filter, { limit: 5, offset: 10 })), request);
    assert.deepEqual(parseItemsQueryString('q=%20--%20').filter, {}, 'a q without words filters nothing');
  });

  it('refuses what it does not know, saying what is allowed', () => {
    assert.throws(() => parseItemsQueryString('state=sleeping'), /Parameter state has an unknown state "sleeping"; allowed \(comma-separated or repeated\): waiting, scheduled, running, backoff, held, blocked, launched, failed, starting, ready\./);
    assert.throws(() => parseItemsQueryString('state=held,'), /unknown state ""/);
    assert.throws(() => parseItemsQueryString('q=a&q=b'), /given 2 times/);
    assert.throws(() => parseItemsQueryString(`q=${'a '.repeat(33)}`), /33 words; a search takes at most 32/);
    assert.throws(() => parseItemsQueryString('name=x'), /Unknown parameter "name"; allowed parameters: outcome, state, q, source, order, limit, offset\./);
  });

  it('finds words that start words of the id, name, command or args, in any order and case', () => {
    const item = { id: 'build-42', name: 'Nightly Export', command: '/usr/bin/node', args: ['-e', 'process.exit(3)'] };
    const find = (q: string) => wordsStartWords(searchWords(q), itemSearchText(item));
    assert.ok(find('build 42'));
    assert.ok(find('EXPORT night'));
    assert.ok(find('node exit'));
    assert.ok(!find('xport'));
    assert.ok(!find('build 43'));
  });

  it('the search over the text answers as splitting it into words does, for any text', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'B', 'é', 'İ', '𝐀', '1', ' ', '-', '_', '.', 'ß', 'ﬁ', '😀'), maxLength: 12 });
    fc.assert(
      fc.property(text, text, fc.array(text, { maxLength: 3 }), text, (id, name, args, q) => {
        const item = { id, name, command: 'cmd', args };
        const wanted = searchWords(q);
        assert.equal(wordsStartWords(wanted, itemSearchText(item)), wordsMatch(wanted, itemWords(item)), JSON.stringify({ item, q }));
      }),
      { numRuns: 2000, seed: 20261123 },
    );
  });
});
