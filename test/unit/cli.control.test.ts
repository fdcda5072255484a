// Control and items over real HTTP, black-box: the built CLI (`serve`) as users run it, real queue
// files, real processes, responses checked against the served OpenAPI document.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ItemDetail, ItemSummary, StatusResponse } from '../../src/shared/api';
import { processesMentioning, serve, type ServeProcess } from './support/cli';
import { OpenApiChecker, request, type HttpResult } from './support/http';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'control-token-8c1f';

interface ItemsResponse {
  items: ItemSummary[];
  total: number;
}
const AUTH = { authorization: `Bearer ${TOKEN}` };

async function stop(run: ServeProcess): Promise<void> {
  run.child.kill('SIGTERM');
  await run.exited;
}

describe('CLI: items and control over HTTP', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  const running: ServeProcess[] = [];

  beforeEach(() => {
    ws = new TempWorkspace('engine-cli-control-');
  });
  afterEach(async () => {
    for (const run of running.splice(0)) if (run.child.exitCode === null && run.child.signalCode === null) await stop(run);
    ws.dispose();
  });

  async function start(args: string[], token?: string): Promise<ServeProcess> {
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200', ...args], 20_000, token ? { ENGINE_MONITOR_TOKEN: token } : {});
    running.push(run);
    return run;
  }

  it('without a token: reads work, every POST is 403 saying control needs a token', async () => {
    ws.enqueue('a.jsonl', `${JSON.stringify(nodeItem('named', '0', { name: 'Nightly Export' }))}\n${JSON.stringify({ command: process.execPath, args: ['-e', '0'] })}\n`);
    const run = await start([]);
    const api = new OpenApiChecker((await request(run.url, '/openapi.json')).json as Record<string, any>);
    const list = (await request(run.url, '/items')).json as ItemsResponse;
    const derived = list.items.find((i) => i.id !== 'named')!.id;
    assert.match(derived, /^a:1:[0-9a-f]{10}$/);
    // A derived id has ':' in it: percent-encoded in the path, or not, it is the same item.
    for (const p of [`/items/${encodeURIComponent(derived)}`, `/items/${derived}`]) {
      const res = await request(run.url, p);
      assert.equal(res.status, 200, p);
      api.assertBody('/items/{id}', 200, res.json);
      assert.equal((res.json as ItemDetail).item.id, derived);
    }
    const detail = (await request(run.url, '/items/named')).json as ItemDetail;
    assert.deepEqual(
      { ...detail.item, cwd: null },
      {
        id: 'named',
        name: 'Nightly Export',
        command: process.execPath,
        args: ['-e', '0'],
        shell: false,
        cwd: null,
        env: {},
        timeoutMs: 600_000,
        maxAttempts: 3,
        runAt: null,
        schedule: null,
        dependsOn: [],
        priority: 0,
        source: '.engine/queue/a.jsonl',
      },
    );
    assert.equal(detail.item.cwd, ws.folder);

    const missing = await request(run.url, '/items/no%20such');
    assert.equal(missing.status, 404);
    api.assertBody('/items/{id}', 404, missing.json);
    assert.match((missing.json as any).error.message, /No item with id "no such"/);
    assert.equal((await request(run.url, '/items/%E0%A4%A')).status, 400, 'a broken percent-encoding');

    for (const p of ['/items/named/cancel', '/items/named/hold', '/engine/stop', '/stats']) {
      const res = await request(run.url, p, { method: 'POST' });
      assert.equal(res.status, 403, p);
      assert.equal((res.json as any).error.code, 'control_disabled');
      assert.match((res.json as any).error.message, /Control over HTTP needs a token.*--token.*engineMonitor\.server\.token/);
    }
    assert.equal(((await request(run.url, '/stats')).json as any).overview.failed, 0, 'nothing was cancelled');
  });

  it('with a token: 401 without it, 202 with it; cancel, hold, release, start, stop and poll; 404, 405, 409, 413; a hold survives kill -9', async () => {
    const ran = path.join(ws.root, 'ran');
    const sleep = `300.${process.pid}${Date.now() % 100000}`;
    ws.enqueue('items.json', [
      nodeItem('marker', `require('fs').writeFileSync(${JSON.stringify(ran)}, '')`),
      { id: 'long', command: 'sleep', args: [sleep] },
      nodeItem('build-42', '0', { name: 'Nightly Export', runAt: '2099-01-01T00:00:00.000Z' }),
    ]);
    let run = await start(['--stopped'], TOKEN);
    const api = new OpenApiChecker((await request(run.url, '/openapi.json', { headers: AUTH })).json as Record<string, any>);
    const post = (p: string, options: { headers?: Record<string, string>; body?: string } = {}): Promise<HttpResult> =>
      request(run.url, p, { method: 'POST', headers: { ...AUTH, ...options.headers }, body: options.body });
    const item = async (id: string): Promise<ItemDetail> => (await request(run.url, `/items/${id}`, { headers: AUTH })).json as ItemDetail;

    assert.equal((await request(run.url, '/items/marker/hold', { method: 'POST' })).status, 401, 'no Authorization header');
    assert.equal((await request(run.url, '/items/marker/hold', { method: 'POST', headers: { authorization: 'Bearer wrong' } })).status, 401);

    // Held before the engine ever launches it.
    const held = await post('/items/marker/hold');
    assert.equal(held.status, 202);
    api.assertBody('/items/{id}/hold', 202, held.json, 'post');
    assert.equal((held.json as ItemDetail).state, 'held');
    const again = await post('/items/marker/hold', { body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(again.status, 202, 'holding a held item, with a small body that is ignored');

    const started = await post('/engine/start');
    assert.equal(started.status, 202);
    api.assertBody('/engine/start', 202, started.json, 'post');
    assert.equal((started.json as StatusResponse).engine.state, 'running');
    await waitFor('long to run', () => processesMentioning(`sleep ${sleep}`).length === 1);
    const polled = await post('/engine/poll');
    assert.equal(polled.status, 202);
    api.assertBody('/engine/poll', 202, polled.json, 'post');

    // Filters over HTTP, with Link paging that keeps them.
    const byState = await request(run.url, '/items?state=held,scheduled&limit=1', { headers: AUTH });
    assert.deepEqual(((byState.json as ItemsResponse).items).map((i) => i.id), ['marker']);
    assert.equal((byState.json as ItemsResponse).total, 2);
    const next = /<([^>]+)>; rel="next"/.exec(String(byState.headers.link))![1];
    assert.match(next, /state=held%2Cscheduled/);
    assert.deepEqual(((await request(run.url, new URL(next).pathname + new URL(next).search, { headers: AUTH })).json as ItemsResponse).items.map((i) => i.id), ['build-42']);
    assert.deepEqual(((await request(run.url, '/items?q=nightly%20exp&state=scheduled', { headers: AUTH })).json as ItemsResponse).items.map((i) => i.id), ['build-42']);
    assert.deepEqual(((await request(run.url, `/items?q=${sleep.split('.')[0]}&state=running`, { headers: AUTH })).json as ItemsResponse).items.map((i) => i.id), ['long']);
    assert.equal((await request(run.url, '/items?state=sleeping', { headers: AUTH })).status, 400);

    const cancelled = await post('/items/long/cancel');
    assert.equal(cancelled.status, 202);
    api.assertBody('/items/{id}/cancel', 202, cancelled.json, 'post');
    assert.deepEqual([(cancelled.json as ItemDetail).outcome, (cancelled.json as ItemDetail).error], ['failed', 'cancelled']);
    await waitFor('the cancelled sleep to be gone', () => processesMentioning(`sleep ${sleep}`).length === 0, 6000);

    const conflict = await post('/items/long/cancel');
    assert.equal(conflict.status, 409);
    api.assertBody('/items/{id}/cancel', 409, conflict.json, 'post');
    assert.match((conflict.json as any).error.message, /"long" has already failed \(cancelled\); only a pending item can be cancelled/);
    const unknown = await post('/items/nope/release');
    assert.equal(unknown.status, 404);
    assert.match((unknown.json as any).error.message, /no item with id "nope"/);

    for (const [method, p, allow] of [
      ['GET', '/items/long/cancel', 'POST'],
      ['HEAD', '/engine/stop', 'POST'],
      ['PUT', '/items/long', 'GET, HEAD, DELETE'],
      ['POST', '/stats', 'GET, HEAD'],
      ['POST', '/items/long', 'GET, HEAD, DELETE'],
      ['PUT', '/engine/poll', 'POST'],
    ] as const) {
      const res = await request(run.url, p, { method, headers: AUTH });
      assert.equal(res.status, 405, `${method} ${p}`);
      assert.equal(res.headers.allow, allow, `${method} ${p}`);
    }
    assert.equal((await post('/items/marker/hold?now=1')).status, 400, 'control paths take no parameters');
    const big = await post('/items/marker/hold', { body: 'x'.repeat(2048) });
    assert.equal(big.status, 413);
    assert.match((big.json as any).error.message, /needs no body/);

    const stopped = await post('/engine/stop');
    assert.equal((stopped.json as StatusResponse).engine.state, 'stopped');
    await post('/engine/start');

    // kill -9: the hold was on disk before its 202.
    run.child.kill('SIGKILL');
    await run.exited;
    run = await start([], TOKEN);
    assert.equal((await item('marker')).state, 'held');
    assert.equal((await item('long')).error, 'cancelled');
    await post('/engine/poll');
    assert.equal(existsSync(ran), false, 'a held item is not launched after the restart');
    const released = await post('/items/marker/release');
    assert.equal(released.status, 202);
    await waitFor('the released item to launch', () => existsSync(ran));
    const overview = ((await request(run.url, '/stats', { headers: AUTH })).json as any).overview;
    assert.equal(overview.held, 0);
    const retried = await post('/items/long/retry');
    assert.equal(retried.status, 202);
    assert.equal((retried.json as ItemDetail).outcome, 'pending');
    await post('/items/long/cancel');
  });
});
