// The extension's requests to the engine (src/extension/httpRequest.ts), on node:http: the /events
// stream and the views' reads go through it. Against real servers on loopback: a real engine
// (dist/cli.js) for the answers the views read, and small servers of our own for what an engine
// should never do (hold a request without answering, close mid-answer).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openRequest, readBody, requestText } from '../../src/extension/httpRequest';
import { serve, type ServeProcess } from './support/cli';
import { nodeItem, TempWorkspace } from './support/workspace';

function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server; connections: () => number }> {
  return new Promise((resolve) => {
    const server = http.createServer(handler);
    let connections = 0;
    server.on('connection', () => connections++);
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, connections: () => connections }));
  });
}

const close = (server: http.Server) =>
  new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });

describe('the extension\'s HTTP requests to the engine (node:http, real servers on loopback)', function () {
  this.timeout(60_000);

  describe('against a real engine', () => {
    let ws: TempWorkspace;
    let run: ServeProcess;

    before(async () => {
      ws = new TempWorkspace('engine-http-request-');
      ws.enqueue('hello.json', nodeItem('hello', "console.log('hi')"));
      run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '100']);
    });
    after(async () => {
      run?.child.kill('SIGTERM');
      await run?.exited;
      ws?.dispose();
    });

    it('reads JSON answers with their status and headers, over one kept-alive socket', async () => {
      const items = await requestText(`${run.url}/items?limit=1`, 10_000, { headers: { Accept: 'application/json' } });
      assert.equal(items.status, 200);
      assert.match(String(items.headers['content-type']), /application\/json/);
      const body = JSON.parse(items.text) as { items: { id: string }[] };
      assert.deepEqual(body.items.map((i) => i.id), ['hello']);
      const health = await requestText(`${run.url}/health`, 10_000);
      assert.ok([200, 503].includes(health.status), `status ${health.status}`);
      assert.ok('status' in (JSON.parse(health.text) as object));
    });

    it('gives the engine\'s own error answer, not a thrown error, for a refused request', async () => {
      const res = await requestText(`${run.url}/items/nope`, 10_000);
      assert.equal(res.status, 404);
      assert.match((JSON.parse(res.text) as { error: { message: string } }).error.message, /nope/);
    });

    it('streams /events until the signal aborts it', async () => {
      const abort = new AbortController();
      const res = await openRequest(`${run.url}/events`, { headers: { Accept: 'text/event-stream' }, signal: abort.signal });
      assert.equal(res.statusCode, 200);
      res.setEncoding('utf8');
      let seen = '';
      await assert.rejects(
        (async () => {
          for await (const chunk of res as AsyncIterable<string>) {
            seen += chunk;
            // The stream opens with the engine's stats: enough to know it is live, then stop.
            if (/event: stats/.test(seen)) abort.abort();
          }
        })(),
        (err: Error) => err.name === 'AbortError' || /aborted/i.test(err.message),
      );
      assert.match(seen, /event: stats/);
    });
  });

  it('keeps one socket for requests one after another (keep-alive)', async () => {
    const s = await listen((_req, res) => res.end('ok'));
    try {
      for (let i = 0; i < 5; i++) assert.equal((await requestText(`${s.url}/x`, 10_000)).text, 'ok');
      assert.equal(s.connections(), 1);
    } finally {
      await close(s.server);
    }
  });

  it('keeps a character whole when its bytes arrive in two chunks', async () => {
    const text = 'état · ✓ · 😀';
    const bytes = Buffer.from(text, 'utf8');
    const s = await listen((_req, res) => {
      // Split inside the emoji's four bytes, and flush the first part before the rest.
      res.write(bytes.subarray(0, bytes.length - 2), () => setImmediate(() => res.end(bytes.subarray(bytes.length - 2))));
    });
    try {
      assert.equal((await requestText(`${s.url}/x`, 10_000)).text, text);
    } finally {
      await close(s.server);
    }
  });

  it('gives up on a server that accepts the request and never answers, saying so', async () => {
    let held = 0;
    const s = await listen(() => void held++);
    try {
      await assert.rejects(requestText(`${s.url}/x`, 300), /no answer within 300 ms/);
      assert.equal(held, 1);
    } finally {
      await close(s.server);
    }
  });

  it('rejects an answer cut off before its end, and a port nobody listens on with its code', async () => {
    const s = await listen((_req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('only part', () => res.destroy());
    });
    try {
      await assert.rejects(requestText(`${s.url}/x`, 10_000));
    } finally {
      await close(s.server);
    }
    // The port was just closed: nobody listens there now.
    await assert.rejects(requestText(s.url, 10_000), (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');
  });

  it('reads a body through readBody after openRequest', async () => {
    const s = await listen((_req, res) => res.end(JSON.stringify({ a: 1 })));
    try {
      const res = await openRequest(`${s.url}/x`);
      assert.deepEqual(JSON.parse(await readBody(res)), { a: 1 });
    } finally {
      await close(s.server);
    }
  });
});
