// Protection (Host, Origin, token), binding rules, port fallback, timeouts and robustness against
// clients that misbehave at the socket level.
import * as assert from 'node:assert/strict';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { OpenApiChecker, request, sleep, SseClient } from './support/http';
import { TestEngine } from './support/testEngine';

/** Writes raw bytes and collects whatever comes back until the server closes or `ms` pass. */
function raw(port: number, data: string | Buffer, ms = 1500): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', done);
    socket.on('error', done);
    socket.write(data);
  });
}

describe('server: protection and robustness', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;

  before(async () => {
    engine = new TestEngine();
    server = await startHttpServer(engine, {
      host: '127.0.0.1',
      port: 0,
      timeouts: { headersTimeoutMs: 600, requestTimeoutMs: 800, checkIntervalMs: 100 },
    });
    api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
  });
  after(() => server.close());

  it('accepts the loopback Host names, case-insensitively', async () => {
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `[::1]:${server.port}`, `LOCALHOST:${server.port}`]) {
      const res = await request(server.url, '/stats', { headers: { host } });
      assert.equal(res.status, 200, host);
    }
  });

  it('refuses any other Host with 403 (DNS rebinding), before routing', async () => {
    for (const host of ['evil.example', `evil.example:${server.port}`, '127.0.0.1', `127.0.0.1:${server.port + 1}`, `localhost.evil:${server.port}`, `0.0.0.0:${server.port}`]) {
      for (const path of ['/stats', '/nope', '/events']) {
        const res = await request(server.url, path, { headers: { host } });
        assert.equal(res.status, 403, `${host} ${path}`);
        api.assertSchemaOf('Forbidden', res.json);
        assert.equal((res.json as any).error.code, 'forbidden_host');
        assert.match((res.json as any).error.message, /127\.0\.0\.1:\d+, localhost:\d+, \[::1\]:\d+/);
      }
    }
    const none = await request(server.url, '/stats', { omitHost: true });
    assert.equal(none.status, 403);
    assert.match((none.json as any).error.message, /Host header is missing/);
    const empty = await raw(server.port, 'GET /stats HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n');
    assert.match(empty, /^HTTP\/1\.1 (403|400) /);
  });

  it("refuses an Origin other than the server's own with 403, and never sends CORS headers", async () => {
    for (const origin of ['http://evil.example', `http://localhost:${server.port + 1}`, `https://127.0.0.1:${server.port}`, 'null', `http://127.0.0.1:${server.port}/x`]) {
      const res = await request(server.url, '/stats', { headers: { origin } });
      assert.equal(res.status, 403, origin);
      api.assertSchemaOf('Forbidden', res.json);
      assert.equal((res.json as any).error.code, 'forbidden_origin');
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    }
    for (const origin of [server.url, `http://localhost:${server.port}`]) {
      const res = await request(server.url, '/stats', { headers: { origin } });
      assert.equal(res.status, 200, origin);
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    }
    const preflight = await request(server.url, '/stats', { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' } });
    assert.equal(preflight.status, 403);
  });

  it('refuses to bind a non-loopback address without a token, with a clear error', async () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com']) {
      await assert.rejects(startHttpServer(engine, { host, port: 0 }), /non-loopback address .* without a token/, host);
      await assert.rejects(startHttpServer(engine, { host, port: 0, token: '' }), /without a token/, host);
    }
    await assert.rejects(startHttpServer(engine, { host: '127.0.0.1', port: 70000 }), /Invalid port/);
  });

  it('binds a non-loopback address with a token, and then also answers to that host name', async () => {
    const wide = await startHttpServer(engine, { host: '0.0.0.0', port: 0, token: 's3cret' });
    try {
      assert.equal(wide.url, `http://127.0.0.1:${wide.port}`);
      const auth = { authorization: 'Bearer s3cret' };
      assert.equal((await request(wide.url, '/stats', { headers: auth })).status, 200);
      assert.equal((await request(wide.url, '/stats', { headers: { ...auth, host: `0.0.0.0:${wide.port}` } })).status, 200);
      assert.equal((await request(wide.url, '/stats', { headers: { ...auth, host: `evil:${wide.port}` } })).status, 403);
    } finally {
      await wide.close();
    }
  });

  it('with a token, requires Authorization: Bearer <token> (401 with WWW-Authenticate otherwise)', async () => {
    const guarded = await startHttpServer(engine, { host: '127.0.0.1', port: 0, token: 'tok-123' });
    try {
      for (const authorization of [undefined, 'Bearer', 'Bearer tok-12', 'Bearer tok-1234', 'Basic dG9rLTEyMw==', 'tok-123', 'Bearer tok-123 extra']) {
        const res = await request(guarded.url, '/stats', { headers: authorization === undefined ? {} : { authorization } });
        assert.equal(res.status, 401, String(authorization));
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="engine-monitor"');
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        api.assertSchemaOf('Unauthorized', res.json);
        assert.equal((res.json as any).error.code, 'unauthorized');
      }
      for (const authorization of ['Bearer tok-123', 'bearer tok-123']) {
        assert.equal((await request(guarded.url, '/stats', { headers: { authorization } })).status, 200);
      }
      // Every path and method is behind the token, and a bad Host is still refused first.
      assert.equal((await request(guarded.url, '/nope')).status, 401);
      assert.equal((await request(guarded.url, '/stats', { method: 'POST' })).status, 401);
      assert.equal((await request(guarded.url, '/stats', { headers: { host: 'evil.example' } })).status, 403);
      const events = await SseClient.open(guarded.url);
      assert.equal(events.status, 401);
      events.close();
    } finally {
      await guarded.close();
    }
  });

  it('falls back to a free port when the requested one is taken, if allowed', async () => {
    const blocker = createNetServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      await assert.rejects(startHttpServer(engine, { host: '127.0.0.1', port: taken }), new RegExp(`127\\.0\\.0\\.1:${taken}.*already in use`));
      const fallback = await startHttpServer(engine, { host: '127.0.0.1', port: taken, fallbackToFreePort: true });
      try {
        assert.equal(fallback.requestedPortInUse, true);
        assert.notEqual(fallback.port, taken);
        assert.equal((await request(fallback.url, '/stats')).status, 200);
      } finally {
        await fallback.close();
      }
    } finally {
      blocker.close();
    }
  });

  it('answers raw garbage with a JSON 400 and keeps serving others', async () => {
    const replies = await Promise.all([
      raw(server.port, 'this is not http\r\n\r\n'),
      raw(server.port, Buffer.from([0, 1, 2, 255, 254, 13, 10, 13, 10])),
      raw(server.port, 'GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n'),
      raw(server.port, 'GET /stats HTTP/9.9\r\n\r\n'),
    ]);
    for (const reply of replies) {
      assert.match(reply, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.match(reply, /Content-Type: application\/json; charset=utf-8/);
      const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
      api.assertSchemaOf('BadRequest', body);
    }
    assert.equal((await request(server.url, '/stats')).status, 200);
  });

  it('answers oversized headers with 431', async () => {
    const reply = await raw(server.port, `GET /stats HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(reply, /^HTTP\/1\.1 431 /);
    assert.equal((await request(server.url, '/stats')).status, 200);
  });

  it('cuts off a client that never finishes its request, while serving others and keeping event streams open', async () => {
    const events = await SseClient.open(server.url);
    const slow: Socket = connect(server.port, '127.0.0.1');
    const closed = new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      slow.on('data', (c) => chunks.push(c));
      slow.on('close', () => resolve(Buffer.concat(chunks).toString()));
    });
    slow.write(`GET /stats HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`); // and never the blank line
    const drip = setInterval(() => slow.writable && slow.write('X-Drip: 1\r\n'), 100);
    try {
      for (let i = 0; i < 5; i++) {
        assert.equal((await request(server.url, '/stats')).status, 200);
        await sleep(50);
      }
      const reply = await closed;
      assert.match(reply, /^HTTP\/1\.1 408 /);
      // The stream opened before outlived the request timeout.
      await sleep(300);
      assert.equal(events.closed, false);
      engine.addLog({ message: 'still streaming' });
      await events.waitFor((e) => e.some((x) => x.event === 'log'), 2000, 'a log event');
    } finally {
      clearInterval(drip);
      slow.destroy();
      events.close();
    }
  });

  it('close() ends event streams and keep-alive sockets and resolves', async () => {
    const other = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    const stream = await SseClient.open(other.url);
    await stream.waitFor((e) => e.length >= 2);
    const idle = connect(other.port, '127.0.0.1');
    idle.resume(); // read the response, and see the server's FIN
    const idleClosed = new Promise<void>((resolve) => idle.on('close', () => resolve()));
    idle.write(`GET /stats HTTP/1.1\r\nHost: 127.0.0.1:${other.port}\r\n\r\n`); // keep-alive by default
    await sleep(100);
    const started = Date.now();
    await other.close();
    assert.ok(Date.now() - started < 2000);
    await stream.waitClosed();
    await idleClosed;
    await other.close(); // a second call is harmless
    await assert.rejects(request(other.url, '/stats'));
  });
});
