// /events: initial state, live log events, stats throttling, health changes, Last-Event-ID resume,
// HEAD, heartbeats, unsubscribe on close and dropping a client that does not read.
import * as assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import type { LogEntry } from '../../src/shared/api';
import { OpenApiChecker, request, sleep, SseClient } from './support/http';
import { TestEngine } from './support/testEngine';

describe('server: /events', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;
  const open: SseClient[] = [];

  async function events(path = '/events', headers: Record<string, string> = {}): Promise<SseClient> {
    const client = await SseClient.open(server.url, path, headers);
    open.push(client);
    return client;
  }

  /** Validates an event's data against the schema the document lists for it in x-sse-events. */
  function assertEventData(name: string, data: unknown): void {
    const ref = api.document.paths['/events'].get['x-sse-events'][name].$ref as string;
    api.assertComponent(ref.split('/').pop()!, data);
  }

  async function noListenersLeft(): Promise<void> {
    for (let i = 0; i < 100 && engine.listenerCount > 0; i++) await sleep(20);
    assert.equal(engine.listenerCount, 0, 'the hub unsubscribed from the engine');
  }

  beforeEach(async () => {
    engine = new TestEngine();
    server = await startHttpServer(engine, {
      host: '127.0.0.1',
      port: 0,
      events: { healthIntervalMs: 100, heartbeatMs: 150, replayPageSize: 50, maxBufferedBytes: 256 * 1024, stallTimeoutMs: 500 },
    });
    api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
  });
  afterEach(async () => {
    for (const client of open.splice(0)) client.close();
    await server.close();
  });

  it('sends SSE headers, then the current stats and health', async () => {
    const client = await events();
    assert.equal(client.status, 200);
    assert.equal(client.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(client.headers['cache-control'], 'no-store');
    assert.equal(client.headers['x-content-type-options'], 'nosniff');
    assert.equal(client.headers['access-control-allow-origin'], undefined);
    await client.waitFor((e) => e.length >= 2);
    assert.deepEqual(client.events.slice(0, 2).map((e) => e.event), ['stats', 'health']);
    const stats = JSON.parse(client.events[0].data);
    assertEventData('stats', stats);
    assert.deepEqual(stats, engine.overview);
    const health = JSON.parse(client.events[1].data);
    assertEventData('health', health);
    assert.equal(health.status, 'healthy');
    assert.equal(health.version, engine.version);
    assert.equal(client.events[0].id, undefined, 'stats carry no id (it would move Last-Event-ID)');
  });

  it('streams new log entries with their id as the event id', async () => {
    const client = await events();
    await client.waitFor((e) => e.length >= 2);
    const added = [engine.addLog({ action: 'launch_started', itemId: 'a', message: 'Launching a' }), engine.addLog({ action: 'launch_failed', level: 'error', details: { exitCode: 3, text: 'a\nb' } })];
    await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 2);
    const logs = client.named('log');
    assert.deepEqual(logs.map((e) => e.id), added.map((e) => String(e.id)));
    for (const [i, event] of logs.entries()) {
      const entry = JSON.parse(event.data);
      assertEventData('log', entry);
      assert.deepEqual(entry, added[i]);
    }
  });

  it('throttles stats to at most 4 per second and always sends the last change', async () => {
    const client = await events();
    await client.waitFor((e) => e.length >= 2);
    const started = Date.now();
    for (let i = 1; i <= 60; i++) {
      engine.setStats({ totalLaunches: 100 + i });
      await sleep(20);
    }
    const elapsed = Date.now() - started;
    await client.waitFor((e) => e.some((x) => x.event === 'stats' && JSON.parse(x.data).totalLaunches === 160), 2000, 'the last stats');
    await sleep(400); // nothing more is owed
    const stats = client.named('stats');
    const live = stats.length - 1; // the first was sent on connect
    // One per 250 ms window over the burst, plus the trailing one.
    assert.ok(live <= Math.ceil(elapsed / 250) + 1, `${live} stats events in ${elapsed} ms`);
    assert.ok(live >= 2, `expected several stats events while counters changed, got ${live}`);
    assert.equal(JSON.parse(stats[stats.length - 1].data).totalLaunches, 160);
    const totals = stats.map((e) => JSON.parse(e.data).totalLaunches as number);
    assert.deepEqual([...totals].sort((a, b) => a - b), totals, 'in order');
  });

  it('sends at most one stats event per 250 ms even right after connecting', async () => {
    const client = await events();
    engine.setStats({ total: 4, pending: 2 });
    await client.waitFor((e) => e.filter((x) => x.event === 'stats').length >= 2);
    const [first, second] = client.named('stats');
    assert.notDeepEqual(JSON.parse(first.data), JSON.parse(second.data));
    assert.equal(JSON.parse(second.data).total, 4);
  });

  it('sends health when its status changes, from engine events or from the clock alone', async () => {
    const client = await events();
    await client.waitFor((e) => e.length >= 2);
    // No engine event: the periodic re-evaluation notices (stalled depends on the clock).
    engine.healthSnapshot = { status: 'unhealthy', checks: { database: 'ok', engine: 'stalled' } };
    await client.waitFor((e) => e.filter((x) => x.event === 'health').length >= 2, 2000, 'a health change');
    const change = JSON.parse(client.named('health')[1].data);
    assertEventData('health', change);
    assert.equal(change.status, 'unhealthy');
    assert.equal(change.checks.engine, 'stalled');
    // Unchanged health is not repeated.
    await sleep(350);
    assert.equal(client.named('health').length, 2);
    engine.healthSnapshot = { status: 'degraded', checks: { database: 'ok', engine: 'stopped' } };
    engine.setStats({ pending: 5 });
    await client.waitFor((e) => e.filter((x) => x.event === 'health').length >= 3, 2000, 'a second health change');
    assert.equal(JSON.parse(client.named('health')[2].data).status, 'degraded');
  });

  it('replays log entries after Last-Event-ID in pages, then goes live, without gaps or duplicates', async () => {
    engine.seedLogs(180);
    const client = await events('/events', { 'Last-Event-ID': '40' });
    // Entries written while the replay is in progress must appear exactly once, in order.
    await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 10);
    for (let i = 0; i < 25; i++) engine.addLog({ message: `during replay ${i}` });
    await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 180 - 40 + 25, 5000, 'the replay');
    engine.addLog({ message: 'after replay' });
    await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 180 - 40 + 26, 2000, 'a live entry');
    await sleep(100);
    const ids = client.named('log').map((e) => Number(e.id));
    assert.deepEqual(ids, Array.from({ length: 180 - 40 + 26 }, (_, i) => 41 + i));
    for (const event of client.named('log')) assert.equal((JSON.parse(event.data) as LogEntry).id, Number(event.id));
    // The replay asked for ascending pages after the last id sent.
    const replayQueries = engine.queries.filter((q) => q.order === 'asc');
    assert.ok(replayQueries.length >= 3, 'paged');
    assert.ok(replayQueries.every((q) => q.limit === 50 && q.afterId !== undefined));
    assert.deepEqual(client.events.slice(0, 2).map((e) => e.event), ['stats', 'health']);
  });

  it('paces a replay: one page per event-loop turn, so other requests are answered meanwhile', async () => {
    // Before pacing, a reading client on loopback took the whole replay in one turn: 100,000
    // entries held the engine's thread for seconds and /health answered 503.
    engine.seedLogs(3000);
    const turns = countTurns();
    const replayTurns: number[] = [];
    const query = engine.queryLogs.bind(engine);
    engine.queryLogs = (q) => {
      if (q.order === 'asc') replayTurns.push(turns.now);
      return query(q);
    };
    try {
      const client = await events('/events', { 'Last-Event-ID': '0' });
      const health = await request(server.url, '/health');
      assert.equal(health.status, 200);
      assert.ok(replayTurns.length < 3000 / 50, `/health was answered while the replay was under way (${replayTurns.length} pages sent)`);
      await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 3000, 20_000, 'the replay');
    } finally {
      turns.stop();
    }
    assert.ok(replayTurns.length >= 3000 / 50, `paged (${replayTurns.length} queries)`);
    for (let i = 1; i < replayTurns.length; i++) {
      assert.ok(replayTurns[i] > replayTurns[i - 1], `page ${i} was fetched in a later turn than page ${i - 1} (${replayTurns.join(',')})`);
    }
  });

  it('caps the bytes a replay writes in one turn, and still sends every entry once', async () => {
    await server.close();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, events: { replayPageSize: 50, replayTurnBytes: 4096 } });
    for (let i = 0; i < 200; i++) engine.addLog({ message: 'x'.repeat(900), details: { i } }, false);
    const client = await events('/events', { 'Last-Event-ID': '0' });
    await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 200, 20_000, 'the replay');
    assert.deepEqual(client.named('log').map((e) => Number(e.id)), Array.from({ length: 200 }, (_, i) => i + 1));
    const cursors = engine.queries.filter((q) => q.order === 'asc').map((q) => q.afterId!);
    // Each frame is ~1 KB: at most five fit in 4 KB (the fifth starts below the cap).
    for (let i = 1; i < cursors.length; i++) assert.ok(cursors[i] - cursors[i - 1] <= 5, `turn ${i} sent ${cursors[i] - cursors[i - 1]} entries`);
  });

  it('shares one replay budget per turn among clients replaying at once, and each still gets every entry once', async () => {
    // Paced per client only, twenty-five clients replaying at once did twenty-five pages of work in
    // one turn and the engine stopped answering.
    await server.close();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, events: { replayPageSize: 50, replayTurnBytes: 4096 } });
    for (let i = 0; i < 200; i++) engine.addLog({ message: 'x'.repeat(900), details: { i } }, false);
    const turns = countTurns();
    const pagesPerTurn = new Map<number, number>();
    const query = engine.queryLogs.bind(engine);
    engine.queryLogs = (q) => {
      if (q.order === 'asc') pagesPerTurn.set(turns.now, (pagesPerTurn.get(turns.now) ?? 0) + 1);
      return query(q);
    };
    try {
      const clients = await Promise.all(Array.from({ length: 5 }, () => events('/events', { 'Last-Event-ID': '0' })));
      for (const client of clients) {
        await client.waitFor((e) => e.filter((x) => x.event === 'log').length >= 200, 20_000, 'the replay');
        assert.deepEqual(client.named('log').map((e) => Number(e.id)), Array.from({ length: 200 }, (_, i) => i + 1));
      }
    } finally {
      turns.stop();
    }
    // ~1 KB frames, 4 KB a turn: the client served first uses the budget; at most one more page is
    // read in the same turn (by a client that found a little left).
    const most = Math.max(...pagesPerTurn.values());
    assert.ok(most <= 2, `at most two pages were read in one turn, not one per client: ${JSON.stringify([...pagesPerTurn])}`);
  });

  it('accepts lastEventId as a query parameter too; an empty Last-Event-ID starts live', async () => {
    engine.seedLogs(5);
    const byQuery = await events('/events?lastEventId=3');
    await byQuery.waitFor((e) => e.filter((x) => x.event === 'log').length >= 2);
    assert.deepEqual(byQuery.named('log').map((e) => e.id), ['4', '5']);
    const emptyHeader = await events('/events', { 'Last-Event-ID': '' });
    await emptyHeader.waitFor((e) => e.length >= 2);
    await sleep(100);
    assert.equal(emptyHeader.named('log').length, 0);
  });

  it('rejects a bad Last-Event-ID, lastEventId or unknown parameter with a JSON 400', async () => {
    for (const [path, headers] of [
      ['/events', { 'Last-Event-ID': 'abc' }],
      ['/events', { 'Last-Event-ID': '-1' }],
      ['/events?lastEventId=1.5', {}],
      ['/events?lastEventId=1&lastEventId=2', {}],
      ['/events?lastEventId=1', { 'Last-Event-ID': '2' }],
      ['/events?since=now', {}],
    ] as const) {
      const res = await request(server.url, path, { headers });
      assert.equal(res.status, 400, `${path} ${JSON.stringify(headers)}`);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      api.assertBody('/events', 400, res.json);
    }
  });

  it('HEAD /events answers the stream headers without opening a stream', async () => {
    const res = await request(server.url, '/events', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(res.text, '');
    assert.equal(engine.listenerCount, 0);
  });

  it('sends heartbeat comments', async () => {
    const client = await events();
    for (let i = 0; i < 50 && !client.comments.includes('heartbeat'); i++) await sleep(20);
    assert.ok(client.comments.includes('heartbeat'));
  });

  it('subscribes once for all clients and unsubscribes when the last one leaves', async () => {
    const a = await events();
    const b = await events();
    await a.waitFor((e) => e.length >= 2);
    await b.waitFor((e) => e.length >= 2);
    assert.equal(engine.listenerCount, 1);
    a.close();
    await sleep(100);
    assert.equal(engine.listenerCount, 1);
    b.close();
    await noListenersLeft();
    const healthCalls = engine.healthCalls;
    await sleep(300);
    assert.equal(engine.healthCalls, healthCalls, 'no health polling without clients');
  });

  it('lets a fast client through a burst larger than the buffer cap, and drops a client that does not read', async () => {
    // A longer stall timeout than the other tests use, so a busy test machine never makes the
    // (same-process) reader look stalled.
    await server.close();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, events: { maxBufferedBytes: 256 * 1024, stallTimeoutMs: 2000 } });
    const reader = await events();
    const stalled = connect(server.port, '127.0.0.1');
    let stalledBytes = 0;
    stalled.on('data', (c: Buffer) => (stalledBytes += c.length));
    stalled.pause(); // never reads, until the end of the test
    const stalledClosed = new Promise<void>((resolve) => stalled.on('close', () => resolve()));
    stalled.on('error', () => undefined);
    stalled.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    await reader.waitFor((e) => e.length >= 2);
    await sleep(100);
    const big = 'x'.repeat(64 * 1024);
    const count = 300; // about 20 MB: far beyond the 256 KiB cap and the kernel's socket buffers
    for (let burst = 0; burst < count / 30; burst++) {
      for (let i = 0; i < 30; i++) engine.addLog({ message: 'big', details: { big } }); // 2 MB in one tick
      await sleep(20);
    }
    // The reader catches up from the engine: every entry exactly once, in order.
    await reader.waitFor((e) => e.filter((x) => x.event === 'log').length >= count, 15_000, 'all entries for the reader');
    assert.deepEqual(reader.named('log').map((e) => Number(e.id)), Array.from({ length: count }, (_, i) => i + 1));
    // Longer than stallTimeoutMs without reading: the server has dropped the stalled client.
    await sleep(3000);
    stalled.resume();
    await Promise.race([stalledClosed, sleep(5000).then(() => assert.fail('the stalled client was not dropped'))]);
    assert.ok(stalledBytes < (count * big.length) / 2, `the stalled client got ${stalledBytes} bytes, not everything`);
    assert.equal(reader.closed, false);
    assert.equal((await request(server.url, '/stats')).status, 200);
  });
});

/** Counts event-loop turns (one setImmediate each) until stopped: in which turn something ran. */
function countTurns(): { readonly now: number; stop(): void } {
  let now = 0;
  let ticking = true;
  const tick = (): void => {
    now++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get now() {
      return now;
    },
    stop: () => (ticking = false),
  };
}
