// /logs: every parameter, every 400, cursor paging through the Link header, and a property test.
import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ServerResponse } from 'node:http';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { TurnQueue } from '../../src/server/turnQueue';
import { essentialWords } from '../../src/core/reads/logQuery';
import { LOG_ACTIONS, LOG_LEVELS, type LogEntry } from '../../src/shared/api';
import { encodeCursor, parseIsoDateTime } from '../../src/server/params';
import { OpenApiChecker, request, type HttpResult } from './support/http';
import { TestEngine } from './support/testEngine';

describe('server: /logs', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;
  let all: LogEntry[];

  before(async () => {
    engine = new TestEngine();
    engine.seedLogs(537);
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
    all = engine.queryLogs({ order: 'asc', limit: 100_000 }).entries;
  });
  after(() => server.close());

  async function logs(query: string): Promise<HttpResult> {
    const res = await request(server.url, `/logs${query === '' ? '' : '?' + query}`);
    api.assertBody('/logs', res.status, res.json);
    return res;
  }

  async function ok(query: string): Promise<LogEntry[]> {
    const res = await logs(query);
    assert.equal(res.status, 200, `${query}: ${res.text}`);
    return res.json as LogEntry[];
  }

  async function bad(query: string, mentions: RegExp): Promise<void> {
    const res = await logs(query);
    assert.equal(res.status, 400, `${query} should be 400, got ${res.status}`);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const body = res.json as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'bad_request');
    assert.match(body.error.message, mentions, `${query}: ${body.error.message}`);
  }

  const lastQuery = () => engine.queries[engine.queries.length - 1];

  it('defaults: newest first, 100 entries, a Link to the next page', async () => {
    const res = await logs('');
    const entries = res.json as LogEntry[];
    assert.equal(entries.length, 100);
    assert.deepEqual(entries.map((e) => e.id), all.slice(-100).reverse().map((e) => e.id));
    assert.match(String(res.headers.link), /^<http:\/\/127\.0\.0\.1:\d+\/logs\?order=desc&limit=100&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    assert.deepEqual(lastQuery(), { order: 'desc', limit: 100 });
  });

  it('action: one, comma-separated, repeated, and both; duplicates collapse', async () => {
    for (const query of ['action=launch_failed', 'action=launch_failed,item_failed', 'action=launch_failed&action=item_failed', 'action=launch_failed,item_failed&action=launch_failed&action=source_error']) {
      const wanted = new Set(new URLSearchParams(query).getAll('action').flatMap((a) => a.split(',')));
      const entries = await ok(query + '&limit=1000');
      assert.deepEqual(entries.map((e) => e.id), all.filter((e) => wanted.has(e.action)).map((e) => e.id).reverse(), query);
      assert.deepEqual([...lastQuery().actions!].sort(), [...wanted].sort());
    }
  });

  it('level is a minimum level', async () => {
    for (const [i, level] of LOG_LEVELS.entries()) {
      const entries = await ok(`level=${level}&limit=1000`);
      assert.deepEqual(entries.map((e) => e.id), all.filter((e) => LOG_LEVELS.indexOf(e.level) >= i).map((e) => e.id).reverse(), level);
    }
  });

  it('item filters by item id', async () => {
    const entries = await ok('item=build-2&limit=1000');
    assert.ok(entries.length > 0);
    assert.deepEqual(entries.map((e) => e.id), all.filter((e) => e.itemId === 'build-2').map((e) => e.id).reverse());
    assert.deepEqual(await ok('item=nobody'), []);
  });

  it('since is inclusive, until exclusive, with any offset normalised to toISOString', async () => {
    const mid = all[200].timestamp;
    const later = all[300].timestamp;
    const entries = await ok(`since=${mid}&until=${later}&order=asc&limit=1000`);
    assert.deepEqual(entries.map((e) => e.id), all.filter((e) => e.timestamp >= mid && e.timestamp < later).map((e) => e.id));
    assert.equal(entries[0].timestamp, mid);
    assert.ok(entries.every((e) => e.timestamp !== later));
    // The same instants written with an offset, a lower-case t/z and fewer digits.
    await ok('since=2024-05-01T02:00:00%2B02:00&until=2024-05-01t00:00:01.5z&limit=1');
    assert.equal(lastQuery().since, '2024-05-01T00:00:00.000Z');
    assert.equal(lastQuery().until, '2024-05-01T00:00:01.500Z');
  });

  it('parses and normalises ISO 8601 date-times strictly', () => {
    assert.equal(parseIsoDateTime('2024-05-01T12:00:00Z'), '2024-05-01T12:00:00.000Z');
    assert.equal(parseIsoDateTime('2024-05-01T12:00Z'), '2024-05-01T12:00:00.000Z');
    assert.equal(parseIsoDateTime('2024-05-01T12:00:00.123456789Z'), '2024-05-01T12:00:00.123Z');
    assert.equal(parseIsoDateTime('2024-05-01T00:30:00-01:30'), '2024-05-01T02:00:00.000Z');
    assert.equal(parseIsoDateTime('2024-02-29T00:00:00Z'), '2024-02-29T00:00:00.000Z');
    assert.equal(parseIsoDateTime('0050-01-01T00:00:00Z'), '0050-01-01T00:00:00.000Z');
    // Everything RFC 3339 allows (the OpenAPI document's date-time) is accepted.
    assert.equal(parseIsoDateTime('2024-05-01t12:00:00.1234567890z'), '2024-05-01T12:00:00.123Z');
    assert.equal(parseIsoDateTime('2016-12-31T23:59:60Z'), '2016-12-31T23:59:59.999Z', 'a leap second is the last millisecond of its minute');
    assert.equal(parseIsoDateTime('2017-01-01T00:59:60.5+01:00'), '2016-12-31T23:59:59.999Z');
    assert.equal(parseIsoDateTime('0000-01-01T00:00:00+01:00'), '0000-01-01T00:00:00.000Z', 'before year 0000: the first instant');
    assert.equal(parseIsoDateTime('9999-12-31T23:30:00-01:00'), '9999-12-31T23:59:59.999Z', 'after year 9999: the last instant');
    for (const bad of ['2023-02-29T00:00:00Z', '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z', '2024-05-01T24:00:00Z', '2024-05-01T12:60:00Z', '2024-05-01T12:00:60Z', '2024-05-01T23:59:60+01:00', '2024-05-01', '2024-05-01T12:00:00', 'yesterday', '1714564800000', '2024-05-01T12:00:00+25:00', ' 2024-05-01T12:00:00Z']) {
      assert.equal(parseIsoDateTime(bad), undefined, bad);
    }
  });

  it('q: bounds the words, not only the length; repeated and implied words cost nothing', async () => {
    const many = await request(server.url, `/logs?q=${Array(250).fill('d').join('+')}`);
    assert.equal(many.status, 400);
    assert.match(String((many.json as { error: { message: string } }).error.message), /q has 250 words; a search takes at most 32/);
    await ok(`q=${Array.from({ length: 32 }, (_, i) => `w${i}`).join('+')}`);
    // The engine searches with the words that decide: each once, none that starts another.
    assert.deepEqual(essentialWords(['d', 'd', 'exit', 'exited', 'code', 'co']), ['d', 'exited', 'code']);
  });

  it('q: every word must start a word of the message, case-insensitive', async () => {
    const entries = await ok('q=EXIT%20code&limit=1000');
    assert.ok(entries.length > 0);
    assert.ok(entries.every((e) => /exited with code/.test(e.message)));
    assert.deepEqual(lastQuery().words, ['exit', 'code']);
    assert.deepEqual(await ok('q=xited&limit=1000'), []);
    await ok('q=exit+code');
    assert.deepEqual(lastQuery().words, ['exit', 'code']);
    await ok('q=%20%20');
    assert.equal(lastQuery().words, undefined);
  });

  it('order=asc returns oldest first; limit bounds the page', async () => {
    assert.deepEqual((await ok('order=asc&limit=5')).map((e) => e.id), all.slice(0, 5).map((e) => e.id));
    assert.equal((await ok('limit=1')).length, 1);
    assert.equal((await ok('limit=1000')).length, all.length);
  });

  for (const order of ['desc', 'asc'] as const) {
    it(`walks every page in ${order} order by following Link, with no duplicate or gap`, async () => {
      for (const [filters, limit] of [['', 37], ['action=launch_failed,launch_succeeded,item_discovered', 11], ['level=warn&q=build', 50], ['item=build-1', 1000], ['item=build-3', 1]] as const) {
        const expected = all
          .filter((e) => engine.queryLogs({ ...parse(filters), order, limit: 100_000 }).entries.some((m) => m.id === e.id))
          .map((e) => e.id);
        if (order === 'desc') expected.reverse();
        const seen: number[] = [];
        let path: string | undefined = `/logs?${filters}${filters ? '&' : ''}order=${order}&limit=${limit}`;
        let pages = 0;
        while (path) {
          const res = await request(server.url, path);
          assert.equal(res.status, 200, `${path}: ${res.text}`);
          api.assertBody('/logs', 200, res.json);
          const page = res.json as LogEntry[];
          assert.ok(page.length <= limit);
          seen.push(...page.map((e) => e.id));
          pages++;
          const link = res.headers.link;
          if (link === undefined) break;
          const match = /^<([^>]+)>; rel="next"$/.exec(String(link));
          assert.ok(match, `Link: ${link}`);
          const next = new URL(match[1]);
          assert.equal(next.origin, server.url);
          assert.equal(page.length, limit, 'a page with a next link is full');
          path = next.pathname + next.search;
        }
        assert.deepEqual(seen, expected, `${filters} limit=${limit}`);
        assert.equal(new Set(seen).size, seen.length);
        assert.equal(pages, Math.max(1, Math.ceil(expected.length / limit)), `${filters}: pages`);
      }
    });
  }

  function parse(filters: string) {
    const p = new URLSearchParams(filters);
    return {
      ...(p.get('action') ? { actions: p.get('action')!.split(',') as LogEntry['action'][] } : {}),
      ...(p.get('level') ? { minLevel: p.get('level') as LogEntry['level'] } : {}),
      ...(p.get('item') ? { itemId: p.get('item')! } : {}),
      ...(p.get('q') ? { words: p.get('q')!.split(' ') } : {}),
    };
  }

  it('the Link URL keeps the filters, normalised', async () => {
    const res = await logs('action=launch_failed&action=launch_started&level=info&item=build-1&since=2024-05-01T02:00:00%2B02:00&q=Build&limit=2');
    const next = new URL(/^<([^>]+)>/.exec(String(res.headers.link))![1]);
    const params = next.searchParams;
    assert.equal(params.get('action'), 'launch_failed,launch_started');
    assert.equal(params.get('level'), 'info');
    assert.equal(params.get('item'), 'build-1');
    assert.equal(params.get('since'), '2024-05-01T00:00:00.000Z');
    assert.equal(params.get('q'), 'Build');
    assert.equal(params.get('order'), 'desc');
    assert.equal(params.get('limit'), '2');
    assert.ok(params.get('cursor'));
  });

  it('new entries do not disturb a walk in progress (keyset cursor)', async () => {
    const first = await logs('limit=10');
    const ids = (first.json as LogEntry[]).map((e) => e.id);
    engine.addLog({ message: 'arrived during paging' });
    const next = new URL(/^<([^>]+)>/.exec(String(first.headers.link))![1]);
    const second = (await request(server.url, next.pathname + next.search)).json as LogEntry[];
    assert.equal(second[0].id, ids[ids.length - 1] - 1);
    all = engine.queryLogs({ order: 'asc', limit: 100_000 }).entries;
  });

  it('400 for every kind of bad parameter, naming the problem and what is allowed', async () => {
    await bad('levle=warn', /Unknown parameter "levle".*allowed parameters: action, level, item, since, until, q, order, limit, cursor/);
    await bad('Action=launch_failed', /Unknown parameter "Action"/);
    await bad('action=launch_exploded', /unknown action "launch_exploded".*engine_started/);
    await bad('action=launch_failed,', /unknown action ""/);
    await bad('action=', /unknown action ""/);
    await bad('level=verbose', /level must be one of: debug, info, warn, error/);
    await bad('level=', /level must be one of/);
    await bad('level=warn&level=error', /level was given 2 times/);
    await bad('item=', /item must be an item id/);
    await bad(`item=${'x'.repeat(300)}`, /item must be/);
    await bad('item=a&item=b', /item was given 2 times/);
    await bad('since=yesterday', /since must be an ISO 8601 date-time/);
    await bad('since=2024-02-30T00:00:00Z', /since must be/);
    await bad('until=2024-05-01', /until must be/);
    await bad('since=2024-05-01T12:00:00+02:00', /%2B/);
    await bad('since=2024-05-01T00:00:00Z&since=2024-05-02T00:00:00Z', /since was given 2 times/);
    await bad(`q=${'a'.repeat(501)}`, /q must be at most 500 characters/);
    await bad('q=a&q=b', /q was given 2 times/);
    await bad('order=newest', /order must be one of: asc, desc/);
    await bad('order=ASC', /order must be one of/);
    for (const limit of ['0', '1001', '-1', '1.5', 'abc', '', '1e2', '010', ' 5', '99999999999999999999']) {
      await bad(`limit=${encodeURIComponent(limit)}`, /limit must be an integer from 1 to 1000/);
    }
    await bad('limit=5&limit=5', /limit was given 2 times/);
    await bad('cursor=', /cursor is not a valid cursor/);
    await bad('cursor=abc!', /cursor is not a valid cursor/);
    await bad('cursor=eyJhZnRlciI6MX0', /cursor is not a valid cursor/); // {"after":1}: no order
    await bad(`cursor=${Buffer.from('{"after":-1,"order":"desc"}').toString('base64url')}`, /cursor is not a valid cursor/);
    await bad(`cursor=${Buffer.from('{"after":1.5,"order":"desc"}').toString('base64url')}`, /cursor is not a valid cursor/);
    await bad(`cursor=${Buffer.from('{"after":1,"order":"desc","x":1}').toString('base64url')}`, /cursor is not a valid cursor/);
    await bad(`cursor=${Buffer.from('[1]').toString('base64url')}`, /cursor is not a valid cursor/);
    await bad(`cursor=${Buffer.from('not json').toString('base64url')}`, /cursor is not a valid cursor/);
    await bad(`cursor=${encodeCursor({ after: 5, order: 'desc' })}&order=asc`, /cursor belongs to order=desc/);
    await bad(`cursor=${encodeCursor({ after: 5, order: 'desc' })}&cursor=${encodeCursor({ after: 6, order: 'desc' })}`, /cursor was given 2 times/);
  });

  it('a valid cursor from another page of the same order is accepted', async () => {
    const entries = await ok(`cursor=${encodeCursor({ after: 10, order: 'desc' })}`);
    assert.deepEqual(entries.map((e) => e.id), [9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert.deepEqual(await ok(`order=asc&limit=2&cursor=${encodeCursor({ after: 10, order: 'asc' })}`).then((e) => e.map((x) => x.id)), [11, 12]);
  });

  it('property: random query strings only ever give 200 with entries or 400 with a JSON error', async function () {
    this.timeout(120_000);
    const names = ['action', 'level', 'item', 'since', 'until', 'q', 'order', 'limit', 'cursor', 'x', 'Level', ''];
    const values = fc.oneof(
      fc.constantFrom(...LOG_ACTIONS, ...LOG_LEVELS, 'asc', 'desc', '1', '100', '1000', '0', '1001', '-5', '2024-05-01T00:00:00Z', '2024-05-01T00:00:00%2B01:00', '2024-02-30T00:00:00Z', encodeCursor({ after: 100, order: 'desc' }), encodeCursor({ after: 3, order: 'asc' }), 'build-1', 'exit code'),
      fc.string({ maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.stringMatching(/^[A-Za-z0-9_,%+-]{0,40}$/),
    );
    const pair = fc.tuple(fc.constantFrom(...names), values).map(([k, v]) => `${encodeURIComponent(k)}=${/%/.test(v) ? v : encodeURIComponent(v)}`);
    const rawPiece = fc.oneof(
      fc.string({ maxLength: 40 }).map((s) => s.replace(/[#\s]/g, '')),
      fc.constantFrom('%', '%zz', 'q=%E0%A4%A', 'limit=%31%30', 'a[b]=1', 'action[]=item_failed', '=x', '&&', 'level', '%00=1'),
    );
    const query = fc.oneof(
      fc.array(pair, { maxLength: 6 }).map((pairs) => pairs.join('&')),
      fc.array(fc.oneof(pair, rawPiece), { maxLength: 4 }).map((parts) => parts.join('&')),
    );
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const path = '/logs?' + encodeURI(q.replace(/[\uD800-\uDFFF]/g, '?')).replace(/%25([0-9A-Fa-f]{2})/g, '%$1');
        const res = await request(server.url, path);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) {
          assert.ok(Array.isArray(res.json), path);
          api.assertBody('/logs', 200, res.json);
        } else {
          assert.equal(res.status, 400, `${path} → ${res.status} ${res.text}`);
          api.assertBody('/logs', 400, res.json);
          assert.equal((res.json as any).error.code, 'bad_request');
        }
      }),
      { numRuns: 2000 },
    );
    // Both outcomes were really exercised.
    assert.ok((statuses.get(200) ?? 0) > 50 && (statuses.get(400) ?? 0) > 50, JSON.stringify([...statuses]));
  });
});

describe('server: TurnQueue (how /logs and /items pages are answered)', () => {
  /** A job's stand-in for a ServerResponse: the queue only reads `destroyed`. */
  const response = (destroyed = false) => ({ destroyed }) as ServerResponse;

  it('runs one job per event-loop turn, in arrival order, so timers run between them', async () => {
    // A 1 ms timer chain counts the loop's timer phases; each job takes 3 ms. Jobs run back to back
    // in one turn would see the same count.
    const ticks = { n: 0, on: true };
    const tick = () => {
      ticks.n++;
      if (ticks.on) setTimeout(tick, 1);
    };
    setTimeout(tick, 1);
    const queue = new TurnQueue();
    const seen: [number, number][] = [];
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 10; i++) {
        queue.run(response(), assert.fail, () => {
          seen.push([i, ticks.n]);
          const until = performance.now() + 3;
          while (performance.now() < until) {
            // a 3 ms page
          }
          if (i === 9) resolve();
        });
      }
    });
    ticks.on = false;
    assert.deepEqual(seen.map(([i]) => i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'in arrival order');
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i][1] > seen[i - 1][1], `a timer ran between jobs ${i - 1} and ${i}: ${JSON.stringify(seen)}`);
  });

  it('skips the jobs of clients that have gone, and hands a thrown error to the router', async () => {
    const queue = new TurnQueue();
    const ran: string[] = [];
    const errors: unknown[] = [];
    await new Promise<void>((resolve) => {
      queue.run(response(true), assert.fail, () => ran.push('gone'));
      queue.run(response(), (e: unknown) => errors.push(e), () => {
        throw new Error('page failed');
      });
      queue.run(response(), assert.fail, () => {
        ran.push('after');
        resolve();
      });
    });
    assert.deepEqual(ran, ['after'], 'the departed client got nothing; the queue went on after the error');
    assert.equal((errors[0] as Error).message, 'page failed');
  });
});
