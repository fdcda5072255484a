// A --notify-url that accepts the connection and never answers must free its hook slot at the
// timeout, also while the engine host collects garbage often. On Node 20 a timeout signal made
// with AbortSignal.timeout() and combined through AbortSignal.any() can be collected before it
// fires, and then the POST stays open for ever; four such POSTs and no hook runs again. Real
// HTTP server on loopback, the real hook runner, and V8's own garbage collector run every 20 ms.
import * as assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { EngineEvent } from '../../src/core/kernel/monitoredEngine';
import { MAX_CONCURRENT_HOOKS, startHooks, type HookedEngine } from '../../src/host/hooks';
import type { ItemDetail, LogEntry } from '../../src/shared/api';
import { waitFor } from './support/workspace';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('Hooks: a notify-url that never answers', function () {
  this.timeout(90_000);
  let server: Server;
  const held: ServerResponse[] = [];

  before(async () => {
    // Reads each request and never answers it.
    server = createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('gives up at its timeout with the collector running, so its slots are freed for later hooks', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alert`;
    const listeners = new Set<(e: EngineEvent) => void>();
    const failures: { message: string; details: Record<string, unknown> }[] = [];
    const engine: HookedEngine = {
      version: 'test',
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      itemDetail: (itemId) => ({ id: itemId }) as unknown as ItemDetail,
      health: () => ({ status: 'healthy', checks: { database: 'ok', engine: 'running' } }) as never,
      logHookFailure: (message, _itemId, details) => failures.push({ message, details }),
    };
    const hooks = startHooks(engine, 'http://127.0.0.1:1', process.cwd(), { notifyUrls: [url], timeoutMs: 10_000 });
    const collector = setInterval(gc, 20);
    try {
      // As many failing items as there are hook slots: every slot holds a POST that is never answered.
      for (let i = 0; i < MAX_CONCURRENT_HOOKS; i++) {
        const entry = { id: i + 1, itemId: `never-${i}`, action: 'item_failed', level: 'error', message: 'failed for good', timestamp: new Date().toISOString(), details: null } as unknown as LogEntry;
        for (const l of listeners) l({ type: 'log', entry });
      }
      await waitFor('every slot to give up and say why', () => failures.length === MAX_CONCURRENT_HOOKS, 60_000);
      for (const f of failures) {
        assert.match(f.message, /failed 3 times \(item_failed event\): no answer within 5000 ms$/);
        assert.equal(f.details.attempts, 3);
      }
      assert.equal(held.length, 3 * MAX_CONCURRENT_HOOKS, 'three POSTs per event reached the server');
      await waitFor('the server to see every POST closed', () => held.every((res) => res.destroyed || res.socket === null || res.socket.destroyed), 10_000);
    } finally {
      clearInterval(collector);
      await hooks.stop();
    }
  });
});
