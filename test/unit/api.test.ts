// The HTTP API over the real engine (real processes, real store on disk), every body checked
// against the served OpenAPI document. The server's own edge cases are in server*.test.ts.
// The same suite runs on both stores (the one parameter is the store): sql.js on disk, and a real
// PostgreSQL server started for it, so the fleet store keeps the API's promises.
import assert from 'node:assert/strict';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import type { LogEntry, StatsResponse, StatusResponse } from '../../src/shared/api';
import { OpenApiChecker, request } from './support/http';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';
import { startPostgresOrSkip, type PostgresServer } from './support/postgres';

for (const store of ['sql.js', 'postgres'] as const) describe(store === 'sql.js' ? 'API over the real engine' : 'API over the real engine (PostgreSQL store)', function () {
  this.timeout(store === 'sql.js' ? 30_000 : 90_000);
  let ws: TempWorkspace;
  let engine: Engine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;
  let pg: PostgresServer | undefined;

  before(async function () {
    if (store === 'postgres') pg = await startPostgresOrSkip(this);
    ws = new TempWorkspace('engine-api-');
    ws.enqueue('mixed.json', [
      nodeItem('ok', 'console.log("fine")'),
      nodeItem('flaky', 'process.exit(Number(process.env.ENGINE_ATTEMPT) < 2 ? 9 : 0)'),
      nodeItem('doomed', 'process.exit(5)', { maxAttempts: 2 }),
      nodeItem('sleepy', '0', { runAt: '2099-01-01T00:00:00.000Z' }),
      { id: 'bad id with spaces', command: 'x' },
    ]);
    // /health says "stalled" once the last poll started more than 3 poll intervals ago; at the
    // tests' usual 100 ms a loaded machine let a poll slip past 300 ms (CI, load 12). This suite checks shapes, not stall detection (health.test and server.endpoints.test do):
    // 2 s intervals; every item is in the first poll, and retries run on their own timers.
    const pollIntervalMs = 2000;
    engine = await Engine.create(ws.options(pg ? { storeUrl: pg.createDatabase('api'), leaseMs: 10_000, pollIntervalMs } : { pollIntervalMs }));
    await engine.start();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    // 'sleepy' stays pending by design (runAt in 2099); everything else reaches an outcome.
    await waitFor('all but sleepy to settle', () => engine.stats().pending === 1 && engine.status().engine.running === 0);
    api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
  });
  after(async () => {
    await server?.close();
    await engine?.shutdown(0);
    ws?.dispose();
    pg?.stop();
  });

  async function get(path: string) {
    const res = await request(server.url, path);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    return res;
  }

  it('/stats: the counters of a mixed run, consistent and documented', async () => {
    const res = await get('/stats');
    assert.equal(res.status, 200);
    api.assertBody('/stats', 200, res.json);
    const { overview } = res.json as StatsResponse;
    assert.deepEqual(
      { ...overview, lastPollAt: undefined },
      { total: 4, launched: 2, pending: 1, failed: 1, totalLaunches: 5, totalFailed: 3, lastPollAt: undefined, held: 0, running: 0 },
    );
    assert.equal(overview.total, overview.launched + overview.pending + overview.failed);
    assert.equal(overview.totalLaunches, overview.launched + overview.totalFailed);
  });

  it('/health: healthy, named and versioned', async () => {
    const res = await get('/health');
    assert.equal(res.status, 200);
    api.assertBody('/health', 200, res.json);
    assert.deepEqual({ ...(res.json as object), timestamp: 'x' }, {
      status: 'healthy',
      engine: 'launch-engine',
      version: '0.0.0-test',
      timestamp: 'x',
      checks: { database: 'ok', engine: 'running' },
    });
  });

  it('/status: engine, scanner, stats, last launch, database, server', async () => {
    const res = await get('/status');
    api.assertBody('/status', 200, res.json);
    const s = res.json as StatusResponse;
    assert.equal(s.server.url, server.url);
    const { lastPollAt, ...counters } = s.stats;
    const { lastPollAt: _, ...expected } = engine.stats();
    assert.deepEqual(counters, expected);
    assert.equal(typeof lastPollAt, 'string');
    assert.equal(s.scanner.itemsDiscovered, 4);
    assert.equal(s.scanner.itemsRejected, 1);
    assert.equal(s.scanner.sources[0].kind, 'queue-directory');
    assert.equal(s.scanner.sources[0].itemsKnown, 4);
    assert.equal(s.engine.concurrency, 4);
    assert.ok(s.lastLaunch && ['succeeded', 'failed'].includes(s.lastLaunch.outcome));
    assert.ok(s.database.sizeBytes > 0);
    // Where the state lives: the snapshot file, or the database's URL (its password never shown).
    assert.match(s.database.path, store === 'sql.js' ? /engine\.sqlite$/ : /^postgres:\/\/engine:\*\*\*@127\.0\.0\.1:\d+\/api$/);
  });

  it('/logs: every entry documented, filters applied by the real store', async () => {
    const all = (await get('/logs?order=asc&limit=1000')).json as LogEntry[];
    for (const e of all) api.assertComponent('LogEntry', e);
    assert.ok(all.every((e, i) => i === 0 || e.id > all[i - 1].id));
    const failed = (await get('/logs?action=launch_failed')).json as LogEntry[];
    assert.equal(failed.length, 3);
    assert.ok(failed.every((e) => e.action === 'launch_failed'));
    const rejected = (await get('/logs?action=item_rejected&level=warn')).json as LogEntry[];
    assert.equal(rejected.length, 1);
    assert.match(rejected[0].message, /id must match pattern/);
    // The item's name keeps it to doomed's entries: "5" alone also starts durations ("in 54 ms").
    const text = (await get('/logs?q=doomed%20exited%20code%205&order=asc')).json as LogEntry[];
    assert.deepEqual(text.map((e) => e.action), ['launch_failed', 'launch_failed', 'item_failed']);
    const byItem = (await get('/logs?item=flaky')).json as LogEntry[];
    assert.ok(byItem.length >= 5 && byItem.every((e) => e.itemId === 'flaky'));
    const bad = await get('/logs?action=launch_exploded');
    assert.equal(bad.status, 400);
  });

  it('/items: the UI listing, by outcome', async () => {
    const res = await get('/items?outcome=failed');
    assert.equal(res.status, 200);
    const body = res.json as { items: { id: string; outcome: string }[]; total: number };
    assert.deepEqual(body.items.map((i) => i.id), ['doomed']);
    assert.equal(body.total, 1);
  });

  it('/items?source=: the items of one queue file (the CodeLens read), each with when its latest attempt finished', async () => {
    const res = await get('/items?source=.engine%2Fqueue%2Fmixed.json&limit=2');
    assert.equal(res.status, 200);
    api.assertBody('/items', 200, res.json);
    const body = res.json as { items: { id: string; source: string; lastFinishedAt: string | null }[]; total: number };
    assert.equal(body.total, 4, 'the four accepted entries of mixed.json, counted past the page');
    assert.deepEqual(body.items.map((i) => i.id), ['ok', 'flaky']);
    assert.ok(body.items.every((i) => i.source === '.engine/queue/mixed.json'));
    const all = (await get('/items?source=.engine/queue/mixed.json')).json as typeof body;
    const finished = new Map(all.items.map((i) => [i.id, i.lastFinishedAt]));
    const doomed = (await get('/items/doomed')).json as { attempts: { finishedAt: string }[] };
    assert.equal(finished.get('doomed'), doomed.attempts.map((a) => a.finishedAt).sort().at(-1));
    assert.equal(finished.get('sleepy'), null, 'never ran');
    const none = (await get('/items?source=.engine/queue/other.json')).json as typeof body;
    assert.deepEqual([none.items, none.total], [[], 0]);
    const bad = await get('/items?source=');
    assert.equal(bad.status, 400);
    assert.match((bad.json as { error: { message: string } }).error.message, /source must be a queue file's path/);
  });
});

describe('/status after a restart: sources keep their counts from the store', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;

  afterEach(() => ws?.dispose());

  it('each source still counts the items it gave (itemsKnown, from the store); the per-process counters start over', async () => {
    ws = new TempWorkspace('engine-api-restart-');
    ws.enqueue('later.json', Array.from({ length: 5 }, (_, i) => nodeItem(`later-${i}`, '0', { runAt: '2099-01-01T00:00:00.000Z' })));
    const first = await Engine.create(ws.options());
    try {
      await first.start();
      assert.equal(first.status().scanner.sources[0].itemsKnown, 5);
    } finally {
      await first.shutdown(0);
    }

    // One more file while the engine is down: the restarted engine discovers it and adds it.
    ws.enqueue('one-more.json', nodeItem('one-more', '0', { runAt: '2099-01-01T00:00:00.000Z' }));
    const engine = await Engine.create(ws.options());
    await engine.start();
    const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    try {
      const api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
      const res = await request(server.url, '/status');
      api.assertBody('/status', 200, res.json);
      const s = res.json as StatusResponse;
      assert.deepEqual(
        { known: s.scanner.sources[0].itemsKnown, discovered: s.scanner.sources[0].itemsDiscovered, total: s.stats.total, scannerDiscovered: s.scanner.itemsDiscovered },
        { known: 6, discovered: 1, total: 6, scannerDiscovered: 1 },
      );
    } finally {
      await server.close();
      await engine.shutdown(0);
    }
  });
});
