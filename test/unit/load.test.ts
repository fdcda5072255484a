import assert from 'node:assert/strict';
import { loadWhileLaunching } from './support/load';
import { TempWorkspace } from './support/workspace';

describe('load: API clients while the engine launches', function () {
  this.timeout(600_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-load-')));
  afterEach(() => ws.dispose());

  it('50 clients on /logs and /events while 2,000 items launch: no error, no dropped stream', async () => {
    const r = await loadWhileLaunching(ws, { items: 2000, logClients: 25, sseClients: 25 });
    console.log(`      ${JSON.stringify(r)}`);
    assert.equal(r.errors, 0, `every request answered 200; the first failures: ${JSON.stringify(r.errorSamples)}`);
    assert.equal(r.sseDropped, 0, 'every /events stream stayed open');
    assert.ok(r.logRequests > 100, `the clients really loaded the server (${r.logRequests} requests)`);
  });
});
