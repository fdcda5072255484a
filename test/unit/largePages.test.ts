// /logs and /items pages larger than one part of src/shared/jsonParts.ts, over the real engine and
// store on disk: the body written in parts is byte for byte the JSON the page is, under a
// Content-Length that matches it (the same answer as when it was one string).
import assert from 'node:assert/strict';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { JSON_PART_CHARS } from '../../src/shared/jsonParts';
import { request } from './support/http';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

describe('large /logs and /items pages, written in parts', function () {
  this.timeout(60_000);
  const COUNT = 400;
  let ws: TempWorkspace;
  let engine: Engine;
  let server: RunningHttpServer;

  before(async () => {
    ws = new TempWorkspace('engine-large-pages-');
    // Never due (runAt in 2099): each item stays pending, and its discovery is a log entry.
    // Names with characters outside ASCII: Content-Length counts bytes, not characters.
    ws.enqueue(
      'many.json',
      Array.from({ length: COUNT }, (_, i) => nodeItem(`item-${i}`, '0', { name: `rapport nº ${i} — ${'é'.repeat(i % 40)}`, runAt: '2099-01-01T00:00:00.000Z' })),
    );
    engine = await Engine.create(ws.options());
    await engine.start();
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    await waitFor('every item to be discovered', () => engine.stats().pending === COUNT);
  });
  after(async () => {
    await server?.close();
    await engine?.shutdown(0);
    ws?.dispose();
  });

  it('/logs?limit=1000: the entries as JSON.stringify writes them, and a Content-Length of their bytes', async () => {
    const res = await request(server.url, '/logs?limit=1000');
    assert.equal(res.status, 200);
    const expected = JSON.stringify(engine.queryLogs({ order: 'desc', limit: 1000 }).entries);
    assert.ok(expected.length > 3 * JSON_PART_CHARS, `a page of ${expected.length} characters is several parts`);
    assert.equal(res.text, expected);
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(expected));
  });

  it('/items?limit=1000: { items, total, limit, offset } as JSON.stringify writes it', async () => {
    const res = await request(server.url, '/items?limit=1000');
    assert.equal(res.status, 200);
    const { items, total } = engine.listItems({ limit: 1000, offset: 0 });
    const expected = JSON.stringify({ items, total, limit: 1000, offset: 0 });
    assert.ok(expected.length > 3 * JSON_PART_CHARS, `a page of ${expected.length} characters is several parts`);
    assert.equal(res.text, expected);
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(expected));
  });
});
