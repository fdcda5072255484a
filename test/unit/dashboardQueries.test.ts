// The dashboard's reads (src/extension/dashboard/dashboardQueries.ts): the /logs queries it
// builds, and its paging of log pages and of the launch timeline, against the real HTTP server.
// The reader is a plain HTTP client, with and without the Link-header paging; both must see
// every matching entry exactly once, also where entries share a millisecond across a page break.
import * as assert from 'node:assert/strict';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import type { LogEntry } from '../../src/shared/api';
import type { LogFilter, LogPageToken } from '../../src/shared/webviewProtocol';
import {
  logsQuery,
  MAX_LOG_LIMIT,
  readLogPage,
  readOverview,
  readTimeline,
  toPathAndQuery,
  type DashboardReader,
} from '../../src/extension/dashboard/dashboardQueries';
import { request } from './support/http';
import { TestEngine } from './support/testEngine';

const ALL: LogFilter = { actions: [], level: undefined, q: '' };

/** Reads the API as the extension's connection does: JSON bodies, non-2xx answers rejected. */
function httpReader(base: string, withLink: boolean): DashboardReader & { requests: string[] } {
  const requests: string[] = [];
  async function getWithLink<T>(pathAndQuery: string): Promise<{ body: T; next: string | undefined }> {
    requests.push(pathAndQuery);
    const res = await request(base, pathAndQuery);
    if (res.status !== 200) throw new Error(`${pathAndQuery}: HTTP ${res.status} ${res.text}`);
    const next = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1];
    return { body: res.json as T, next };
  }
  const get = async <T>(pathAndQuery: string): Promise<T> => (await getWithLink<T>(pathAndQuery)).body;
  return withLink ? { requests, get, getWithLink } : { requests, get };
}

function query(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url, 'http://x').searchParams);
}

describe('dashboard queries: logsQuery and toPathAndQuery', () => {
  it('puts each part of the filter into /logs parameters, and leaves out what is empty', () => {
    assert.equal(logsQuery(ALL, 100), '/logs?limit=100');
    const url = logsQuery({ actions: ['launch_failed', 'item_failed'], level: 'warn', q: '  exit code  ' }, 50);
    assert.equal(url.split('?')[0], '/logs');
    assert.deepEqual(query(url), { action: 'launch_failed,item_failed', level: 'warn', q: 'exit code', limit: '50' });
    assert.deepEqual(query(logsQuery({ ...ALL, q: '   ' }, 10)), { limit: '10' });
  });

  it('keeps the limit a whole number the server accepts', () => {
    const limit = (n: number) => query(logsQuery(ALL, n)).limit;
    assert.equal(limit(0), '1');
    assert.equal(limit(-5), '1');
    assert.equal(limit(37.9), '37');
    assert.equal(limit(MAX_LOG_LIMIT), String(MAX_LOG_LIMIT));
    assert.equal(limit(MAX_LOG_LIMIT + 1), String(MAX_LOG_LIMIT));
  });

  it('adds the extra parameters, encoded', () => {
    const url = logsQuery({ ...ALL, q: 'a&b=c' }, 5, { until: '2024-05-01T10:00:00.000+02:00', order: 'asc' });
    assert.deepEqual(query(url), { q: 'a&b=c', limit: '5', until: '2024-05-01T10:00:00.000+02:00', order: 'asc' });
  });

  it('takes the path and query of an absolute or relative Link target', () => {
    assert.equal(toPathAndQuery('http://127.0.0.1:7411/logs?order=desc&limit=100&cursor=abc_-1'), '/logs?order=desc&limit=100&cursor=abc_-1');
    assert.equal(toPathAndQuery('https://engine.example:8443/logs?cursor=x'), '/logs?cursor=x');
    assert.equal(toPathAndQuery('/logs?cursor=y'), '/logs?cursor=y');
    assert.equal(toPathAndQuery('/stats'), '/stats');
  });
});

describe('dashboard queries over the real server', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;

  before(async () => {
    engine = new TestEngine();
    engine.seedLogs(537);
    // A burst in one millisecond, longer than a page: paging by time must get past it.
    const burst = Date.parse(engine.queryLogs({ order: 'desc', limit: 1 }).entries[0].timestamp) + 1000;
    for (let i = 0; i < 60; i++) engine.addLog({ timestamp: new Date(burst).toISOString(), action: 'launch_failed', level: 'error' }, false);
    for (let i = 0; i < 20; i++) engine.addLog({ timestamp: new Date(burst + 1000 + i).toISOString(), action: 'item_discovered' }, false);
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
  });
  after(() => server.close());

  async function allAtOnce(filter: LogFilter): Promise<LogEntry[]> {
    const entries = await httpReader(server.url, false).get<LogEntry[]>(logsQuery(filter, MAX_LOG_LIMIT));
    assert.ok(entries.length < MAX_LOG_LIMIT, 'the expectation must fit in one page');
    return entries;
  }

  async function pageThrough(reader: DashboardReader, filter: LogFilter, limit: number): Promise<LogEntry[][]> {
    const pages: LogEntry[][] = [];
    let token: LogPageToken | undefined;
    do {
      const page = await readLogPage(reader, filter, limit, token);
      pages.push(page.entries);
      token = page.next;
      assert.ok(pages.length < 1000, 'paging does not end');
    } while (token);
    return pages;
  }

  const filters: [string, LogFilter][] = [
    ['everything', ALL],
    ['actions and level', { actions: ['launch_failed', 'item_failed', 'launch_succeeded'], level: 'warn', q: '' }],
    ['text', { actions: [], level: undefined, q: 'build' }],
  ];
  for (const withLink of [true, false]) {
    const how = withLink ? 'by the Link header' : 'by time';
    for (const [what, filter] of filters) {
      for (const limit of [25, 100]) {
        it(`pages ${how} through ${what}, ${limit} at a time: every entry once, newest first`, async () => {
          const expected = await allAtOnce(filter);
          assert.ok(expected.length > limit, 'more than one page');
          const pages = await pageThrough(httpReader(server.url, withLink), filter, limit);
          for (const page of pages.slice(0, -1)) assert.ok(page.length > 0 && page.length <= MAX_LOG_LIMIT);
          assert.deepEqual(pages.flat().map((e) => e.id), expected.map((e) => e.id));
          assert.deepEqual(pages.flat(), expected);
        });
      }
    }
  }

  it('pages by the Link header: every page after the first is the server\'s own next link', async () => {
    const reader = httpReader(server.url, true);
    await pageThrough(reader, ALL, 100);
    assert.ok(reader.requests.length > 1);
    for (const r of reader.requests.slice(1)) assert.ok(query(r).cursor, r);
  });

  it('reads the overview from /status and /health as served', async () => {
    const overview = await readOverview(httpReader(server.url, false));
    const status = (await request(server.url, '/status')).json as { engine: { name: string } };
    assert.equal(overview.status.engine.name, status.engine.name);
    assert.equal(overview.health.status, 'healthy');
    assert.equal(overview.health.checks.database, 'ok');
  });

  it('fails the overview when /status fails', async () => {
    // The server logs the engine's error; kept out of the test output and checked instead.
    const logged: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => logged.push(args);
    engine.failOn = 'status';
    try {
      await assert.rejects(readOverview(httpReader(server.url, false)), /\/status: HTTP 500/);
    } finally {
      engine.failOn = undefined;
      console.error = original;
    }
    assert.equal(logged.length, 1);
  });
});

describe('dashboard queries: the launch timeline', () => {
  const BASE = Date.parse('2024-05-01T00:00:00.000Z');
  // Launch actions among others; seven entries share each millisecond, so page breaks (every
  // 1000 entries) fall inside a millisecond.
  const CYCLE = ['launch_started', 'item_discovered', 'launch_failed', 'launch_started', 'launch_interrupted', 'launch_succeeded'] as const;
  let engine: TestEngine;
  let server: RunningHttpServer;
  let added: LogEntry[];

  before(async () => {
    engine = new TestEngine();
    added = [];
    for (let i = 0; i < 3100; i++) {
      added.push(engine.addLog({ timestamp: new Date(BASE + Math.floor(i / 7)).toISOString(), action: CYCLE[i % CYCLE.length] }, false));
    }
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
  });
  after(() => server.close());

  function expectedSince(since: string) {
    const inRange = added.filter((e) => e.timestamp >= since);
    const times = (actions: string[]) => inRange.filter((e) => actions.includes(e.action)).map((e) => Date.parse(e.timestamp));
    const launches = inRange.filter((e) => e.action !== 'item_discovered' && e.action !== 'launch_succeeded');
    return {
      started: times(['launch_started']),
      failed: times(['launch_failed', 'launch_interrupted']),
      lastId: launches[launches.length - 1].id,
      truncated: false,
    };
  }

  for (const withLink of [true, false]) {
    const how = withLink ? 'by the Link header' : 'by time';
    it(`reads every launch started and failed since a time, across pages, ${how}`, async () => {
      for (const since of [new Date(BASE).toISOString(), added[700].timestamp]) {
        const reader = httpReader(server.url, withLink);
        const timeline = await readTimeline(reader, since);
        const expected = expectedSince(since);
        assert.ok(expected.started.length + expected.failed.length > MAX_LOG_LIMIT, 'more than one page');
        assert.ok(reader.requests.length > 1, 'read in more than one request');
        assert.deepEqual(timeline, expected);
      }
    });
  }

  it('reads nothing when no launch happened since', async () => {
    const after = new Date(BASE + 10 * 60_000).toISOString();
    assert.deepEqual(await readTimeline(httpReader(server.url, false), after), { started: [], failed: [], lastId: -1, truncated: false });
  });
});
