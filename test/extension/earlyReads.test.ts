// The views' first reads go out together with the event stream's request (EngineClient's early
// reads), not one round trip after the stream connected, and they never leave a view showing
// less than the engine holds: an answer read before the stream started is read again once it runs,
// and after a change on the stream a view reads afresh. Against a loopback server of the test's
// own that holds the stream back and changes its items meanwhile, with the extension's real client
// and model.
import * as assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EngineClient } from '../../src/extension/engineClient';
import { EngineModel } from '../../src/extension/engineModel';
import { waitFor } from './helpers';

interface FakeEngine {
  url: string;
  /** Every request's path, in arrival order, with whether the stream had answered by then. */
  requests: { path: string; streamOpen: boolean }[];
  /** What every /items page reports as its total: the test changes it to stand for a change. */
  version: number;
  /** Answers the held /events request (its opening stats and health). */
  openStream(): void;
  /** Sends an event on the open stream. */
  send(event: string, data: unknown): void;
  close(): Promise<void>;
}

async function fakeEngine(): Promise<FakeEngine> {
  let stream: http.ServerResponse | undefined;
  let release: (() => void) | undefined;
  const engine = {
    requests: [] as FakeEngine['requests'],
    version: 1,
  } as FakeEngine;
  const server = http.createServer((req, res) => {
    const p = req.url ?? '';
    engine.requests.push({ path: p, streamOpen: stream !== undefined });
    const json = (body: unknown) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (p.startsWith('/events')) {
      release = () => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
        stream = res;
        engine.send('stats', { total: engine.version });
        engine.send('health', { status: 'healthy', checks: { engine: 'running' } });
      };
      return;
    }
    if (p.startsWith('/items')) return json({ items: [], total: engine.version });
    if (p.startsWith('/schedules')) return json([]);
    if (p.startsWith('/logs')) return json([]);
    if (p.startsWith('/stats')) return json({ overview: { total: engine.version } });
    if (p.startsWith('/health')) return json({ status: 'healthy', checks: { engine: 'running' } });
    return json({});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  engine.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  engine.openStream = () => {
    assert.ok(release, 'the client has not asked for /events yet');
    release();
  };
  engine.send = (event, data) => stream?.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  engine.close = () => {
    stream?.end();
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  };
  return engine;
}

describe('Early reads', () => {
  let engine: FakeEngine;
  let client: EngineClient;
  let model: EngineModel;

  beforeEach(async () => {
    engine = await fakeEngine();
    client = new EngineClient();
    model = new EngineModel(client);
    // As the Container wires them.
    client.setFirstReads(() => model.firstReads());
    client.onDidServeEarlyRead(() => model.refresh());
  });

  /** Sends an event and resolves once the client has handed it to the model (whose listener came first). */
  function sendAndReceive(event: string, data: unknown): Promise<void> {
    return new Promise((resolve) => {
      const sub = client.onDidReceiveEvent((e) => {
        if (e.name !== event) return;
        sub.dispose();
        resolve();
      });
      engine.send(event, data);
    });
  }

  afterEach(async () => {
    model.dispose();
    client.dispose();
    await engine.close();
  });

  it('sends the views\' first reads with the stream\'s request, and reads again what changed before the stream started', async () => {
    model.setWatched('items', true);
    client.setEndpoint(engine.url, undefined);
    const firstReads = model.firstReads();
    // Every first read arrives while the stream is still held back: none waits for it.
    await waitFor('the first reads, before the stream answered', () => firstReads.every((p) => engine.requests.some((r) => r.path === p && !r.streamOpen)));
    // A change between those reads and the stream's start: the view must end up showing it.
    engine.version = 2;
    engine.openStream();
    await waitFor('the items the early reads answered', () => model.items !== undefined);
    await waitFor('the items as they are since the change', () => model.items?.byGroup.waiting.total === 2, 10_000);
    const itemsPath = firstReads.find((p) => p.startsWith('/items'))!;
    const reads = engine.requests.filter((r) => r.path === itemsPath);
    assert.equal(reads[0].streamOpen, false, 'the first items read went out with the stream');
    assert.ok(reads.some((r) => r.streamOpen), 'the items were read again once the stream ran');
  });

  it('lets a view that shows up after a change on the stream read afresh', async () => {
    client.setEndpoint(engine.url, undefined);
    const itemsPath = model.firstReads().find((p) => p.startsWith('/items'))!;
    await waitFor('the early items read', () => engine.requests.some((r) => r.path === itemsPath));
    engine.openStream();
    await waitFor('the stream', () => client.connected);
    // Read on connecting although no view shows them.
    await waitFor('the items read on connecting', () => model.items?.byGroup.waiting.total === 1);
    engine.version = 3;
    await sendAndReceive('log', { id: 7, action: 'launch_succeeded', itemId: 'a', level: 'info', message: 'x', timestamp: new Date().toISOString() });
    const before = engine.requests.filter((r) => r.path === itemsPath).length;
    // The Items view becomes visible now: it must not show what was read before the change (version 1).
    model.setWatched('items', true);
    const shown = () => model.items;
    assert.equal(shown(), undefined, 'the items read before the change are not shown');
    await waitFor('the items', () => shown() !== undefined);
    assert.equal(shown()?.byGroup.waiting.total, 3);
    assert.ok(engine.requests.filter((r) => r.path === itemsPath).length > before, 'the view read its items afresh');
  });

  it('has the items ready for a view that shows up when nothing changed since connecting, and reads nothing for hidden views on changes', async () => {
    client.setEndpoint(engine.url, undefined);
    await waitFor('the stream\'s request', () => engine.requests.some((r) => r.path.startsWith('/events')));
    engine.openStream();
    await waitFor('the stream', () => client.connected);
    // After a reload VS Code tells which views are visible only once it has drawn them: the items
    // are read on connecting anyway, so the view has its rows the moment it asks.
    await waitFor('the items read on connecting', () => model.items !== undefined && model.loaded);
    const itemsPath = model.firstReads().find((p) => p.startsWith('/items'))!;
    model.setWatched('items', true);
    assert.equal(model.items?.byGroup.waiting.total, 1, 'shown at once, from the read made on connecting');
    // Hidden again: a change is not read until the view shows up again, then read afresh.
    model.setWatched('items', false);
    const before = engine.requests.filter((r) => r.path === itemsPath).length;
    engine.version = 4;
    await sendAndReceive('stats', { total: 4, running: 1 });
    await sendAndReceive('stats', { total: 4, running: 1 });
    assert.equal(engine.requests.filter((r) => r.path === itemsPath).length, before, 'no read for a hidden view');
    model.setWatched('items', true);
    await waitFor('the items as they are now', () => model.items?.byGroup.waiting.total === 4);
  });
  it('reads nothing for a view that was shown when the engine connected and is hidden now', async () => {
    // Shown from the start: its read on connecting serves the view and the connect's refresh alike.
    model.setWatched('items', true);
    model.setWatched('schedules', true);
    client.setEndpoint(engine.url, undefined);
    await waitFor('the stream\'s request', () => engine.requests.some((r) => r.path.startsWith('/events')));
    engine.openStream();
    await waitFor('the stream', () => client.connected);
    // Every group read since the stream runs is in: the Items view's reads are over.
    const groupPaths = model.firstReads().filter((p) => p.startsWith('/items'));
    const itemsPath = groupPaths[0];
    await waitFor('the items read since the stream runs', () => groupPaths.every((p) => engine.requests.some((r) => r.path === p && r.streamOpen)) && model.loaded && model.items !== undefined);
    const count = (p: (path: string) => boolean) => engine.requests.filter((r) => p(r.path)).length;
    model.setWatched('items', false);
    const itemReads = count((p) => p === itemsPath);
    const scheduleReads = count((p) => p.startsWith('/schedules'));
    engine.version = 5;
    // A stats event asks for the items first and the schedules after (a longer interval): once the
    // schedules are read again, the items' turn has come and gone.
    await sendAndReceive('stats', { total: 5, running: 1 });
    await waitFor('the schedules read again', () => count((p) => p.startsWith('/schedules')) > scheduleReads, 10_000);
    assert.equal(count((p) => p === itemsPath), itemReads, 'no read for the hidden Items view');
    // Shown again: what is held predates the change, so it is not shown; the view reads afresh.
    model.setWatched('items', true);
    assert.equal(model.items, undefined, 'the items held from before the change are not shown');
    await waitFor('the items as they are now', () => model.items?.byGroup.waiting.total === 5);
  });
});
