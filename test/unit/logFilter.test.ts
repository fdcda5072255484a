// The shared /logs filter model: what clients write is what the server reads, its words are the
// store's words, and an entry matched locally (a live event in the views) is an entry the engine
// returns for the same filter.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LEVEL_RANK, queryLogs } from '../../src/core/reads/logQuery';
import { Store } from '../../src/core/store';
import { parseLogsQuery } from '../../src/server/params';
import { LOG_ACTIONS, LOG_LEVELS, type LogAction, type LogEntry } from '../../src/shared/api';
import {
  MAX_ITEM_LENGTH,
  MAX_Q_LENGTH,
  isLogFilterActive,
  logsPath,
  logsQueryString,
  matchesLogFilter,
  normalizeLogFilter,
  parseLogsQueryString,
  searchWords,
  type LogFilter,
} from '../../src/shared/logFilter';
import { InvalidParameterError } from '../../src/shared/queryParams';

const BASE_TIME = Date.parse('2024-05-01T00:00:00.000Z');

const isoTime = fc.integer({ min: BASE_TIME - 86_400_000, max: BASE_TIME + 86_400_000 }).map((t) => new Date(t).toISOString());

/** Any filter a client can write: every field optional, text of any kind within the bounds. */
const anyFilter: fc.Arbitrary<LogFilter> = fc.record(
  {
    actions: fc.array(fc.constantFrom(...LOG_ACTIONS), { maxLength: 5 }),
    level: fc.constantFrom(...LOG_LEVELS),
    itemId: fc.string({ minLength: 1, maxLength: MAX_ITEM_LENGTH }),
    since: isoTime,
    until: isoTime,
    q: fc.string({ maxLength: MAX_Q_LENGTH }),
  },
  { requiredKeys: [] },
);

describe('log filter: query strings', () => {
  it('what logsQueryString writes, parseLogsQueryString reads back, normalised (property)', () => {
    fc.assert(
      fc.property(anyFilter, fc.constantFrom('asc', 'desc' as const), fc.integer({ min: 1, max: 1000 }), (filter, order, limit) => {
        const read = parseLogsQueryString(logsQueryString(filter, { order, limit }));
        assert.deepEqual(read, { filter: normalizeLogFilter(filter), order, limit });
        // Normalising twice changes nothing; the server's Link is written by the same function.
        assert.deepEqual(normalizeLogFilter(read.filter), read.filter);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the parameters in the order of the API and leaves out what filters nothing', () => {
    assert.equal(logsPath({}), '/logs?');
    assert.equal(logsPath({ actions: [], q: '  ' }, { limit: 200 }), '/logs?limit=200');
    assert.equal(
      logsQueryString({ q: 'exit code', itemId: 'build-1', actions: ['launch_failed', 'item_failed'], level: 'warn', until: '2024-05-01T00:00:00.000Z' }, { order: 'asc', limit: 5, cursor: 'abc' }),
      'action=launch_failed%2Citem_failed&level=warn&item=build-1&until=2024-05-01T00%3A00%3A00.000Z&q=exit+code&order=asc&limit=5&cursor=abc',
    );
  });

  it('reads defaults, keeps the cursor opaque, and rejects what the API rejects', () => {
    assert.deepEqual(parseLogsQueryString(''), { filter: {}, order: 'desc', limit: 100 });
    assert.deepEqual(parseLogsQueryString('cursor=xyz&order=asc'), { filter: {}, order: 'asc', limit: 100, cursor: 'xyz' });
    assert.deepEqual(parseLogsQueryString('action=launch_failed,item_failed&action=launch_failed').filter, { actions: ['launch_failed', 'item_failed'] });
    assert.deepEqual(parseLogsQueryString('since=2024-05-01T02:00:00%2B02:00').filter, { since: '2024-05-01T00:00:00.000Z' });
    for (const [query, message] of [
      ['levl=warn', /Unknown parameter "levl"/],
      ['action=nope', /unknown action "nope"/],
      ['item=', /item must be an item id of 1 to 256 characters/],
      ['since=2024-02-30T00:00:00Z', /since must be an ISO 8601 date-time/],
      [`q=${'a'.repeat(MAX_Q_LENGTH + 1)}`, /q must be at most 500 characters/],
      ['limit=0', /limit must be an integer from 1 to 1000/],
      ['q=a&q=b', /q was given 2 times/],
    ] as const) {
      assert.throws(() => parseLogsQueryString(query), (err: unknown) => err instanceof InvalidParameterError && message.test(err.message), query);
    }
  });

  it('is active when any field filters something', () => {
    assert.equal(isLogFilterActive({}), false);
    assert.equal(isLogFilterActive({ actions: [], q: ' \t' }), false);
    for (const f of [{ actions: ['item_failed'] as LogAction[] }, { level: 'debug' as const }, { itemId: 'x' }, { since: '2024-05-01T00:00:00.000Z' }, { q: 'x' }]) {
      assert.equal(isLogFilterActive(f), true, JSON.stringify(f));
    }
  });
});

describe('log filter: words', () => {
  it('splits text into lower-cased runs of letters and digits', () => {
    const cases: Array<[string, string[]]> = [
      ['', []],
      ['  \t\n', []],
      ['Exit code 3', ['exit', 'code', '3']],
      ['exit-code', ['exit', 'code']],
      ['build_2/deploy.sh: "done"', ['build', '2', 'deploy', 'sh', 'done']],
      ["don't", ['don', 't']],
      ['СБОРКА упала', ['сборка', 'упала']],
      ['日本語 テスト', ['日本語', 'テスト']],
      ['!!!', []],
    ];
    for (const [text, words] of cases) assert.deepEqual(searchWords(text), words, text);
  });

  it('a local match needs every word of q to start a word of the message', () => {
    const entry: LogEntry = { id: 1, timestamp: '2024-05-01T00:00:00.000Z', action: 'launch_failed', level: 'warn', message: 'Item build-1 exited with code 3', itemId: 'build-1', details: null };
    const yes = ['', 'EXIT code', 'exit-code', 'build 1', 'it', '3 it', '!!!'];
    const no = ['xited', 'code 4', 'build-2', 'exitedx'];
    for (const q of yes) assert.equal(matchesLogFilter({ q }, entry), true, q);
    for (const q of no) assert.equal(matchesLogFilter({ q }, entry), false, q);
    assert.equal(matchesLogFilter({ level: 'error' }, entry), false);
    assert.equal(matchesLogFilter({ level: 'warn', actions: ['launch_failed'], itemId: 'build-1' }, entry), true);
    assert.equal(matchesLogFilter({ since: entry.timestamp, until: '2024-05-01T00:00:00.001Z' }, entry), true, 'since is inclusive');
    assert.equal(matchesLogFilter({ until: entry.timestamp }, entry), false, 'until is exclusive');
  });
});

describe('log filter: the local match agrees with the engine', () => {
  // Words with case, digits, punctuation between them and non-Latin scripts. No diacritics: the
  // store's index folds them ("cafe" finds "café") and the local match does not.
  const VOCABULARY = ['Exit', 'exited', 'code', '3', '30', 'build-1', 'build_2', 'deploy.sh', 'Retry', 'scheduled', 'in', '2000', 'ms', 'СБОРКА', 'сборки', '日本語', "don't", 'disk', 'DISK-full'];
  const SEPARATORS = [' ', ' ', ', ', ' - ', ': ', '/'];
  const ACTIONS: LogAction[] = ['launch_started', 'launch_failed', 'item_failed', 'item_discovered'];
  const ITEMS = ['build-1', 'build-2', null];

  let store: Store;
  const written: LogEntry[] = [];

  before(async () => {
    ({ store } = await Store.open({ storageDir: null }));
    const random = fc.sample(
      fc.record({
        words: fc.array(fc.constantFrom(...VOCABULARY), { minLength: 1, maxLength: 6 }),
        separator: fc.constantFrom(...SEPARATORS),
        action: fc.constantFrom(...ACTIONS),
        level: fc.constantFrom(...LOG_LEVELS),
        itemId: fc.constantFrom(...ITEMS),
        step: fc.constantFrom(0, 500, 1000),
      }),
      { numRuns: 300, seed: 7 },
    );
    let ts = BASE_TIME;
    store.batch(() => {
      for (const r of random) {
        const id = written.length + 1;
        ts += r.step;
        const message = r.words.join(r.separator);
        // As the engine writes an entry: the row, then its words in the text index.
        store.mutate('log_insert', [id, ts, r.action, LEVEL_RANK[r.level], message, r.itemId, null]);
        store.mutate('log_fts_insert', [id, message]);
        written.push({ id, timestamp: new Date(ts).toISOString(), action: r.action, level: r.level, message, itemId: r.itemId, details: null });
      }
    });
  });
  after(() => store.close());

  /** Prefixes of the vocabulary's words in any case, and words that start none of them. */
  const queryWord = fc.oneof(
    fc.tuple(fc.constantFrom(...VOCABULARY), fc.integer({ min: 1, max: 8 }), fc.boolean()).map(([w, n, upper]) => {
      const prefix = w.slice(0, n);
      return upper ? prefix.toUpperCase() : prefix.toLowerCase();
    }),
    fc.constantFrom('xited', 'nothing', 'ode', '-', '!!'),
  );
  const filterOverStore: fc.Arbitrary<LogFilter> = fc.record(
    {
      actions: fc.subarray(ACTIONS),
      level: fc.constantFrom(...LOG_LEVELS),
      itemId: fc.constantFrom('build-1', 'build-2', 'nobody'),
      // Bounds that usually leave some entries between them.
      since: fc.integer({ min: 0, max: 199 }).map((i) => written[i].timestamp),
      until: fc.integer({ min: 100, max: 299 }).map((i) => written[i].timestamp),
      q: fc.tuple(fc.array(queryWord, { minLength: 1, maxLength: 2 }), fc.constantFrom(...SEPARATORS)).map(([words, sep]) => words.join(sep)),
    },
    { requiredKeys: [] },
  );

  it('for any filter, matchesLogFilter selects exactly the entries /logs returns (property)', () => {
    let selective = 0;
    fc.assert(
      fc.property(filterOverStore, (filter) => {
        // The way a client asks: the query string, read by the server, run by the engine.
        const { query } = parseLogsQuery(logsQueryString(filter, { order: 'asc', limit: 1000 }));
        const fromEngine = queryLogs(store, query).entries.map((e) => e.id);
        const local = written.filter((e) => matchesLogFilter(filter, e)).map((e) => e.id);
        assert.deepEqual(local, fromEngine, JSON.stringify(filter));
        if (local.length > 0 && local.length < written.length) selective++;
      }),
      { numRuns: 400, seed: 11 },
    );
    // The check means something only if many filters select some entries but not all.
    assert.ok(selective > 100, `only ${selective} filters selected some entries but not all`);
  });

  it('every word of a message, and every prefix of one, finds that message in the index', () => {
    for (const entry of written.slice(0, 60)) {
      for (const word of searchWords(entry.message)) {
        for (const q of [word, word.slice(0, 1), word.toUpperCase()]) {
          const { query } = parseLogsQuery(logsQueryString({ q }, { order: 'asc', limit: 1000 }));
          assert.ok(queryLogs(store, query).entries.some((e) => e.id === entry.id), `${q} in ${entry.message}`);
        }
      }
    }
  });
});
