// POST /items over real HTTP, black-box: the built CLI (`serve`) as users run it, real processes,
// a real database on disk, responses checked against the served OpenAPI document.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { ItemDetail, ItemSummary } from '../../src/shared/api';
import { serve, type ServeProcess } from './support/cli';
import { OpenApiChecker, request, type HttpResult } from './support/http';
import { PostgresServer, startPostgresOrSkip } from './support/postgres';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

const TOKEN = 'submit-token-51d2';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { 'content-type': 'application/json' };

interface Refusal {
  error: { code: string; message: string; entries: { index: number; reason: string }[] };
}

describe('POST /items: submitting items over HTTP', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  const running: ServeProcess[] = [];

  beforeEach(() => {
    ws = new TempWorkspace('engine-submit-');
  });
  afterEach(async () => {
    for (const run of running.splice(0)) {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGTERM');
        await run.exited;
      }
    }
    ws.dispose();
  });

  // A poll interval of a minute: what launches in these tests is launched by the submission, not
  // found by a poll.
  async function start(args: string[] = []): Promise<{ run: ServeProcess; api: OpenApiChecker; post: (body: unknown, headers?: Record<string, string>) => Promise<HttpResult> }> {
    const run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '60000', ...args], 20_000, { ENGINE_MONITOR_TOKEN: TOKEN });
    running.push(run);
    const api = new OpenApiChecker((await request(run.url, '/openapi.json', { headers: AUTH })).json as Record<string, any>);
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      request(run.url, '/items', { method: 'POST', headers: { ...AUTH, ...JSON_TYPE, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { run, api, post };
  }

  const item = async (run: ServeProcess, id: string): Promise<HttpResult> => request(run.url, `/items/${encodeURIComponent(id)}`, { headers: AUTH });
  const total = async (run: ServeProcess): Promise<number> => ((await request(run.url, '/items', { headers: AUTH })).json as { total: number }).total;

  it('201 with the items as GET /items/{id} reports them, source "api", an id generated when none is given; launched without waiting for a poll', async () => {
    const { run, api, post } = await start();
    const one = await post({ command: process.execPath, args: ['-e', 'process.exit(0)'], name: 'no id' });
    assert.equal(one.status, 201, one.text);
    api.assertBody('/items', 201, one.json, 'post');
    const [detail] = (one.json as { items: ItemDetail[] }).items;
    assert.match(detail.item.id, /^api-\d+-[0-9a-f]{8}$/);
    assert.equal(detail.item.source, 'api');
    assert.equal(detail.item.name, 'no id');
    assert.equal(detail.item.cwd, ws.folder);

    const both = await post([nodeItem('first', '0', { cwd: 'sub' }), nodeItem('second', '0', { dependsOn: ['first'], maxAttempts: 1 })]);
    assert.equal(both.status, 201, both.text);
    api.assertBody('/items', 201, both.json, 'post');
    const details = (both.json as { items: ItemDetail[] }).items;
    assert.deepEqual(details.map((d) => d.item.id), ['first', 'second']);
    assert.equal(details[0].item.cwd, path.join(ws.folder, 'sub'));
    assert.deepEqual(details[1].item.dependsOn, ['first']);
    // The cwd "sub" does not exist: first fails its attempts (spawn error); second fails with it.
    for (const id of [detail.item.id, 'first', 'second']) {
      await waitFor(`${id} to reach an outcome`, async () => ((await item(run, id)).json as ItemDetail).outcome !== 'pending');
    }
    assert.equal(((await item(run, detail.item.id)).json as ItemDetail).outcome, 'launched');
    assert.equal(((await item(run, 'second')).json as ItemDetail).outcome, 'failed');
    // A schedule template is listed as /schedules lists it.
    const scheduled = await post(nodeItem('nightly', '0', { schedule: '0 2 * * *' }));
    assert.equal(scheduled.status, 201, scheduled.text);
    api.assertBody('/items', 201, scheduled.json, 'post');
    assert.deepEqual((scheduled.json as { items: unknown[]; schedules: { id: string }[] }).items, []);
    assert.equal((scheduled.json as { schedules: { id: string }[] }).schedules[0].id, 'nightly');
    assert.ok(((await request(run.url, '/logs?item=first&action=item_discovered', { headers: AUTH })).json as { message: string }[])[0].message.includes('POST /items'));
  });

  it('400 with one reason per bad entry and nothing taken; 413, 415, 401, and bad JSON', async () => {
    const { run, api, post } = await start();
    const bad = await post([nodeItem('good', '0'), { name: 'no command' }, nodeItem('timeout', '0', { timeoutMs: -5 }), nodeItem('good', '1')]);
    assert.equal(bad.status, 400, bad.text);
    api.assertBody('/items', 400, bad.json, 'post');
    const refusal = bad.json as Refusal;
    assert.equal(refusal.error.code, 'bad_request');
    assert.deepEqual(refusal.error.entries.map((e) => e.index), [1, 2, 3]);
    assert.match(refusal.error.entries[0].reason, /command/);
    assert.match(refusal.error.entries[1].reason, /timeoutMs/);
    assert.match(refusal.error.entries[2].reason, /already used by entry 0/);
    assert.match(refusal.error.message, /3 of 4 entries are not valid items, so nothing was taken/);
    assert.equal((await item(run, 'good')).status, 404, 'the valid entry was not taken either');

    const outside = await post(nodeItem('outside', '0', { cwd: '../..' }));
    assert.equal(outside.status, 400);
    assert.match((outside.json as Refusal).error.entries[0].reason, /outside the workspace/);

    const tooMany = await post(Array.from({ length: 1001 }, (_, i) => nodeItem(`n${i}`, '0')));
    assert.equal(tooMany.status, 400);
    assert.match((tooMany.json as Refusal).error.message, /at most 1000/);
    assert.equal((await post([])).status, 400, 'an empty array');
    assert.equal((await post('"just a string"')).status, 400);
    const notJson = await post('{"command": "echo",');
    assert.equal(notJson.status, 400);
    assert.match((notJson.json as Refusal).error.message, /not valid JSON/);

    const big = await post(JSON.stringify([{ command: 'x', args: ['y'.repeat(1024 * 1024)] }]));
    assert.equal(big.status, 413);
    api.assertBody('/items', 413, big.json, 'post');
    const text = await post(JSON.stringify(nodeItem('t', '0')), { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    api.assertBody('/items', 415, text.json, 'post');
    const anonymous = await request(run.url, '/items', { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(nodeItem('anon', '0')) });
    assert.equal(anonymous.status, 401);
    assert.equal(await total(run), 0, 'nothing was taken by any of these');
    const put = await request(run.url, '/items', { method: 'PUT', headers: AUTH });
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, HEAD, POST');
  });

  it('a known id follows the edited-definition rules: 409 for a running or launched item (nothing taken), a pending one is replaced, the same definition changes nothing', async () => {
    const { run, api, post } = await start();
    const long = nodeItem('long', 'setTimeout(() => {}, 60000)');
    assert.equal((await post(long)).status, 201);
    await waitFor('long to run', async () => ((await item(run, 'long')).json as ItemDetail).state === 'running');
    const again = await post(long);
    assert.equal(again.status, 201, 'the same definition: taken, nothing changes');
    assert.equal(((again.json as { items: ItemDetail[] }).items[0]).state, 'running');

    const changed = await post([nodeItem('fresh', '0'), { ...long, args: ['-e', '1'] }]);
    assert.equal(changed.status, 409, changed.text);
    api.assertBody('/items', 409, changed.json, 'post');
    const refusal = changed.json as Refusal;
    assert.equal(refusal.error.code, 'conflict');
    assert.deepEqual(refusal.error.entries.map((e) => e.index), [1]);
    assert.match(refusal.error.entries[0].reason, /"long" is running .*cancel it, or wait/);
    assert.equal((await item(run, 'fresh')).status, 404, 'the other entry was not taken');

    assert.equal((await post(nodeItem('done', '0'))).status, 201);
    await waitFor('done to launch', async () => ((await item(run, 'done')).json as ItemDetail).outcome === 'launched');
    const relaunch = await post(nodeItem('done', '1'));
    assert.equal(relaunch.status, 409);
    assert.match((relaunch.json as Refusal).error.entries[0].reason, /has already launched/);

    const later = nodeItem('later', '0', { runAt: '2099-01-01T00:00:00.000Z' });
    assert.equal((await post(later)).status, 201);
    const replaced = await post({ ...later, name: 'Later, renamed' });
    assert.equal(replaced.status, 201);
    assert.equal(((replaced.json as { items: ItemDetail[] }).items[0]).item.name, 'Later, renamed');
    const template = await post(nodeItem('done', '0', { schedule: '0 2 * * *' }));
    assert.equal(template.status, 409, 'an item id cannot become a template');
    await post(`{"id":"long","command":"x"}`).then((r) => assert.equal(r.status, 409));
    const rows = ((await request(run.url, '/items?limit=100', { headers: AUTH })).json as { items: ItemSummary[] }).items;
    assert.deepEqual(rows.map((r) => r.id).sort(), ['done', 'later', 'long']);
  });

  it('is on disk before the 201: kill -9 right after it, and the restarted engine has the item', async () => {
    const first = await start(['--stopped']);
    const answer = await first.post(nodeItem('kept', '0', { name: 'Kept across a crash' }));
    assert.equal(answer.status, 201);
    first.run.child.kill('SIGKILL');
    await first.run.exited;
    const { run } = await start(['--stopped']);
    const after = await item(run, 'kept');
    assert.equal(after.status, 200, after.text);
    assert.equal((after.json as ItemDetail).item.name, 'Kept across a crash');
    assert.equal((after.json as ItemDetail).item.source, 'api');
  });
});

describe('POST /items on the PostgreSQL store', function () {
  this.timeout(120_000);
  let pg: PostgresServer | undefined;
  let ws: TempWorkspace;
  let run: ServeProcess | undefined;

  before(async function () {
    pg = await startPostgresOrSkip(this);
  });
  after(() => pg?.stop());
  beforeEach(() => {
    ws = new TempWorkspace('engine-submit-pg-');
  });
  afterEach(async () => {
    if (run && run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    ws.dispose();
  });

  it('takes items all or none, refuses a running item\'s redefinition, launches what it took, and keeps it across kill -9', async () => {
    const url = pg!.createDatabase(`submit_${process.pid}`);
    const start = async () =>
      (run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--store', url, '--poll-interval', '60000'], 60_000, { ENGINE_MONITOR_TOKEN: TOKEN }));
    await start();
    const post = (body: unknown) => request(run!.url, '/items', { method: 'POST', headers: { ...AUTH, ...JSON_TYPE }, body: JSON.stringify(body) });
    const get = async (id: string) => (await request(run!.url, `/items/${id}`, { headers: AUTH })).json as ItemDetail;

    const bad = await post([nodeItem('pg-a', '0'), { command: 7 }]);
    assert.equal(bad.status, 400, bad.text);
    assert.deepEqual((bad.json as Refusal).error.entries.map((e) => e.index), [1]);
    assert.equal((await request(run!.url, '/items/pg-a', { headers: AUTH })).status, 404);

    const taken = await post([nodeItem('pg-a', '0'), nodeItem('pg-long', 'setTimeout(() => {}, 60000)')]);
    assert.equal(taken.status, 201, taken.text);
    assert.deepEqual((taken.json as { items: ItemDetail[] }).items.map((d) => d.item.source), ['api', 'api']);
    await waitFor('pg-a to launch', async () => (await get('pg-a')).outcome === 'launched');
    await waitFor('pg-long to run', async () => (await get('pg-long')).state === 'running');
    const changed = await post(nodeItem('pg-long', '0'));
    assert.equal(changed.status, 409, changed.text);

    const kept = await post(nodeItem('pg-kept', '0', { runAt: '2099-01-01T00:00:00.000Z' }));
    assert.equal(kept.status, 201);
    run!.child.kill('SIGKILL');
    await run!.exited;
    await start();
    assert.equal((await get('pg-kept')).item.source, 'api');

    // The database away: nothing taken, 503 saying why; back, the same request is taken.
    pg!.stopServer();
    try {
      const away = await post(nodeItem('pg-away', '0'));
      assert.equal(away.status, 503, away.text);
      assert.equal((away.json as Refusal).error.code, 'storage_unavailable');
      assert.match((away.json as Refusal).error.message, /database cannot be reached/);
    } finally {
      pg!.startServer();
    }
    await waitFor('the database back', async () => (await post(nodeItem('pg-away', '0'))).status === 201, 60_000);
  });
});
