// The dashboard's log table and chart read /logs page by page by following the server's own
// `Link: <...>; rel="next"` cursors: every entry once, in order, with nothing skipped.
import assert from 'node:assert/strict';
import { readLogPage, readTimeline, type DashboardReader } from '../../src/extension/dashboard/dashboardQueries';
import { nextLink } from '../../src/extension/linkHeader';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import type { LogEntry } from '../../src/shared/api';
import { matchesLogFilter, type LogFilter } from '../../src/shared/logFilter';
import type { LogPageToken } from '../../src/shared/webviewProtocol';
import { TestEngine } from './support/testEngine';

describe('dashboard: reading /logs by its Link cursors', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;
  let all: LogEntry[];
  const requested: string[] = [];

  /** What EngineClient does over HTTP, without VS Code. */
  const reader: DashboardReader = {
    async get<T>(path: string): Promise<T> {
      return (await reader.getWithLink<T>(path)).body;
    },
    async getWithLink<T>(path: string): Promise<{ body: T; next: string | undefined }> {
      requested.push(path);
      const res = await fetch(server.url + path);
      assert.equal(res.status, 200, path);
      return { body: (await res.json()) as T, next: nextLink(res.headers.get('link')) };
    },
    getText(path: string) {
      return Promise.reject(new Error(`the log queries read no text (${path})`));
    },
  };

  before(async () => {
    engine = new TestEngine();
    engine.seedLogs(537);
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    all = engine.queryLogs({ order: 'asc', limit: 100_000 }).entries;
  });
  after(() => server.close());
  beforeEach(() => (requested.length = 0));

  it('reads a Link target', () => {
    assert.equal(nextLink(null), undefined);
    assert.equal(nextLink('<http://h/logs?action=a%2Cb&cursor=x>; rel="next"'), 'http://h/logs?action=a%2Cb&cursor=x');
    assert.equal(nextLink('<http://h/a?x=1,2>; rel="prev", <http://h/b>; rel=next'), 'http://h/b');
    assert.equal(nextLink('<http://h/a>; rel="prev"'), undefined);
  });

  for (const filter of [{}, { actions: ['launch_failed', 'item_discovered'] }, { level: 'warn', q: 'build' }, { itemId: 'build-3' }] as LogFilter[]) {
    it(`pages older entries until the last page, following Link: ${JSON.stringify(filter)}`, async () => {
      const expected = all.filter((e) => matchesLogFilter(filter, e)).map((e) => e.id).reverse();
      const seen: number[] = [];
      let page: LogPageToken | undefined;
      let pages = 0;
      do {
        const result = await readLogPage(reader, filter, 40, page);
        seen.push(...result.entries.map((e) => e.id));
        page = result.next;
        pages++;
        if (page) assert.equal(page.kind, 'link');
      } while (page);
      assert.deepEqual(seen, expected);
      assert.equal(pages, Math.max(1, Math.ceil(expected.length / 40)), 'no empty last page');
      // After the first page, every request is the server's own next URL, cursor and all.
      assert.ok(requested.slice(1).every((p) => /[?&]cursor=/.test(p)), requested.join('\n'));
    });
  }

  for (const limit of [100, 1]) {
    it(`after the table dropped its oldest rows, reads on from the last row kept, then by Link (limit ${limit})`, async () => {
      // A kept row with a newer entry in the same millisecond: the read by time must skip that one
      // (with limit 1 the whole first answer is that one, and it asks again for more).
      const i = all.findIndex((e, k) => k > 250 && all[k + 1].timestamp === e.timestamp);
      const kept = all[i];
      const older = all.slice(0, i).map((e) => e.id).reverse();
      const seen: number[] = [];
      let page: LogPageToken | undefined = { kind: 'before', id: kept.id, timestamp: kept.timestamp };
      while (page) {
        const result = await readLogPage(reader, {}, limit, page);
        seen.push(...result.entries.map((e) => e.id));
        page = result.next;
        if (page) assert.equal(page.kind, 'link');
      }
      assert.deepEqual(seen, older);
    });
  }

  it('refuses a page token that is not a /logs page', async () => {
    await assert.rejects(readLogPage(reader, {}, 10, { kind: 'link', pathAndQuery: '/status' }), /Not a page of the logs/);
    assert.deepEqual(requested, []);
  });

  it('the chart reads every launch attempt since a time, oldest first, across pages', async () => {
    // More than one 1000-entry page of launch attempts.
    const since = new Date(Date.parse(all[all.length - 1].timestamp) + 1).toISOString();
    for (let i = 0; i < 1500; i++) engine.addLog({ action: i % 3 ? 'launch_started' : 'launch_failed', timestamp: since }, false);
    const timeline = await readTimeline(reader, since);
    assert.equal(timeline.started.length, 1000);
    assert.equal(timeline.failed.length, 500);
    assert.equal(timeline.truncated, false);
    assert.equal(timeline.lastId, engine.queryLogs({ order: 'desc', limit: 1 }).entries[0].id);
    assert.equal(requested.length, 2);
    assert.match(requested[1], /cursor=/);
  });
});
