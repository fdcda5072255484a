// The HTTP server's endpoints over real HTTP on an ephemeral loopback port, against the test
// engine (support/testEngine.ts). Every body is validated against the served OpenAPI document.
import * as assert from 'node:assert/strict';
import { startHttpServer, type RunningHttpServer } from '../../src/server';
import { LOG_ACTIONS } from '../../src/shared/api';
import { OpenApiChecker, request, type HttpResult } from './support/http';
import { TestEngine } from './support/testEngine';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertCommonHeaders(res: HttpResult, contentType = 'application/json; charset=utf-8'): void {
  assert.equal(res.headers['content-type'], contentType);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['x-powered-by'], undefined);
  assert.equal(res.headers.etag, undefined);
  for (const name of Object.keys(res.headers)) assert.ok(!name.startsWith('access-control-'), `unexpected CORS header ${name}`);
}

describe('server: endpoints', () => {
  let engine: TestEngine;
  let server: RunningHttpServer;
  let api: OpenApiChecker;

  before(async () => {
    engine = new TestEngine();
    engine.seedLogs(30);
    server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    const doc = await request(server.url, '/openapi.json');
    api = new OpenApiChecker(doc.json as Record<string, any>);
  });
  after(() => server.close());

  it('binds loopback on an ephemeral port and reports its URL', () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(server.port > 0);
    assert.equal(server.url, `http://127.0.0.1:${server.port}`);
    assert.equal(server.requestedPortInUse, false);
  });

  it('serves a valid OpenAPI 3.1 document describing every endpoint', async () => {
    const res = await request(server.url, '/openapi.json');
    assert.equal(res.status, 200);
    assertCommonHeaders(res);
    const doc = res.json as Record<string, any>;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, engine.version);
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    for (const path of ['/stats', '/health', '/status', '/logs', '/items', '/events', '/openapi.json']) {
      assert.ok(doc.paths[path]?.get, `GET ${path} documented`);
      assert.ok(doc.paths[path]?.head, `HEAD ${path} documented`);
    }
    for (const name of ['BadRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'MethodNotAllowed', 'InternalError']) {
      assert.ok(doc.components.responses[name], `${name} documented`);
    }
    assert.ok(doc.components.responses.MethodNotAllowed.headers.Allow);
    assert.ok(doc.components.responses.Unauthorized.headers['WWW-Authenticate']);
    assert.ok(doc.paths['/logs'].get.responses['200'].headers.Link);
    assert.ok(doc.paths['/health'].get.responses['503']);
    const logParams = (doc.paths['/logs'].get.parameters as { name: string }[]).map((p) => p.name).sort();
    assert.deepEqual(logParams, ['action', 'cursor', 'item', 'level', 'limit', 'order', 'q', 'since', 'until']);
    assert.deepEqual(doc.components.schemas.LogEntry.properties.action.enum, [...LOG_ACTIONS]);
  });

  it('GET /stats returns the overview and a timestamp', async () => {
    const before = Date.now();
    const res = await request(server.url, '/stats');
    assert.equal(res.status, 200);
    assertCommonHeaders(res);
    api.assertBody('/stats', 200, res.json);
    const body = res.json as { overview: unknown; timestamp: string };
    assert.deepEqual(body.overview, engine.overview);
    assert.match(body.timestamp, ISO);
    assert.ok(Date.parse(body.timestamp) >= before - 1);
  });

  it('GET /stats accepts a never-polled database (lastPollAt null)', async () => {
    engine.overview = { ...engine.overview, lastPollAt: null };
    try {
      const res = await request(server.url, '/stats');
      api.assertBody('/stats', 200, res.json);
      assert.equal((res.json as any).overview.lastPollAt, null);
    } finally {
      engine.overview = { ...engine.overview, lastPollAt: '2024-05-01T10:00:00.000Z' };
    }
  });

  it('GET /health: 200 for healthy and degraded, 503 for unhealthy, body per schema', async () => {
    const cases = [
      { status: 'healthy', database: 'ok', engineState: 'running', http: 200 },
      { status: 'degraded', database: 'ok', engineState: 'stopped', http: 200 },
      { status: 'degraded', database: 'ok', engineState: 'restricted', http: 200 },
      { status: 'unhealthy', database: 'ok', engineState: 'stalled', http: 503 },
      { status: 'unhealthy', database: 'error', engineState: 'running', http: 503 },
    ] as const;
    for (const c of cases) {
      engine.healthSnapshot = { status: c.status, checks: { database: c.database, engine: c.engineState } };
      const res = await request(server.url, '/health');
      assert.equal(res.status, c.http, c.status);
      assertCommonHeaders(res);
      api.assertBody('/health', c.http, res.json);
      assert.deepEqual({ ...(res.json as any), timestamp: undefined }, {
        status: c.status,
        engine: 'launch-engine',
        version: engine.version,
        timestamp: undefined,
        checks: { database: c.database, engine: c.engineState },
      });
    }
    engine.healthSnapshot = { status: 'healthy', checks: { database: 'ok', engine: 'running' } };
  });

  it('GET /status fills in timestamp and server.url', async () => {
    const res = await request(server.url, '/status');
    assert.equal(res.status, 200);
    assertCommonHeaders(res);
    api.assertBody('/status', 200, res.json);
    const body = res.json as any;
    assert.equal(body.server.url, server.url);
    assert.match(body.timestamp, ISO);
    assert.deepEqual(body.stats, engine.overview);
    assert.equal(body.engine.name, 'launch-engine');
  });

  it('GET /status with lastLaunch null still matches the document', async () => {
    const original = engine.status.bind(engine);
    engine.status = () => ({ ...original(), lastLaunch: null });
    try {
      const res = await request(server.url, '/status');
      api.assertBody('/status', 200, res.json);
      assert.equal((res.json as any).lastLaunch, null);
    } finally {
      engine.status = original;
    }
  });

  it('GET /logs returns entries newest first, each per the LogEntry schema', async () => {
    const res = await request(server.url, '/logs');
    assert.equal(res.status, 200);
    assertCommonHeaders(res);
    api.assertBody('/logs', 200, res.json);
    const entries = res.json as { id: number }[];
    assert.equal(entries.length, 30);
    assert.deepEqual(entries.map((e) => e.id), Array.from({ length: 30 }, (_, i) => 30 - i));
    assert.equal(res.headers.link, undefined);
  });

  it('GET /items pages items with total, limit, offset and a Link to the next page', async () => {
    const first = await request(server.url, '/items?limit=3');
    assert.equal(first.status, 200);
    assertCommonHeaders(first);
    api.assertBody('/items', 200, first.json);
    const body = first.json as any;
    assert.equal(body.total, 7);
    assert.equal(body.limit, 3);
    assert.equal(body.offset, 0);
    assert.deepEqual(body.items.map((i: any) => i.id), ['item-0', 'item-1', 'item-2']);
    const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link));
    assert.ok(link, `Link header: ${first.headers.link}`);
    const next = new URL(link[1]);
    assert.equal(next.pathname + next.search, '/items?limit=3&offset=3');
    const last = await request(server.url, '/items?limit=3&offset=6');
    assert.deepEqual((last.json as any).items.map((i: any) => i.id), ['item-6']);
    assert.equal(last.headers.link, undefined);
    const failed = await request(server.url, '/items?outcome=failed');
    api.assertBody('/items', 200, failed.json);
    assert.deepEqual((failed.json as any).items.map((i: any) => i.outcome), ['failed', 'failed']);
    assert.equal((failed.json as any).total, 2);
  });

  it('GET /items rejects bad parameters with 400', async () => {
    for (const query of ['outcome=done', 'limit=0', 'limit=1001', 'limit=abc', 'offset=-1', 'offset=1.5', 'limit=5&limit=6', 'page=2']) {
      const res = await request(server.url, `/items?${query}`);
      assert.equal(res.status, 400, query);
      api.assertBody('/items', 400, res.json);
    }
  });

  it('endpoints without parameters reject any query parameter with 400', async () => {
    for (const path of ['/stats', '/health', '/status', '/openapi.json']) {
      const res = await request(server.url, `${path}?verbose=1`);
      assert.equal(res.status, 400, path);
      assertCommonHeaders(res);
      api.assertBody(path, 400, res.json);
      assert.match((res.json as any).error.message, /verbose/);
    }
    const empty = await request(server.url, '/stats?');
    assert.equal(empty.status, 200);
  });

  it('HEAD returns the GET status and headers without a body', async () => {
    for (const path of ['/stats', '/health', '/status', '/logs', '/items', '/openapi.json']) {
      const res = await request(server.url, path, { method: 'HEAD' });
      assert.equal(res.status, 200, path);
      assertCommonHeaders(res);
      assert.equal(res.text, '', path);
      assert.ok(Number(res.headers['content-length']) > 0, path);
    }
    engine.healthSnapshot = { status: 'unhealthy', checks: { database: 'error', engine: 'running' } };
    const unhealthy = await request(server.url, '/health', { method: 'HEAD' });
    assert.equal(unhealthy.status, 503);
    engine.healthSnapshot = { status: 'healthy', checks: { database: 'ok', engine: 'running' } };
  });

  it('unknown paths give a JSON 404; paths are exact', async () => {
    for (const path of ['/nope', '/', '/Stats', '/stats/', '/logs/1', '/openapi', '/nope?limit=1']) {
      const res = await request(server.url, path);
      assert.equal(res.status, 404, path);
      assertCommonHeaders(res);
      api.assertSchemaOf('NotFound', res.json);
      assert.equal((res.json as any).error.code, 'not_found');
      // The message names the path asked for, without its query string.
      assert.ok((res.json as any).error.message.startsWith(`No such path ${JSON.stringify(path.split('?')[0])};`), (res.json as any).error.message);
    }
  });

  it('other methods give a JSON 405 with Allow: GET, HEAD, on known and unknown paths', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      for (const path of ['/stats', '/logs', '/nope']) {
        const res = await request(server.url, path, { method });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.allow, 'GET, HEAD');
        assertCommonHeaders(res);
        api.assertSchemaOf('MethodNotAllowed', res.json);
        assert.equal((res.json as any).error.code, 'method_not_allowed');
      }
    }
  });

  it('an engine that throws gives a JSON 500, is logged, and the server keeps serving', async () => {
    const logged: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => logged.push(args);
    try {
      for (const [fail, path] of [['stats', '/stats'], ['health', '/health'], ['status', '/status'], ['queryLogs', '/logs']] as const) {
        engine.failOn = fail;
        const res = await request(server.url, path);
        assert.equal(res.status, 500, path);
        assertCommonHeaders(res);
        api.assertSchemaOf('InternalError', res.json);
        assert.equal((res.json as any).error.code, 'internal_error');
      }
    } finally {
      engine.failOn = undefined;
      console.error = original;
    }
    assert.equal(logged.length, 4);
    assert.equal((await request(server.url, '/stats')).status, 200);
  });
});
