// Services in the real engine: real processes that listen on real loopback ports, answer HTTP,
// print lines, crash in a loop or never become ready; a real database on disk; what is left of
// their processes read from /proc.
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { parseItem } from '../../src/core/intake/items';
import type { LogEntry, StatusResponse } from '../../src/shared/api';
import { startHttpServer } from '../../src/server';
import { serve, type ServeProcess } from './support/cli';
import { type PostgresServer, startPostgresOrSkip } from './support/postgres';
import { OpenApiChecker, request } from './support/http';
import { allLogs, assertInvariants, nodeItem, processAlive, TempWorkspace, waitFor } from './support/workspace';

/** A port nothing listens on now (the kernel's choice, released at once). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Node code for a service that records its pid (and a child's, in its process group) in `pids`,
 * then after `delayMs` runs `then`; on SIGTERM it appends its id and the time to `stops` and exits.
 */
function serviceCode(o: { id: string; pids: string; stops?: string; delayMs?: number; then?: string; child?: boolean }): string {
  const child = o.child ? `const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); fs.appendFileSync(${JSON.stringify(o.pids)}, c.pid + '\\n');` : '';
  const stop = o.stops ? `process.on('SIGTERM', () => { fs.appendFileSync(${JSON.stringify(o.stops)}, ${JSON.stringify(o.id)} + ' ' + Date.now() + '\\n'); process.exit(0); });` : '';
  return `const fs = require('fs'); fs.appendFileSync(${JSON.stringify(o.pids)}, process.pid + '\\n'); ${child} ${stop} setInterval(() => {}, 1000); setTimeout(() => { ${o.then ?? ''} }, ${o.delayMs ?? 0});`;
}

const tcpListen = (port: number) => `require('net').createServer((s) => s.end()).listen(${port}, '127.0.0.1');`;
const httpListen = (port: number) => `require('http').createServer((q, r) => { r.end(q.url === '/health' ? 'ok' : 'no'); }).listen(${port}, '127.0.0.1');`;

function pidsIn(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];
}

function entries(engine: Engine, action: string, itemId?: string): LogEntry[] {
  return allLogs(engine).filter((e) => e.action === action && (itemId === undefined || e.itemId === itemId));
}

const at = (e: LogEntry | undefined): number => Date.parse(e!.timestamp);

describe('services and readiness', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  let engine: Engine | undefined;
  let pids: string;

  beforeEach(() => {
    ws = new TempWorkspace('engine-services-');
    pids = path.join(ws.root, 'pids.txt');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    // Whatever a failed test left running goes with it.
    for (const pid of pidsIn(pids)) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    ws.dispose();
  });

  it('starts a chain TCP service → HTTP service → item in order: each waits until the one before is ready, not until it exits', async () => {
    const [dbPort, apiPort] = [await freePort(), await freePort()];
    const ran = path.join(ws.root, 'ran.txt');
    ws.enqueue('stack.json', [
      nodeItem('tests', `require('fs').writeFileSync(${JSON.stringify(ran)}, String(Date.now()))`, { dependsOn: ['api'] }),
      nodeItem('api', serviceCode({ id: 'api', pids, delayMs: 300, then: httpListen(apiPort) }), { service: true, ready: { http: `http://127.0.0.1:${apiPort}/health` }, dependsOn: ['db'] }),
      nodeItem('db', serviceCode({ id: 'db', pids, delayMs: 800, then: tcpListen(dbPort) }), { service: true, ready: { port: dbPort } }),
    ]);
    engine = await Engine.create(ws.options({ concurrency: 2 }));
    await engine.start();
    await waitFor('db to be starting', () => engine!.itemDetail('db')!.state === 'starting');
    assert.equal(engine.itemDetail('api')!.state, 'blocked', 'the API waits for the database to be ready, not only started');
    await waitFor('the test run to finish', () => engine!.itemDetail('tests')!.outcome === 'launched');
    const [dbReady, apiStart, apiReady, testsStart] = [
      entries(engine, 'service_ready', 'db')[0],
      entries(engine, 'launch_started', 'api')[0],
      entries(engine, 'service_ready', 'api')[0],
      entries(engine, 'launch_started', 'tests')[0],
    ];
    assert.ok(at(entries(engine, 'launch_started', 'db')[0]) + 800 <= at(dbReady), 'db is ready only once it listens');
    assert.ok(at(dbReady) <= at(apiStart), 'the API starts after the database is ready');
    assert.ok(at(apiStart) + 300 <= at(apiReady) && at(apiReady) <= at(testsStart), 'the tests start after the API is ready');
    assert.ok(Number(readFileSync(ran, 'utf8')) >= at(apiReady));
    assert.equal(typeof dbReady.details!.readyAfterMs, 'number');
    assert.ok((dbReady.details!.readyAfterMs as number) >= 800);
    // Both services run on, ready; they count as running.
    assert.deepEqual(['db', 'api', 'tests'].map((id) => engine!.itemDetail(id)!.state), ['ready', 'ready', 'launched']);
    assert.equal(engine.stats().running, 2);
    assertInvariants(engine);
    const db = engine.itemDetail('db')!;
    // Taken when the probe passed, in the step that writes service_ready: never after the entry,
    // never before the service could listen. (How far apart the two clocks read depends on how
    // busy the machine is, not on the engine.)
    const readyAt = Date.parse(db.attempts[0].readyAt!);
    assert.ok(at(entries(engine, 'launch_started', 'db')[0]) + 800 <= readyAt && readyAt <= at(dbReady), 'readyAt is when the probe passed, as service_ready says');
    assert.deepEqual([db.item.service, db.item.ready, db.item.readyTimeoutMs, db.item.restart, db.item.timeoutMs], [true, { port: dbPort }, 60_000, 'on-failure', 0]);
    assert.equal(engine.itemDetail('tests')!.attempts[0].readyAt, undefined, 'only a service has readyAt');
    const services = engine.status().services!;
    assert.deepEqual(
      services.map((s) => [s.id, s.state, s.restarts, s.readyAt !== null, s.pid === pidsIn(pids)[s.id === 'db' ? 0 : 1]]),
      [['api', 'ready', 0, true, true], ['db', 'ready', 0, true, true]],
    );
    // Over HTTP, as the OpenAPI document describes it.
    const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
    try {
      const api = new OpenApiChecker((await request(server.url, '/openapi.json')).json as Record<string, any>);
      const ready = await request(server.url, '/items?state=ready');
      api.assertBody('/items', 200, ready.json);
      assert.deepEqual((ready.json as { items: { id: string; service: { restarts: number } }[] }).items.map((i) => [i.id, i.service.restarts]), [['api', 0], ['db', 0]]);
      assert.equal(((await request(server.url, '/items?state=starting')).json as { total: number }).total, 0);
      const status = await request(server.url, '/status');
      api.assertBody('/status', 200, status.json);
      const detail = await request(server.url, '/items/db');
      api.assertBody('/items/{id}', 200, detail.json);
      const metrics = await request(server.url, '/metrics');
      assert.match(metrics.text, /engine_monitor_services\{state="ready"\} 2/);
      assert.match(metrics.text, /engine_monitor_services\{state="starting"\} 0/);
    } finally {
      await server.close();
    }
  });

  it('probes a logPattern and a command, and a service without a probe is ready after 1 s', async () => {
    const port = await freePort();
    ws.enqueue('probes.json', [
      nodeItem('log', serviceCode({ id: 'log', pids, delayMs: 300, then: "console.log('server listening on :9'); " }), { service: true, ready: { logPattern: 'listening on :\\d+$' } }),
      nodeItem('cmd', serviceCode({ id: 'cmd', pids, delayMs: 200, then: tcpListen(port) }), {
        service: true,
        ready: { command: `${JSON.stringify(process.execPath)} -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))"` },
      }),
      nodeItem('plain', serviceCode({ id: 'plain', pids }), { service: true }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('all three ready', () => ['log', 'cmd', 'plain'].every((id) => engine!.itemDetail(id)!.state === 'ready'));
    const ready = (id: string) => entries(engine!, 'service_ready', id)[0].details!;
    assert.match(String(ready('log').probe), /^logPattern/);
    assert.ok((ready('log').readyAfterMs as number) >= 300);
    assert.match(String(ready('cmd').probe), /^command/);
    assert.ok((ready('plain').readyAfterMs as number) >= 1000);
  });

  it('stops a catastrophic logPattern at the matcher thread\'s budget: the engine runs on and the attempt fails saying why', async () => {
    ws.enqueue('regexp.json', [
      nodeItem('slow', serviceCode({ id: 'slow', pids, then: "console.log('a'.repeat(40) + '!');" }), { service: true, ready: { logPattern: '^(a+)+$' }, maxAttempts: 1 }),
    ]);
    engine = await Engine.create(ws.options({ matcherBudgetMs: 300 }));
    await engine.start();
    // This test's own waits run on the engine's event loop: they would stall with it.
    await waitFor('the service to fail', () => engine!.itemDetail('slow')!.outcome === 'failed');
    assert.match(engine.itemDetail('slow')!.error!, /^its ready probe \(logPattern \/\^\(a\+\)\+\$\/\) failed: it ran for more than 0\.3 s/);
    for (const pid of pidsIn(pids)) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
  });

  it('checks a service\'s fields: probes, bounds, and that they belong to services', () => {
    const ctx = { workspaceFolder: ws.folder, relPath: '.engine/queue/x.json', index: 0, defaults: { timeoutMs: 600_000, maxAttempts: 3 } };
    const reason = (entry: Record<string, unknown>) => {
      const r = parseItem({ command: 'x', ...entry }, ctx);
      return r.ok ? 'ok' : `${r.field}: ${r.reason}`;
    };
    assert.equal(reason({ ready: { port: 5432 } }), 'ready: "ready", "readyTimeoutMs" and "restart" apply to services only; add "service": true or remove them');
    assert.equal(reason({ service: false, restart: 'always' }), 'restart: "ready", "readyTimeoutMs" and "restart" apply to services only; add "service": true or remove them');
    assert.match(reason({ service: true, ready: { port: 5432, http: 'http://x' } }), /^ready: "ready" must be exactly one of/);
    assert.match(reason({ service: true, ready: { port: 70000 } }), /^ready: "ready" must be exactly one of/);
    assert.match(reason({ service: true, ready: { logPattern: '(' } }), /^ready: "ready.logPattern" is not a valid regular expression/);
    assert.match(reason({ service: true, ready: { http: 'file:///etc/passwd' } }), /^ready: /);
    assert.equal(reason({ service: true, readyTimeoutMs: 99 }), 'readyTimeoutMs: readyTimeoutMs must be >= 100');
    assert.match(reason({ service: true, restart: 'sometimes' }), /^restart: /);
    const svc = parseItem({ command: 'x', service: true }, ctx);
    assert.ok(svc.ok);
    assert.deepEqual([svc.item.service, svc.item.timeoutMs], [{ readyTimeoutMs: 60_000, restart: 'on-failure' }, 0], 'no run-time limit unless set');
    const plain = parseItem({ command: 'x' }, ctx);
    assert.ok(plain.ok && plain.item.service === undefined && plain.item.timeoutMs === 600_000);
  });

  it('fails a service that is not ready in time with "not ready within <n> ms" and ends its whole process group', async () => {
    const port = await freePort();
    // A shell and a background child, each writing its pid at once: a shell starts in milliseconds
    // on a loaded machine, where Node can take most of the 3 s a service has to become ready just
    // to boot (and was killed before it had started its child).
    const script = 'echo $$ >> "$1"; sleep 600 & echo $! >> "$1"; wait';
    ws.enqueue('never.json', [{ id: 'never', command: '/bin/sh', args: ['-c', script, 'sh', pids], service: true, ready: { port }, readyTimeoutMs: 3000, maxAttempts: 1 }]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('the service to fail', () => engine!.itemDetail('never')!.outcome === 'failed');
    assert.equal(pidsIn(pids).length, 2, 'the service and its child had started');
    const detail = engine.itemDetail('never')!;
    assert.equal(detail.attempts[0].error, 'not ready within 3000 ms');
    assert.equal(detail.attempts[0].readyAt, null);
    assert.equal(detail.error, 'not ready within 3000 ms');
    for (const pid of pidsIn(pids)) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
    assert.equal(entries(engine, 'service_exited', 'never').length, 1);
    assertInvariants(engine);
  });

  it('restarts a service that crashes in a loop with a growing backoff, then fails it after maxAttempts consecutive failures', async () => {
    // A probe nothing answers: never ready, however slowly a loaded machine starts Node.
    const port = await freePort();
    ws.enqueue('crash.json', [
      nodeItem('crash', 'setTimeout(() => process.exit(4), 50)', { service: true, ready: { port }, maxAttempts: 4 }),
      nodeItem('needs-it', 'process.exit(0)', { dependsOn: ['crash'] }),
    ]);
    engine = await Engine.create(ws.options({ backoffBaseMs: 100, backoffMaxMs: 10_000 }));
    await engine.start();
    await waitFor('the service to fail for good', () => engine!.itemDetail('crash')!.outcome === 'failed');
    const restarts = entries(engine, 'service_restarted', 'crash');
    assert.deepEqual(restarts.map((e) => e.details!.failures), [1, 2, 3]);
    const delays = restarts.map((e) => e.details!.delayMs as number);
    // 100 × 2^(n−1) ± 20 %.
    delays.forEach((d, i) => assert.ok(d >= 80 * 2 ** i && d <= 120 * 2 ** i, `restart ${i + 1} after ${d} ms`));
    const attempts = engine.itemDetail('crash')!.attempts;
    assert.equal(attempts.length, 4);
    assert.equal(entries(engine, 'service_exited', 'crash').length, 4);
    for (let i = 1; i < 4; i++) {
      const waited = Date.parse(attempts[i].startedAt) - Date.parse(attempts[i - 1].finishedAt!);
      assert.ok(waited >= delays[i - 1], `restart ${i} waited its backoff (${waited} ms, ${delays[i - 1]} due)`);
    }
    assert.equal(engine.itemDetail('crash')!.error, 'exited with code 4');
    assert.equal(entries(engine, 'item_failed', 'crash')[0].details!.failures, 4);
    const dependent = engine.itemDetail('needs-it')!;
    assert.deepEqual([dependent.outcome, dependent.error, dependent.attempts.length], ['failed', 'dependency failed: crash', 0], 'a service that fails for good fails what depends on it');
    assertInvariants(engine);
  });

  it('does not restart a service that exits 0 under on-failure (launched), and always restarts under "always"', async () => {
    ws.enqueue('exit.json', [
      nodeItem('once', 'setTimeout(() => process.exit(0), 1200)', { service: true }),
      nodeItem('again', 'setTimeout(() => process.exit(0), 50)', { service: true, restart: 'always', maxAttempts: 1 }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('once to be launched', () => engine!.itemDetail('once')!.outcome === 'launched');
    await waitFor('again to be started three times', () => engine!.itemDetail('again')!.attempts.length >= 3);
    assert.equal(engine.itemDetail('again')!.outcome, 'pending', 'exiting 0 is no failure: maxAttempts does not end it');
    assert.equal(entries(engine, 'service_ready', 'once').length, 1, 'ready after 1 s without a probe, then it exited');
  });

  it('Cancel stops a ready service for good (SIGTERM to its group), and its dependents fail; Retry starts it again', async () => {
    const port = await freePort();
    ws.enqueue('cancel.json', [
      nodeItem('svc', serviceCode({ id: 'svc', pids, child: true, then: tcpListen(port) }), { service: true, ready: { port } }),
      nodeItem('later', 'process.exit(0)', { dependsOn: ['svc', 'missing'] }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('the service to be ready', () => engine!.itemDetail('svc')!.state === 'ready');
    const started = pidsIn(pids);
    engine.cancelItem('svc');
    for (const pid of started) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
    const polls = engine.status().engine.polls;
    await waitFor('three more polls', () => engine!.status().engine.polls >= polls + 3);
    const svc = engine.itemDetail('svc')!;
    assert.deepEqual([svc.outcome, svc.error, svc.attempts.length], ['failed', 'cancelled', 1], 'it stays stopped');
    assert.equal(engine.itemDetail('later')!.error, 'dependency failed: svc');
    assert.equal(engine.status().engine.running, 0);
    engine.retryItem('svc');
    await waitFor('the service to be ready again', () => engine!.itemDetail('svc')!.state === 'ready');
    assert.equal(engine.itemDetail('svc')!.attempts.length, 2);
    assertInvariants(engine);
  });

  it('Restart Service ends a ready service and starts it again at once; a dependent that has not started waits for it again', async () => {
    const port = await freePort();
    ws.enqueue('restart.json', [
      nodeItem('svc', serviceCode({ id: 'svc', pids, delayMs: 500, then: tcpListen(port) }), { service: true, ready: { port } }),
      // Not due before 2099: scheduled once the service is ready, blocked while it is not.
      nodeItem('after', 'process.exit(0)', { dependsOn: ['svc'], runAt: '2099-01-01T00:00:00Z' }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('the service to be ready', () => engine!.itemDetail('svc')!.state === 'ready');
    assert.equal(engine.itemDetail('after')!.state, 'scheduled');
    const first = pidsIn(pids)[0];
    engine.restartItem('svc');
    await waitFor('the dependent to wait for the service again', () => engine!.itemDetail('after')!.state === 'blocked');
    assert.deepEqual(engine.itemDetail('after')!.waitingFor, ['svc']);
    await waitFor('a second attempt to be ready', () => engine!.itemDetail('svc')!.attempts.length === 2 && engine!.itemDetail('svc')!.state === 'ready');
    assert.equal(engine.itemDetail('after')!.state, 'scheduled');
    assert.ok(!processAlive(first));
    const restarted = entries(engine, 'service_restarted', 'svc');
    assert.deepEqual([restarted.length, restarted[0].details!.byUser, restarted[0].details!.delayMs], [1, true, 0]);
    assert.equal(engine.itemDetail('svc')!.attempts[0].error, 'restarted by the user');
    assert.equal(engine.status().services![0].restarts, 1);
    assert.throws(() => engine!.restartItem('nope'), /no item has id/);
  });

  it('stops services in reverse dependency order when the engine shuts down, leaving no process', async () => {
    const [dbPort, apiPort] = [await freePort(), await freePort()];
    const stops = path.join(ws.root, 'stops.txt');
    ws.enqueue('stack.json', [
      nodeItem('db', serviceCode({ id: 'db', pids, stops, child: true, then: tcpListen(dbPort) }), { service: true, ready: { port: dbPort } }),
      nodeItem('api', serviceCode({ id: 'api', pids, stops, child: true, then: tcpListen(apiPort) }), { service: true, ready: { port: apiPort }, dependsOn: ['db'] }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('both ready', () => engine!.itemDetail('api')!.state === 'ready');
    const started = pidsIn(pids);
    assert.equal(started.length, 4);
    await engine.shutdown(1000);
    engine = undefined;
    const order = readFileSync(stops, 'utf8').trim().split('\n').map((l) => l.split(' '));
    assert.deepEqual(order.map((o) => o[0]), ['api', 'db'], 'the API stops before the database it depends on');
    for (const pid of started) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
    // The next start starts them afresh.
    engine = await Engine.create(ws.options());
    assert.deepEqual(['db', 'api'].map((id) => engine!.itemDetail(id)!.state), ['waiting', 'blocked']);
    await engine.start();
    await waitFor('both ready again', () => engine!.itemDetail('api')!.state === 'ready');
    assert.equal(engine.itemDetail('db')!.attempts[0].error, 'stopped with the engine');
  });

  it('runs the README\'s worked example (examples/services) as written, on ports of its own', async () => {
    const [dbPort, apiPort] = [await freePort(), await freePort()];
    cpSync(path.resolve(__dirname, '../../examples/services'), ws.folder, { recursive: true, filter: (src) => !src.includes(`${path.sep}state`) });
    const queueFile = path.join(ws.queue, 'stack.json');
    // The example's ports, and only them, are swapped for free ones: a user's engine may hold them.
    writeFileSync(queueFile, readFileSync(queueFile, 'utf8').replaceAll('54329', String(dbPort)).replaceAll('3099', String(apiPort)));
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('the tests to succeed', () => engine!.itemDetail('tests')!.outcome === 'launched', 30_000);
    const order = allLogs(engine)
      .filter((e) => e.action === 'launch_started' || e.action === 'service_ready')
      .map((e) => `${e.action} ${e.itemId}`);
    assert.deepEqual(order, ['launch_started db', 'service_ready db', 'launch_started api', 'service_ready api', 'launch_started tests']);
    assert.deepEqual(engine.status().services!.map((s) => [s.id, s.state]), [['db', 'ready'], ['api', 'ready']]);
    const pidsOf = engine.status().services!.map((s) => s.pid!);
    await engine.shutdown(1000);
    engine = undefined;
    for (const pid of pidsOf) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
  });

  it('Stop (no more launching) stops services too; Start starts them again', async () => {
    const port = await freePort();
    ws.enqueue('svc.json', [nodeItem('svc', serviceCode({ id: 'svc', pids, then: tcpListen(port) }), { service: true, ready: { port } })]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await waitFor('ready', () => engine!.itemDetail('svc')!.state === 'ready');
    const first = pidsIn(pids)[0];
    engine.stopLaunching();
    await waitFor('the service to be stopped', () => engine!.itemDetail('svc')!.state === 'waiting');
    assert.ok(!processAlive(first));
    engine.startLaunching();
    await waitFor('ready again', () => engine!.itemDetail('svc')!.state === 'ready');
    // A shutdown right after a Stop waits for the services the Stop is ending, and records them.
    const second = pidsIn(pids)[1];
    engine.stopLaunching();
    await engine.shutdown(1000);
    engine = undefined;
    assert.ok(!processAlive(second));
    engine = await Engine.create(ws.options({ initialMode: 'stopped' }));
    const svc = engine.itemDetail('svc')!;
    assert.deepEqual([svc.state, svc.attempts.map((a) => a.error)], ['waiting', ['stopped with the engine', 'stopped with the engine']]);
    assert.equal(entries(engine, 'launch_interrupted').filter((e) => e.message.includes('(interrupted)')).length, 0, 'nothing was left running to be found interrupted');
  });
});

describe('services under `serve` (the built CLI)', function () {
  this.timeout(90_000);
  let ws: TempWorkspace;
  let run: ServeProcess | undefined;
  let pids: string;

  beforeEach(() => {
    ws = new TempWorkspace('engine-services-cli-');
    pids = path.join(ws.root, 'pids.txt');
  });
  afterEach(async () => {
    if (run && run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill('SIGKILL');
      await run.exited;
    }
    run = undefined;
    for (const pid of pidsIn(pids)) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    ws.dispose();
  });

  it('restarts a service over HTTP, and SIGTERM stops every service (dependents first) and leaves no process', async () => {
    const [dbPort, apiPort] = [await freePort(), await freePort()];
    const stops = path.join(ws.root, 'stops.txt');
    ws.enqueue('stack.json', [
      nodeItem('db', serviceCode({ id: 'db', pids, stops, child: true, then: tcpListen(dbPort) }), { service: true, ready: { port: dbPort } }),
      nodeItem('api', serviceCode({ id: 'api', pids, stops, child: true, delayMs: 200, then: httpListen(apiPort) }), { service: true, ready: { http: `http://127.0.0.1:${apiPort}/health` }, dependsOn: ['db'] }),
    ]);
    const token = 'services-token-5e2a';
    run = await serve(['--workspace', ws.folder, '--storage', ws.storage, '--poll-interval', '200'], 20_000, { ENGINE_MONITOR_TOKEN: token });
    const url = run.url;
    const auth = { authorization: `Bearer ${token}` };
    const status = async () => (await request(url, '/status', { headers: auth })).json as StatusResponse;
    await waitFor('both services ready', async () => (await status()).services?.every((s) => s.state === 'ready') && (await status()).services?.length === 2);
    const restarted = await request(url, '/items/api/restart', { method: 'POST', headers: auth });
    assert.equal(restarted.status, 202);
    await waitFor('the API to be ready again', async () => (await status()).services?.find((s) => s.id === 'api')?.restarts === 1 && (await status()).services?.find((s) => s.id === 'api')?.state === 'ready');
    const notService = await request(url, '/items/nope/restart', { method: 'POST', headers: auth });
    assert.equal(notService.status, 404);
    const started = pidsIn(pids);
    assert.equal(started.length, 6, 'db and its child, api and its child, twice');
    run.child.kill('SIGTERM');
    const exit = await run.exited;
    assert.equal(exit.code, 0);
    for (const pid of started) assert.ok(!processAlive(pid), `process ${pid} is gone once serve has exited`);
    const order = readFileSync(stops, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]);
    assert.deepEqual(order.slice(-2), ['api', 'db'], 'the API stops before the database it depends on');
  });
});

describe('services on a PostgreSQL store', function () {
  this.timeout(120_000);
  let pg: PostgresServer | undefined;
  let ws: TempWorkspace;
  let engine: Engine | undefined;
  let pids: string;

  before(async function () {
    pg = await startPostgresOrSkip(this);
  });
  after(() => pg?.stop());
  beforeEach(() => {
    ws = new TempWorkspace('engine-services-pg-');
    pids = path.join(ws.root, 'pids.txt');
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    for (const pid of pidsIn(pids)) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    ws.dispose();
  });

  it('records starting and ready, readyAt and the fleet-wide running count, and lets the dependent start once ready', async () => {
    const port = await freePort();
    const url = pg!.createDatabase('services_1');
    ws.enqueue('stack.json', [
      nodeItem('db', serviceCode({ id: 'db', pids, delayMs: 300, then: tcpListen(port) }), { service: true, ready: { port } }),
      nodeItem('tests', 'process.exit(0)', { dependsOn: ['db'] }),
    ]);
    engine = await Engine.create(ws.options({ storeUrl: url }));
    await engine.start();
    await waitFor('the tests to launch', () => engine!.itemDetail('tests')!.outcome === 'launched');
    assert.equal(engine.itemDetail('db')!.state, 'ready');
    assert.ok(at(entries(engine, 'service_ready', 'db')[0]) <= at(entries(engine, 'launch_started', 'tests')[0]));
    assert.notEqual(engine.itemDetail('db')!.attempts[0].readyAt, null);
    assert.deepEqual(engine.listItems({ filter: { states: ['ready'] }, limit: 10, offset: 0 }).items.map((i) => [i.id, i.service?.restarts]), [['db', 0]]);
    assert.equal(pg!.psql('services_1', 'SELECT sum(running) FROM counters').trim(), '1', 'a ready service counts as running fleet-wide');
    assert.deepEqual(engine.status().services!.map((s) => [s.id, s.state]), [['db', 'ready']]);
    const started = pidsIn(pids);
    await engine.shutdown(1000);
    engine = undefined;
    for (const pid of started) await waitFor(`process ${pid} to be gone`, () => !processAlive(pid));
    assert.equal(pg!.psql('services_1', "SELECT outcome || ' ' || running || ' ' || attempts FROM items WHERE id = 'db'").trim(), 'pending 0 0', 'stopped with the engine: it starts afresh next time');
    assert.equal(pg!.psql('services_1', 'SELECT sum(running) FROM counters').trim(), '0');
  });
});
