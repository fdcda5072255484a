// /items?order=: `launch` lists pending items in the order the engine then launches them, `recent`
// the latest change first. Real queue files, real processes that record their own start, a real
// database on disk, real HTTP on loopback.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ItemDetail, ItemSummary } from '../../src/shared/api';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer } from '../../src/server';
import { OpenApiChecker, request } from './support/http';
import { nodeItem, settled, TempWorkspace, waitFor } from './support/workspace';

/** An item whose process appends its id to `file` as it starts (then, optionally, waits for `gate` to exist). */
function recordingItem(file: string, id: string, extra: Record<string, unknown> = {}, gate?: string): Record<string, unknown> {
  const wait = gate ? `const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(gate)})) clearInterval(t); }, 20);` : '';
  return nodeItem(id, `const fs = require('fs'); fs.appendFileSync(${JSON.stringify(file)}, ${JSON.stringify(id)} + '\\n'); ${wait}`, extra);
}

function startsIn(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
}

describe('/items?order=', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;

  beforeEach(() => {
    ws = new TempWorkspace('engine-items-order-');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
  });

  it('order=launch is the order the engine launches in; order=recent lists the last to finish first', async () => {
    const starts = path.join(ws.root, 'starts.txt');
    const gate = path.join(ws.root, 'gate');
    // Far enough ahead that the due ones have run by then, even on a loaded machine.
    const soon = (s: number) => new Date(Date.now() + s * 1000).toISOString();
    ws.enqueue('items.json', [
      recordingItem(starts, 'gate', { priority: 100 }, gate),
      recordingItem(starts, 'plain-a'),
      recordingItem(starts, 'later-high', { runAt: soon(9), priority: 50 }),
      recordingItem(starts, 'low', { priority: -3 }),
      recordingItem(starts, 'high', { priority: 5 }),
      recordingItem(starts, 'later', { runAt: soon(7) }),
      recordingItem(starts, 'plain-b'),
    ]);
    engine = await Engine.create(ws.options({ concurrency: 1 }));
    await engine.start();
    await waitFor('the gate item to start', () => startsIn(starts).length === 1);
    const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    try {
      const api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
      const page = await request(server.url, '/items?state=waiting,scheduled,backoff&order=launch');
      api.assertBody('/items', 200, page.json);
      const predicted = (page.json as { items: ItemSummary[] }).items.map((i) => i.id);
      assert.deepEqual(predicted, ['high', 'plain-a', 'plain-b', 'low', 'later', 'later-high']);
      assert.deepEqual(
        (page.json as { items: ItemSummary[] }).items.map((i) => i.priority),
        [5, 0, 0, -3, 0, 50],
        'each summary carries its priority',
      );
      // Paged, the next page keeps the order.
      const first = await request(server.url, '/items?state=waiting,scheduled,backoff&order=launch&limit=4');
      assert.match(String(first.headers.link), /order=launch/);
      const next = await request(server.url, `/items?state=waiting,scheduled,backoff&order=launch&limit=4&offset=4`);
      assert.deepEqual((next.json as { items: ItemSummary[] }).items.map((i) => i.id), ['later', 'later-high']);

      const bad = await request(server.url, '/items?order=newest');
      assert.equal(bad.status, 400);
      assert.match(String((bad.json as { error: { message: string } }).error.message), /Parameter order must be one of: discovery, launch, recent; got "newest"/);
      // A search (every item runs node) in the same order, paged.
      const withQ = await request(server.url, '/items?state=waiting,scheduled,backoff&order=launch&q=node&limit=3&offset=1');
      api.assertBody('/items', 200, withQ.json);
      assert.deepEqual([(withQ.json as { items: ItemSummary[] }).items.map((i) => i.id), (withQ.json as { total: number }).total], [predicted.slice(1, 4), 6]);

      writeFileSync(gate, '');
      await settled(engine, 40_000);
      await waitFor('every item to launch', () => engine!.stats().launched === 7, 30_000);
      assert.deepEqual(startsIn(starts), ['gate', ...predicted], 'the engine launched them in the order /items predicted');

      const recent = await request(server.url, '/items?outcome=launched&order=recent');
      api.assertBody('/items', 200, recent.json);
      const ids = (recent.json as { items: ItemSummary[] }).items.map((i) => i.id);
      const finished = (id: string) => Date.parse((engine!.itemDetail(id) as ItemDetail).attempts[0].finishedAt!);
      assert.deepEqual(ids, [...ids].sort((a, b) => finished(b) - finished(a)), 'the last to finish first');
      assert.deepEqual(ids, [...startsIn(starts)].reverse(), 'one at a time: the reverse of the launch order');
    } finally {
      await server.close();
    }
  });
});
